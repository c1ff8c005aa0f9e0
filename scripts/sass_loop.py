#!/usr/bin/env python3
"""scripts/sass_loop.py — per-k-tile SASS of the GEMM/conv main loops, from cuobjdump.

    scripts/sass_loop.py OBJECT_OR_SASS [NAME_SUBSTRING]     (default substring: gemm_kernel)

OBJECT_OR_SASS: a .o / executable (cuobjdump -sass is run; set CUOBJDUMP or put cuobjdump on PATH — the
CUDA 13.0 of the dev machine lacks it, `pip install --target DIR nvidia-cuda-cuobjdump` has it) or a saved
cuobjdump -sass listing. For every kernel whose mangled name contains the substring, per architecture: the
main loop (the innermost backward branch spanning the most HMMA/HGMMA, FFMA without them, merged with backward branches
that overlap it partially, e.g. a copy block placed before the loop head), its instruction count, the sum
of the compiler's stall counts (control bits 105..108: the cycles one warp needs to issue the loop without
waiting on any scoreboard) and the most frequent opcodes. One k-tile per iteration in ktune's mainloops.
"""
import collections
import os
import re
import subprocess
import sys


def listing(path):
    with open(path, 'rb') as f:
        head = f.read(4)
    if head == b'\x7fELF':
        tool = os.environ.get('CUOBJDUMP', 'cuobjdump')
        return subprocess.run([tool, '-sass', path], check=True, capture_output=True, text=True).stdout
    return open(path).read()


def opcode(text):
    return re.sub(r'^@!?U?P\w+\s+', '', text).split()[0]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    key = sys.argv[2] if len(sys.argv) > 2 else 'gemm_kernel'
    parts = re.split(r'\n\s*Function : ', listing(sys.argv[1]))
    arch, archs = '?', []
    for prev in parts[:-1]:
        found = re.findall(r'code for (sm_\w+)', prev)
        if found:
            arch = found[-1]
        archs.append(arch)
    for arch, fn in zip(archs, parts[1:]):
        name = fn.split('\n', 1)[0]
        if key not in name:
            continue
        ins = []  # (address, text, stall)
        for m in re.finditer(r'/\*([0-9a-f]{4,})\*/\s+(.*?);\s*/\* (0x[0-9a-f]+) \*/\s*\n\s*/\* (0x[0-9a-f]+) \*/', fn):
            word = (int(m.group(4), 16) << 64) | int(m.group(3), 16)
            ins.append((int(m.group(1), 16), m.group(2).strip(), (word >> 105) & 0xf))
        at = {a: i for i, (a, _, _) in enumerate(ins)}
        back = []
        for i, (a, text, _) in enumerate(ins):
            m = re.search(r'BRA\s+(?:!?U?P\d,\s*)?0x([0-9a-f]+)', text)
            if m and int(m.group(1), 16) <= a and int(m.group(1), 16) in at:
                back.append((at[int(m.group(1), 16)], i))
        if not back:
            continue
        ops = ('HMMA', 'HGMMA')  # tensor-core kernels; FFMA for the SIMT ones
        if not any(opcode(t).split('.')[0] in ops for _, t, _ in ins):
            ops = ('FFMA',)
        math = lambda r: sum(opcode(ins[j][1]).split('.')[0] in ops for j in range(r[0], r[1] + 1))
        if max(map(math, back)) == 0:
            continue
        best = max(map(math, back))
        lo, hi = min((b for b in back if math(b) == best), key=lambda b: b[1] - b[0])
        for b in back:
            merged = (min(lo, b[0]), max(hi, b[1]))
            if b[0] <= hi and b[1] >= lo and not (b[0] <= lo and b[1] >= hi) and math(merged) == best:
                lo, hi = merged
        count, stall = collections.Counter(), 0
        for j in range(lo, hi + 1):
            count[opcode(ins[j][1]).split('.')[0]] += 1
            stall += ins[j][2]
        m = re.search(r'families(\d+)(\w+?)ELm(\d+)E', name)
        short = f'{m.group(2)}#{m.group(3)}' if m else name[:48]
        top = ', '.join(f'{k} {v}' for k, v in count.most_common(7))
        print(f'{arch:7s} {short:32s} loop {hi - lo + 1:4d} instructions, stall sum {stall:5d} | {top}')


if __name__ == '__main__':
    try:
        main()
    except BrokenPipeError:  # piped into head
        sys.stderr.close()
