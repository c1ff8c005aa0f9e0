# limit: 300
# Source-level stall sampling of the 56² 64→64 1×1 layer (N = 32): ktune's pick, the im2col pp 128x64 tile and
# cuDNN's kernel, each the first launch of its kind under ktune-conv-bench --only (no tuning), L2 flushed, no clock
# control. Prints duration, DRAM bytes and the top SASS instructions by stall samples; keeps the reports.
set -u
B=${BUILD:-build-gpu}
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SourceCounters --metrics dram__bytes_read.sum,dram__bytes_write.sum"
prof() {  # name, kernel regex (demangled), conv-bench --only text
  timeout 80 ncu --clock-control none --kernel-name-base demangled -k "regex:$2" -c 1 $S --import-source no \
    -o "$OUT/$1" $B/ktune-conv-bench --n 32 --layer 1 --all --only "$3" > "$OUT/$1.log" 2>&1
  echo "== $1 rc=$?"
  ncu -i "$OUT/$1.ncu-rep" --page details --print-units base 2>/dev/null | grep -E "Duration|dram__bytes|DRAM Throughput|Warp Cycles Per Issued" | head -6
  ncu -i "$OUT/$1.ncu-rep" --page source --csv --print-source sass 2>/dev/null > "$OUT/$1-sass.csv"
  python3 - "$OUT/$1-sass.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
if not rows: sys.exit()
h = rows[0]
def col(name):
    for i, c in enumerate(h):
        if c.strip().lower() == name: return i
    return None
src, samp = col("source"), col("warp stall sampling (all samples)")
addr = col("address")
if src is None or samp is None: print("columns:", h[:12]); sys.exit()
data = [(float(r[samp] or 0), r[addr] if addr is not None else "", r[src]) for r in rows[1:] if len(r) > samp]
tot = sum(d[0] for d in data) or 1
for s, a, t in sorted(data, reverse=True)[:25]: print(f"{100*s/tot:5.1f}% {a} {t[:110]}")
PY
}
prof ktune-gemm1x1-256x128 'wgmma_gemm_kernel<ktune::FamilyConfig<ktune::families::Sm90WgmmaF16,' '256x128x64_w128x128_s4_a8'
prof ktune-im2col-pp128x64 'conv_im2col_kernel' 'tma_im2col_pp_128x64x64_w128x64_s7_a8'
prof cudnn 'xmma|cudnn|nvjet' 'nomatch'
