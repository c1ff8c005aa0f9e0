"""Host-side tests of scripts/plot_results.py on small synthetic inputs (no GPU).

  python3 -m unittest discover -s test/scripts        (from the repository root; scripts/test.sh runs it)

The parsing and Markdown tests need only the standard library; the chart tests run when matplotlib
is installed and are reported as skipped otherwise.
"""

import contextlib
import importlib.util
import io
import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import plot_results as pr  # noqa: E402

HAVE_MPL = importlib.util.find_spec("matplotlib") is not None

# Google Benchmark JSON as bench_gemm writes it with --sweep --benchmark_repetitions=3
# --benchmark_report_aggregates_only=true (trimmed): median/mean/stddev aggregates, counters as
# top-level keys, one instance that failed verification.
PREFIX = "gemm/bf16/tn/4096x4096x4096/"


def _agg(what, agg, tf, label=None, **extra):
    e = {"name": f"{PREFIX}{what}/manual_time_{agg}", "run_name": f"{PREFIX}{what}/manual_time",
         "run_type": "aggregate", "repetitions": 3, "threads": 1, "aggregate_name": agg, "aggregate_unit": "time",
         "iterations": 3, "real_time": 200.0, "cpu_time": 20.0, "time_unit": "us", "TF/s": tf, "GB/s": 500.0,
         "batch": 10}
    if label:
        e["label"] = label
    e.update(extra)
    return e


def _gbench_doc():
    ib = "ktune_gemm_sm90_wgmma_bf16_tn_"
    benches = []
    for what, med, mean, label in [
            ("cublasLt", 700.0, 690.0, "cublasLt"),
            ("ktune", 630.0, 620.0, ib + "128x256x64_w64x256_s4_a8"),
            (ib + "128x256x64_w64x256_s4_a8", 630.0, 625.0, None),
            (ib + "256x128x64_w128x128_s4_a8", 650.0, 640.0, None),
            (ib + "128x128x64_w64x128_s3_a8", 500.0, 495.0, None),
            (ib + "128x128x64_w64x128_s6_a8", 560.0, 555.0, None)]:
        benches.append(_agg(what, "mean", mean, label))
        benches.append(_agg(what, "median", med, label))
        benches.append(_agg(what, "stddev", 3.0, label))
    benches.append({"name": f"{PREFIX}{ib}128x128x64_w64x128_s4_a8/manual_time",
                    "run_name": f"{PREFIX}{ib}128x128x64_w64x128_s4_a8/manual_time", "run_type": "iteration",
                    "repetitions": 3, "repetition_index": 0, "threads": 1, "iterations": 0, "real_time": 0.0,
                    "cpu_time": 0.0, "time_unit": "us", "error_occurred": True,
                    "error_message": "wrong result: relative error 1.0e+00 > 1e-02 (0 non-finite outputs)"})
    return {"context": {"date": "2026-12-01T10:00:00+00:00", "host_name": "gpu-host", "num_cpus": 16,
                        "library_build_type": "release", "gpu": "NVIDIA H200", "gpu_slug": "nvidia-h200",
                        "gpu_cc": "90", "cuda_driver": "13.0", "cuda_runtime": "13.0", "cublaslt": "13.1.0",
                        "ktune_commit": "abcdef123456", "timing": "CUDA events around CUDA-graph replays"},
            "benchmarks": benches}


