#!/usr/bin/env python3
"""Two builds of libruntime.so (A and B: oneDNN 2.6 and 3.x, say) on runnel's CPU device,
alternating: per model and thread count, the sum over an inference's primitives of each
one's minimum (prim_min.runnel_minimums), the minimum of each build's runs, and which
implementations its convolutions got. Sums of minimums hold on a loaded machine where
whole-inference latencies do not; builds whose primitives differ (other kernels, other
layouts) are compared by their sums only.

  python3 bench/models/prim_sum_ab.py --bench BENCH --lib-a DIR_A --lib-b DIR_B \\
      [--threads 1,2] [--rounds 2] [--inferences 20] MODEL.onnx ...
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
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--inferences", type=int, default=20)
    a = ap.parse_args()
    threads = [int(t) for t in a.threads.split(",")]
    for model in a.models:
        best = {}
        convs = {}
        for r in range(a.rounds):
            for t in threads:
                for build in ("A", "B"):
                    os.environ["LD_LIBRARY_PATH"] = a.lib_a if build == "A" else a.lib_b
                    mins = runnel_minimums(a.bench, model, t, a.inferences)
                    total = sum(m * per for m, per in mins.values())
                    best[(build, t)] = min(total, best.get((build, t), total))
                    census = collections.Counter()
                    for (kind, impl, _, _), (_, per) in mins.items():
                        if kind == "convolution":
                            census[impl] += per
                    convs[build] = census
        print("==", os.path.basename(model))
        for t in threads:
            ta, tb = best[("A", t)], best[("B", t)]
            print(f"  threads {t}: A {ta / 1000:8.2f} ms  B {tb / 1000:8.2f} ms  B/A {tb / ta:.2f}")
        for build in ("A", "B"):
            kinds = ", ".join(f"{impl} x{n}" for impl, n in convs[build].most_common())
            print(f"  {build} convolutions: {kinds}")


if __name__ == "__main__":
    main()
