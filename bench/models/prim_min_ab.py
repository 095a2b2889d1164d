#!/usr/bin/env python3
"""Per-primitive minimums of two builds of libruntime.so (A: old, B: new) on runnel's CPU
device, alternating: A at one thread once, then A and B at two threads in turn, `--rounds`
times, the minimum of each primitive over every run of its build. What a change to the team
sizing (plugins/cpu/team.c) does to each primitive, on a loaded machine too: a primitive the
second thread does not speed up shows A@2 >= A@1; one the change moved to one thread shows
B@2 ~ A@1. Prints the memory-bound primitives (every kind but convolution and inner
product) one a line, then the sums by kind.

With --sums T1,T2,...: builds whose primitives differ (oneDNN 2.6 and 3.x: other kernels,
other layouts), A and B alternating at each thread count, compared by the sum over an
inference's primitives of each one's minimum (the minimum over each build's runs), with
the implementations each build's convolutions got.

  python3 bench/models/prim_min_ab.py --bench BENCH --lib-a DIR_A --lib-b DIR_B \\
      [--rounds 2] [--inferences 30] [--sums 1,2] MODEL.onnx ...
(DIR_A and DIR_B hold a libruntime.so each; tools/bench finds it through LD_LIBRARY_PATH,
which its RUNPATH does not override.)
"""
import argparse
import collections
import os

from prim_min import runnel_minimums


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--bench", required=True, help="tools/bench")
    ap.add_argument("--lib-a", required=True)
    ap.add_argument("--lib-b", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--inferences", type=int, default=30)
    ap.add_argument("--sums", help="thread counts: compare sums of minimums only")
    ap.add_argument("--precision", choices=["f32", "bf16"],
                    help="INFERENCE_PRECISION_HINT (default: the device's own)")
    a = ap.parse_args()
    if a.sums:
        return compare_sums(a, [int(t) for t in a.sums.split(",")])
    runs = [("A", 1), ("A", 2), ("B", 2)]
    for model in a.models:
        best = collections.defaultdict(dict)
        for r in range(a.rounds):
            for cfg in runs if r == 0 else runs[1:]:
                os.environ["LD_LIBRARY_PATH"] = a.lib_a if cfg[0] == "A" else a.lib_b
                mins, _ = runnel_minimums(a.bench, model, cfg[1], a.inferences, precision=a.precision)
                for k, (m, per) in mins.items():
                    old = best[k].get(cfg)
                    best[k][cfg] = (min(m, old[0]) if old else m, per)
        print("==", os.path.basename(model))
        sums = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0])
        for k, d in sorted(best.items()):
            if not all(c in d for c in runs):
                continue
            kind, impl, layouts, problem = k
            per = d[runs[0]][1]
            us = [d[c][0] * per for c in runs]
            s = sums[kind]
            for i in range(3):
                s[i] += us[i]
            s[3] += per
            if kind not in ("convolution", "inner_product"):
                print(f"  {kind:8s} x{per} A@1 {us[0]:7.1f} A@2 {us[1]:7.1f} B@2 {us[2]:7.1f}"
                      f"  {impl} {layouts} {problem}")
        for kind, (x, y, z, n) in sums.items():
            print(f" SUM {kind:19s} n={n:3d} A@1 {x:8.0f} A@2 {y:8.0f} B@2 {z:8.0f} us")


def compare_sums(a, threads):
    for model in a.models:
        best, convs = {}, {}
        for _ in range(a.rounds):
            for t in threads:
                for build in ("A", "B"):
                    os.environ["LD_LIBRARY_PATH"] = a.lib_a if build == "A" else a.lib_b
                    mins, _ = runnel_minimums(a.bench, model, t, a.inferences, precision=a.precision)
                    total = sum(m * per for m, per in mins.values())
                    best[(build, t)] = min(total, best.get((build, t), total))
                    census = collections.Counter()
                    for (kind, impl, _, _), (_, per) in mins.items():
                        if kind == "convolution":
                            census[impl] += per
                    convs[build] = census
        print("==", os.path.basename(model), flush=True)
        for t in threads:
            ta, tb = best[("A", t)], best[("B", t)]
            print(f"  threads {t}: A {ta / 1000:8.2f} ms  B {tb / 1000:8.2f} ms  B/A {tb / ta:.2f}")
        for build in ("A", "B"):
            kinds = ", ".join(f"{impl} x{n}" for impl, n in convs[build].most_common())
            print(f"  {build} convolutions: {kinds}", flush=True)


if __name__ == "__main__":
    main()