CSV = """problem,precision,layout,m,n,k,epilogue,instance,family,heuristic_pick,ms,tflops,rel_err,tolerance,status,cublas_ms,cublas_tflops,speedup_vs_cublas,iters,repeats,message
bf16 tn 1024x1024x1024,bf16,tn,1024,1024,1024,identity,cublasLt,cublas,0,0.005,400,0.0016,0.01,PASS,0.005,400,1,1000,9,
bf16 tn 1024x1024x1024,bf16,tn,1024,1024,1024,identity,ktune_gemm_sm80_bf16_tn_128x128x32_w32x64_s4_a8,sm80_mma_f16,1,0.02,100,0,0.01,PASS,0.005,400,0.25,800,9,
bf16 tn 1024x1024x1024,bf16,tn,1024,1024,1024,identity,ktune_gemm_sm80_bf16_tn_64x64x64_w32x64_s4_a8,sm80_mma_f16_small,0,0.01,200,0,0.01,PASS,0.005,400,0.5,900,9,
bf16 tn 1024x1024x1024,bf16,tn,1024,1024,1024,identity,ktune_gemm_sm80_bf16_tn_64x64x32_w32x32_s3_a8,sm80_mma_f16_small,0,0.004,500,0.9,0.01,FAIL,0.005,400,1.25,900,9,"wrong, fast"
f32 tn 256x512x128 bias_relu,f32,tn,256,512,128,bias_relu,cublasLt,cublas,0,0.01,3.5,1e-06,1e-05,PASS,0.01,3.5,1,100,9,
f32 tn 256x512x128 bias_relu,f32,tn,256,512,128,bias_relu,ktune_gemm_sm80_simt_f32_tn_128x128x16_w32x64_s3_a4,sm80_simt_f32,1,0.02,1.75,0,1e-05,PASS,0.01,3.5,0.5,50,9,
"""


# Google Benchmark JSON as bench_conv writes it (single runs, no repetitions): both cuDNN references,
# ktune's pick and two swept instances of one layer.
CONV = "conv/f16/n32/56x56_64to64_3x3_s1/"


def _conv_doc():
    ib = "ktune_conv2d_fprop_sm90_wgmma_f16_tma_im2col_"
    benches = []
    for what, tf, label in [("cudnn_fused", 300.0, "cudnnConvolutionBiasActivationForward, f16 bias"),
                            ("cudnn_unfused", 120.0, "cudnnConvolutionForward algo 1 + AddTensor + Activation"),
                            ("ktune", 200.0, ib + "128x64x64_w64x64_s6_a8"),
                            (ib + "128x64x64_w64x64_s6_a8", 200.0, None),
                            (ib + "128x128x64_w64x128_s4_a8", 240.0, None)]:
        e = {"name": f"{CONV}{what}/manual_time", "run_name": f"{CONV}{what}/manual_time", "run_type": "iteration",
             "repetitions": 1, "repetition_index": 0, "threads": 1, "iterations": 100, "real_time": 25.0,
             "cpu_time": 3.0, "time_unit": "us", "TF/s": tf, "GB/s": 1000.0}
        if label:
            e["label"] = label
        benches.append(e)
    return {"context": {"date": "2026-12-01T11:00:00+00:00", "gpu": "NVIDIA H200", "cuda_driver": "13.0",
                        "cuda_runtime": "13.0", "cudnn": "9.14.0", "ktune_commit": "0badc0de",
                        "timing": "CUDA events around CUDA-graph replays"},
            "benchmarks": benches}


CONV_CSV = """layer,instance,route,picked,us,tflops,rel_err_vs_cudnn,cudnn_fused_us,cudnn_unfused_us
56 64->64 1x1 s1,ktune_conv2d_fprop_sm80_f16_optimized_128x64x32_w32x32_s4_a8,sm80_mma,0,20.00,41.1,0.00e+00,8.00,
56 64->64 1x1 s1,conv_gemm1x1+ktune_gemm_sm90_wgmma_f16_tn_128x64x64_w64x64_s6_a8,sm90_gemm1x1,1,25.00,32.9,0.00e+00,8.00,
56 64->64 1x1 s1,ktune_conv2d_fprop_sm80_f16_optimized_64x64x64_w32x32_s4_a8,sm80_mma,0,10.00,82.2,5.00e-01,8.00,
224 3->64 7x7 s2,ktune_conv2d_fprop_sm80_f16_few_channels_c3_256x64x32_w64x32_s3_a1,sm80_mma,1,-1.00,0.0,-1.00e+00,60.00,
"""


