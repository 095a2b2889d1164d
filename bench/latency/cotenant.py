#!/usr/bin/env python3
"""One request at a time under LATENCY on a machine that other processes also use.

The CPU device's teams are libgomp's: spinning at barriers, which is fast while every team
thread has a core and collapses when one is preempted (plugins/cpu/wait.c, docs/cpu.md
"Threads and streams"). This runs, for 0, 1, ... co-tenants (processes that keep one CPU busy
each, started before and stopped after the cases), per model, in the same run:

  runnel adaptive  tools/bench -api sync -hint latency, RUNNEL_OMP_WAIT unset (the default:
                   spin while the cores are free, sleep while they are contended);
  runnel spin      the same with RUNNEL_OMP_WAIT=spin: what libgomp does alone (runnel before
                   wait.c);
  OpenVINO         the openvino wheel's CPU plugin under LATENCY, as bench/models/suite.py
                   drives it (benchmark_app's loop).

Each case prints the median latency of each and the ratios adaptive/spin and adaptive/OpenVINO
(lower is better), the machine's CPU and ISA, and its load. Rounds alternate the order of the
runtimes. Not a test: nothing fails on a number.

  bench/models/run --cotenant [--models squeezenet,inception_v1,resnet50] [--cotenants 0,1,2]
                   [--duration 3] [--rounds 2]
"""
import argparse
import os
import statistics
import subprocess
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../models"))
import suite  # noqa: E402  (bench/models/suite.py: the runtimes' drivers)
from common import cpu_line, load_line  # noqa: E402

RUNS = ["adaptive", "spin", "openvino"]


def start_cotenants(n):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop_cotenants(procs):
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def measure(a, run, path, inputs):
    if run == "openvino":
        return suite.measure_child(a, "openvino", path, inputs, "LATENCY", "default")
    saved = os.environ.pop("RUNNEL_OMP_WAIT", None)
    if run == "spin":
        os.environ["RUNNEL_OMP_WAIT"] = "spin"
    try:
        return suite.measure_runnel(a, path, inputs, "LATENCY", "default")
    finally:
        os.environ.pop("RUNNEL_OMP_WAIT", None)
        if saved is not None:
            os.environ["RUNNEL_OMP_WAIT"] = saved


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tools", required=True, help="the folder of the built tools/bench")
    ap.add_argument("--models", default="squeezenet,inception_v1,resnet50")
    ap.add_argument("--cotenants", default="0,1,2", help="busy processes per step")
    ap.add_argument("--duration", type=float, default=3.0, help="seconds per case")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=600.0)
    a = ap.parse_args()
    a.device, a.plugins = "CPU", None
    print(cpu_line())
    models = suite.all_models(a.models.split(","))
    for n in [int(x) for x in a.cotenants.split(",")]:
        procs = start_cotenants(n)
        try:
            for name, path, maker in models:
                path = path or maker()
                inputs = suite.model_inputs(name, path)
                got = {r: [] for r in RUNS}
                for k in range(a.rounds):
                    order = RUNS if k % 2 == 0 else list(reversed(RUNS))
                    for run in order:
                        r = measure(a, run, path, inputs)
                        if "error" in r:
                            print(f"{name:14s} cotenants={n} {run}: {r['error']}")
                        else:
                            got[run].append(r["median_ms"])
                med = {r: statistics.median(v) if v else None for r, v in got.items()}

                def ratio(x, y):
                    return f"{med[x] / med[y]:.2f}" if med[x] and med[y] else "-"
                cells = " ".join(f"{r}={med[r]:.2f}ms" if med[r] else f"{r}=-" for r in RUNS)
                print(f"{name:14s} cotenants={n} {cells} adaptive/spin={ratio('adaptive', 'spin')}"
                      f" adaptive/openvino={ratio('adaptive', 'openvino')}"
                      f" spin/openvino={ratio('spin', 'openvino')} ({load_line('now')[2:]})",
                      flush=True)
        finally:
            stop_cotenants(procs)


if __name__ == "__main__":
    main()
