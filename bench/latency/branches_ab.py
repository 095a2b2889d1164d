#!/usr/bin/env python3
"""Branch parallelism A/B (issue 30): bench_latency with RN_CPU_BRANCHES=1
and =0 in alternating processes, one round each, PAIRS pairs per model.

Prints, per model and mode (sync, async), the median over the pairs of each
round's median ms per request and of its CPU ms per request (every thread of
the process), branches on / off, and the load averages before and after.
On a shared machine compare the pairs, not single numbers.

  branches_ab.py BENCH_LATENCY [--models inception_v1,squeezenet,...]
      [--pairs N] [--seconds S]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

LINE = re.compile(r"^CPU\s+(\S+)\s+(sync|async)\s+([\d.]+) .*total=([\d.]+)")


def one(bench, model, on, seconds):
    env = dict(os.environ, RN_CPU_BRANCHES="1" if on else "0")
    out = subprocess.run([bench, "--devices", "CPU", "--models", model, "--rounds", "1",
                          "--seconds", str(seconds)], env=env, capture_output=True,
                         text=True, check=True).stdout
    got = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            got[m.group(2)] = (float(m.group(3)), float(m.group(4)))
    return got


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench")
    ap.add_argument("--models", default="inception_v1,squeezenet,shufflenet,resnet50,densenet121")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2)
    a = ap.parse_args()
    print("# load before: %.2f %.2f %.2f" % os.getloadavg())
    print("# model mode: ms/request on / off (ratio), CPU ms/request on / off; medians of %d "
          "alternating pairs" % a.pairs)
    for model in a.models.split(","):
        res = {(on, mode): [] for on in (True, False) for mode in ("sync", "async")}
        for _ in range(a.pairs):
            for on in (True, False):
                for mode, v in one(a.bench, model, on, a.seconds).items():
                    res[(on, mode)].append(v)
        for mode in ("sync", "async"):
            on, off = res[(True, mode)], res[(False, mode)]
            if not on or not off:
                continue
            ms_on = statistics.median(v[0] for v in on)
            ms_off = statistics.median(v[0] for v in off)
            cpu_on = statistics.median(v[1] for v in on)
            cpu_off = statistics.median(v[1] for v in off)
            print("%-14s %-5s %9.2f / %9.2f ms (%.2f)   cpu %8.2f / %8.2f ms" %
                  (model, mode, ms_on, ms_off, ms_on / ms_off, cpu_on, cpu_off))
        sys.stdout.flush()
    print("# load after: %.2f %.2f %.2f" % os.getloadavg())
    return 0


if __name__ == "__main__":
    sys.exit(main())