# ktune-profile CSV of the current format (column op, generic reference columns) with GEMM and conv2d rows,
# as the no-argument run writes it: one GEMM problem, one conv problem with both cuDNN rows, two
# instances (one failed) and the tuned pick.
MIXED_CSV = """op,problem,precision,layout,m,n,k,epilogue,instance,family,heuristic_pick,ms,tflops,rel_err,tolerance,status,reference,ref_ms,ref_tflops,speedup_vs_ref,ref2_ms,speedup_vs_ref2,iters,repeats,message
gemm,bf16 tn 1024x1024x1024,bf16,tn,1024,1024,1024,identity,cublasLt,cublas,0,0.005,400,0.0016,0.01,PASS,cublasLt,0.005,400,1,,,1000,9,
gemm,bf16 tn 1024x1024x1024,bf16,tn,1024,1024,1024,identity,ktune_gemm_sm80_bf16_tn_64x64x64_w32x64_s4_a8,sm80_mma_f16_small,1,0.01,200,0,0.01,PASS,cublasLt,0.005,400,0.5,,,900,9,
conv2d,"conv f16 32x56x56x256,64x1x1 bias_relu",f16,nhwc,100352,64,256,bias_relu,cuDNN fused,cudnn,0,0.02,165,0.0003,0.01,PASS,cuDNN fused,0.02,165,1,0.05,2.5,400,9,
conv2d,"conv f16 32x56x56x256,64x1x1 bias_relu",f16,nhwc,100352,64,256,bias_relu,cuDNN unfused,cudnn,0,0.05,66,,0.01,unchecked,cuDNN fused,0.02,165,0.4,0.05,1,300,9,
conv2d,"conv f16 32x56x56x256,64x1x1 bias_relu",f16,nhwc,100352,64,256,bias_relu,conv_gemm1x1+ktune_gemm_sm90_wgmma_f16_tn_128x64x64_w64x64_s6_a8,conv_gemm1x1,1,0.022,150,0.0002,0.01,PASS,cuDNN fused,0.02,165,0.909,0.05,2.27,500,9,
conv2d,"conv f16 32x56x56x256,64x1x1 bias_relu",f16,nhwc,100352,64,256,bias_relu,ktune_conv2d_fprop_sm80_f16_optimized_128x64x32_w32x32_s4_a8,sm80_conv_f16,0,0.01,330,0.9,0.01,FAIL,cuDNN fused,0.02,165,2,0.05,5,500,9,"relative error 9.000e-01 > tolerance 1e-02"
conv2d,"conv f16 32x56x56x256,64x1x1 bias_relu",f16,nhwc,100352,64,256,bias_relu,conv_gemm1x1+ktune_gemm_sm90_wgmma_f16_tn_128x64x64_w64x64_s6_a8@rg16,tuned,0,0.021,157,0.0002,0.01,PASS,cuDNN fused,0.02,165,0.952,0.05,2.38,500,9,
conv2d,"conv f16 32x224x224x4,64x7x7,stride=2 bias_relu",f16,nhwc,401408,64,196,bias_relu,cuDNN fused,cudnn,0,0.06,168,0.0003,0.01,PASS,cuDNN fused,0.06,168,1,0.2,3.3,100,9,
conv2d,"conv f16 32x14x14x1024,256x1x1 identity",f16,nhwc,6272,256,1024,identity,cuDNN unfused,cudnn,0,0.008,412,0.0002,0.01,PASS,cuDNN unfused,0.008,412,1,0.008,1,500,9,
"""


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def run_main(args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = pr.main(args)
    return rc, out.getvalue()


class Parsing(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.json = os.path.join(self.dir, "abcdef123456.json")
        with open(self.json, "w") as f:
            json.dump(_gbench_doc(), f)
        self.csv = os.path.join(self.dir, "ktune-profile-1234abc.csv")
        with open(self.csv, "w") as f:
            f.write(CSV)

    def tearDown(self):
        self.tmp.cleanup()

    def test_gbench_json(self):
        run = pr.read_input(self.json)
        self.assertEqual((run.gpu, run.commit, run.date), ("NVIDIA H200", "abcdef123456", "2026-12-01T10:00:00+00:00"))
        self.assertIn("median of 3 repetitions", run.statistic)
        self.assertEqual(len(run.problems), 1)
        p = run.problems[0]
        self.assertEqual(p.label, "bf16 tn 4096³")
        self.assertEqual((p.ref_name, p.ref_tflops), ("cublasLt", 700.0))   # the median, not the mean
        self.assertEqual(p.pick_tflops, 630.0)
        self.assertEqual(len(p.instances), 5)
        self.assertEqual(p.best().name, "ktune_gemm_sm90_wgmma_bf16_tn_256x128x64_w128x128_s4_a8")
        failed = [i for i in p.instances if i.status != "PASS"]
        self.assertEqual(len(failed), 1)
        self.assertIn("wrong result", failed[0].message)
        self.assertTrue(any(i.pick for i in p.instances))
        self.assertEqual(list(pr.heatmap_groups(run)), [("bf16", "tn")])

    def test_profile_csv(self):
        run = pr.read_input(self.csv)
        self.assertEqual(run.commit, "1234abc")                 # from the file name
        self.assertEqual(run.gpu, pr.NOT_RECORDED)              # a CSV does not record it
        a, b = run.problems
        self.assertEqual((a.ref_tflops, a.pick_tflops), (400.0, 100.0))
        self.assertEqual(a.best().tflops, 200.0)                # the faster FAIL row is not the best
        self.assertEqual(b.label, "f32 tn 256×512×128 +bias_relu")
        self.assertEqual(pr.heatmap_groups(run), {})            # one stage count only: no tile × stages grid

    def test_profile_json(self):
        doc = {"tool": "ktune-profile", "device": "NVIDIA H200", "fingerprint": "x", "driver": "13.0",
               "cuda_runtime": "13.0", "cublaslt": "13.1.0", "commit": "feedbee", "context_lost": False,
               "problems": [{"problem": "f16 tn 64x64x64", "precision": "f16", "layout": "tn", "m": 64, "n": 64,
                             "k": 64, "epilogue": "identity", "cublas_api": "cublasLt", "cublas_ms": 0.002,
                             "cublas_tflops": 0.262, "best_instance": "ktune_gemm_sm80_f16_tn_64x64x64_w32x64_s4_a8"}],
               "rows": [{"problem": "f16 tn 64x64x64", "instance": "cublasLt", "family": "cublas", "ms": 0.002},
                        {"problem": "f16 tn 64x64x64", "instance": "ktune_gemm_sm80_f16_tn_64x64x64_w32x64_s4_a8",
                         "family": "sm80_mma_f16_small", "heuristic_pick": True, "ms": 0.004, "tflops": 0.131,
                         "status": "PASS", "repeats": 9}]}
        path = os.path.join(self.dir, "profile.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        run = pr.read_input(path)
        self.assertEqual((run.gpu, run.commit, run.date), ("NVIDIA H200", "feedbee", pr.NOT_RECORDED))
        (p,) = run.problems
        self.assertEqual((p.ref_tflops, p.pick_tflops, p.best().tflops), (0.262, 0.131, 0.131))

    def test_profile_csv_with_conv_rows(self):
        path = os.path.join(self.dir, "ktune-profile-9abcdef.csv")
        with open(path, "w") as f:
            f.write(MIXED_CSV)
        gemm, conv = pr.read_runs(path)
        self.assertEqual((gemm.op, gemm.stem), ("gemm", "ktune-profile-9abcdef"))
        (g,) = gemm.problems
        self.assertEqual((g.ref_tflops, g.pick_tflops, g.best().tflops), (400.0, 200.0, 200.0))
        self.assertEqual((conv.op, conv.stem, conv.commit), ("conv", "ktune-profile-9abcdef-conv", "9abcdef"))
        a, b, c = conv.problems
        self.assertEqual((c.label, c.ref_name, c.ref_tflops, c.ref2_tflops),   # no fused call: unfused is the reference
                         ("f16 N32 14² 1024→256 1×1", "cuDNN unfused", 412.0, None))
        self.assertEqual(a.label, "f16 N32 56² 256→64 1×1 +bias_relu")
        self.assertEqual(b.label, "f16 N32 224² 4→64 7×7 stride=2 +bias_relu")
        self.assertEqual((a.ref_name, a.ref_tflops, a.ref2_name, a.ref2_tflops), ("cuDNN fused", 165.0, "cuDNN unfused", 66.0))
        self.assertEqual(a.pick_tflops, 157.0)                  # the tuned pick, not an instance
        self.assertEqual(len(a.instances), 2)
        self.assertEqual(a.best().tflops, 150.0)                # the faster FAIL row is not the best
        self.assertEqual(b.instances, [])
        self.assertEqual(pr.read_input(path).op, "gemm")        # the first run
        rc, printed = run_main(["--no-png", path])
        self.assertEqual(rc, 0)
        md = read(os.path.join(self.dir, "ktune-profile-9abcdef-conv-table.md"))
        self.assertIn("| f16 N32 56² 256→64 1×1 +bias_relu | 165.0 | 66.0 | 157.0 | 0.95× | 2.38× | 150.0 | 0.91× |", md)
        self.assertIn("ktune::conv2d", md)
        md = read(os.path.join(self.dir, "ktune-profile-9abcdef-table.md"))
        self.assertNotIn("conv", md.split("Regenerate")[0])    # the GEMM table has no conv rows

    def test_profile_json_with_conv_problems(self):
        name = "conv f16 32x28x28x128,128x3x3 bias_relu"
        doc = {"tool": "ktune-profile", "device": "NVIDIA H200", "driver": "13.0", "cuda_runtime": "13.0",
               "cublaslt": "13.1.0", "cudnn": "9.14.0", "commit": "c0ffee1", "context_lost": False,
               "problems": [{"op": "conv2d", "problem": name, "precision": "f16", "layout": "nhwc", "n": 32}],
               "rows": [{"op": "conv2d", "problem": name, "instance": "cuDNN fused", "family": "cudnn", "ms": 0.03,
                         "tflops": 400.0, "status": "PASS", "repeats": 9},
                        {"op": "conv2d", "problem": name, "instance": "cuDNN unfused", "family": "cudnn", "ms": 0.06,
                         "tflops": 200.0, "status": "unchecked", "repeats": 9},
                        {"op": "conv2d", "problem": name, "instance": "ktune_conv2d_fprop_sm90_wgmma_f16_tma_im2col_256x128x64_w128x128_s4_a8",
                         "family": "sm90_conv", "ms": 0.032, "tflops": 380.0, "status": "PASS", "repeats": 9},
                        {"op": "conv2d", "problem": name, "instance": "ktune_conv2d_fprop_sm90_wgmma_f16_tma_im2col_256x128x64_w128x128_s4_a8",
                         "family": "tuned", "ms": 0.032, "tflops": 378.0, "status": "PASS", "repeats": 9}]}
        path = os.path.join(self.dir, "profile-conv.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        (run,) = pr.read_runs(path)                             # conv problems only: one run
        self.assertEqual((run.op, run.gpu, run.commit, run.stem), ("conv", "NVIDIA H200", "c0ffee1", "profile-conv-conv"))
        self.assertIn("cuDNN 9.14.0", run.software)
        (p,) = run.problems
        self.assertEqual((p.ref_tflops, p.ref2_tflops, p.pick_tflops, p.best().tflops), (400.0, 200.0, 378.0, 380.0))

    def test_conv_gbench_json(self):
        path = os.path.join(self.dir, "bench_conv-0badc0de.json")
        with open(path, "w") as f:
            json.dump(_conv_doc(), f)
        run = pr.read_input(path)
        self.assertEqual((run.op, run.commit), ("conv", "0badc0de"))
        (p,) = run.problems
        self.assertEqual(p.label, "f16 N32 56² 64→64 3×3 s1")
        self.assertEqual((p.ref_name, p.ref_tflops, p.ref2_name, p.ref2_tflops), ("cuDNN fused", 300.0, "cuDNN unfused", 120.0))
        self.assertEqual((p.pick_tflops, p.best().tflops), (200.0, 240.0))
        self.assertEqual(pr.ref_names(run), "cuDNN fused")
        rc, _ = run_main(["--no-png", path])
        self.assertEqual(rc, 0)
        md = read(os.path.join(self.dir, "bench_conv-0badc0de-table.md"))
        self.assertIn("| problem | cuDNN fused TF/s | cuDNN unfused TF/s | ktune pick TF/s | pick ratio | pick ÷ cuDNN unfused |", md)
        self.assertIn("| f16 N32 56² 64→64 3×3 s1 | 300.0 | 120.0 | 200.0 | 0.67× | 1.67× | 240.0 | 0.80× |", md)
        self.assertIn("2·N·P·Q·K·R·S·C", md)
        self.assertIn("Geomean: pick ÷ cuDNN fused 0.67× (1 problems); pick ÷ cuDNN unfused 1.67×", md)

    def test_conv_bench_csv(self):
        path = os.path.join(self.dir, "conv-bench-7654321.csv")
        with open(path, "w") as f:
            f.write(CONV_CSV)
        run = pr.read_input(path)
        self.assertEqual((run.kind, run.op, run.commit), ("ktune-conv-bench CSV", "conv", "7654321"))
        a, b = run.problems
        self.assertEqual(a.label, "56² 64→64 1×1 s1")
        self.assertAlmostEqual(a.ref_tflops, 41.1 * 20.0 / 8.0)   # the row's work over cuDNN's time
        self.assertEqual(a.pick_tflops, 32.9)
        self.assertEqual(a.best().tflops, 41.1)                    # the faster row failed its check
        self.assertEqual([i.status for i in a.instances], ["PASS", "PASS", "FAIL"])
        self.assertIsNone(b.ref_tflops)                             # no ktune time to derive cuDNN's TF/s from
        self.assertIsNone(b.pick_tflops)
        self.assertTrue(any("no cuDNN time for: 224² 3→64 7×7 s2" in n for n in run.notes))
        self.assertEqual(pr.conv_label(["bf16", "n256", "7x7_512to2048_1x1_s1_p2"]), "bf16 N256 7² 512→2048 1×1 s1 p2")

    def test_instance_names(self):
        self.assertEqual(pr.parse_instance("ktune_gemm_sm80_bf16_tn_128x256x32_w64x64_s4_a8"), ("128x256x32", 4, "64x64", 8))
        self.assertEqual(pr.parse_instance("ktune_conv2d_fprop_sm80_bf16_few_channels_c3_128x64x32_w64x32_s4_a1"),
                         ("128x64x32", 4, "64x32", 1))
        self.assertIsNone(pr.parse_instance("cublasLt"))

    def test_markdown_only(self):
        rc, _ = run_main(["--no-png", "--gpu", "Test GPU", "--date", "2026-12-02", self.csv])
        self.assertEqual(rc, 0)
        md = read(os.path.join(self.dir, "ktune-profile-1234abc-table.md"))
        self.assertTrue(md.startswith(pr.GENERATED_MARK))
        self.assertIn("on Test GPU — commit 1234abc · 2026-12-02", md)
        self.assertIn("| bf16 tn 1024³ | 400.0 | 100.0 | 0.25× | 200.0 | 0.50× | `sm80_bf16_tn_64x64x64_w32x64_s4_a8` | 2/3 |", md)
        self.assertIn("--no-png", md)                           # the command line that regenerates it
        self.assertFalse([f for f in os.listdir(self.dir) if f.endswith(".png")])
        rc, _ = run_main(["--no-png", self.json])
        md = read(os.path.join(self.dir, "abcdef123456-table.md"))
        self.assertIn("| bf16 tn 4096³ | 700.0 | 630.0 | 0.90× | 650.0 | 0.93× |", md)
        self.assertIn("4/5 |", md)

    def test_does_not_overwrite_a_hand_written_table(self):
        path = os.path.join(self.dir, "ktune-profile-1234abc-table.md")
        with open(path, "w") as f:
            f.write("# notes by hand\n")
        with self.assertRaises(SystemExit):
            run_main(["--no-png", self.csv])
        self.assertEqual(read(path), "# notes by hand\n")

    def test_bad_input(self):
        bad = os.path.join(self.dir, "x.json")
        with open(bad, "w") as f:
            f.write("{}")
        self.assertEqual(run_main(["--no-png", bad])[0], 1)


@unittest.skipUnless(HAVE_MPL, "matplotlib is not installed (pip install matplotlib)")
class Charts(unittest.TestCase):
    def test_pngs(self):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "abcdef123456.json")
            with open(src, "w") as f:
                json.dump(_gbench_doc(), f)
            out = os.path.join(d, "out")
            rc, printed = run_main(["-o", out, src])
            self.assertEqual(rc, 0, printed)
            names = sorted(os.listdir(out))
            self.assertEqual(names, ["abcdef123456-heatmap-bf16-tn.png", "abcdef123456-instances.png",
                                     "abcdef123456-summary.png", "abcdef123456-table.md"])
            for n in names[:-1]:
                with open(os.path.join(out, n), "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            md = read(os.path.join(out, "abcdef123456-table.md"))
            self.assertIn("![abcdef123456-summary.png](abcdef123456-summary.png)", md)


if __name__ == "__main__":
    unittest.main()
