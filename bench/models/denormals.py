#!/usr/bin/env python3
"""Subnormal weights on runnel's CPU device against the same model with them flushed, and
against OpenVINO's CPU plugin, in one run (issue 11: "a model with subnormal weights runs at
the speed of the same model with them flushed"). Two models written into .cache/bench-models
with onnx.helper: three 3x3 Convs (64 -> 64 channels, 56x56, + Relu) whose weights are, in
`subnormal`, all below f32's smallest normal (0.5e-39 .. 1.5e-39), and in `flushed` the same
weights set to 0 (what FTZ/DAZ reads them as). Each is run with CPU_DENORMALS_OPTIMIZATION YES
(runnel's default) and NO, LATENCY hint, one thread (a loaded machine preempts a team's
threads), f32, sync requests, the median latency; every case --rounds times, interleaved,
and the fastest round's median kept (other jobs on the machine only ever add time). Prints
ratio= subnormal / flushed per runtime and setting (1.0: no penalty).
  bench/models/run --denormals [--seconds 3]"""
import argparse
import json
import os
import platform
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MADE = os.path.join(ROOT, ".cache/bench-models")


def make(name, w):
    nodes, inits, x = [], [], "x"
    for i in range(3):
        inits.append(numpy_helper.from_array(w[i], f"W{i}"))
        nodes.append(helper.make_node("Conv", [x, f"W{i}"], [f"c{i}"], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        x = f"r{i}"
    nodes[-1].output[0] = "y"
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 56, 56])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    path = os.path.join(MADE, f"denormals_{name}.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def runnel(tools, model, denormals, seconds):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        subprocess.run([os.path.join(tools, "bench"), "-m", model, "-d", "CPU", "-api", "sync",
                        "-hint", "latency", "-nthreads", "1", "-infer_precision", "f32",
                        "-t", str(seconds), "-p", f"CPU_DENORMALS_OPTIMIZATION={denormals}",
                        "-json", out], check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)["results"]["latency"]["median_ms"]


def openvino(model, denormals, seconds):
    import time
    import openvino as ov
    core = ov.Core()
    cm = core.compile_model(model, "CPU", {"PERFORMANCE_HINT": "LATENCY",
                                           "INFERENCE_NUM_THREADS": 1,
                                           "INFERENCE_PRECISION_HINT": "f32",
                                           "CPU_DENORMALS_OPTIMIZATION": denormals == "YES"})
    r = cm.create_infer_request()
    x = np.arange(64 * 56 * 56, dtype=np.float32).reshape(1, 64, 56, 56) / (64 * 56 * 56)
    r.infer({0: x})
    lat, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        r.infer({0: x})
        lat.append((time.perf_counter() - t) * 1e3)
    return float(np.median(lat))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", required=True)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    os.makedirs(MADE, exist_ok=True)
    rng = np.random.default_rng(0)
    w = [(rng.uniform(0.5, 1.5, (64, 64, 3, 3)) * 1e-39).astype(np.float32) for _ in range(3)]
    models = {"subnormal": make("subnormal", w), "flushed": make("flushed", [0 * x for x in w])}
    flags = open("/proc/cpuinfo").read().split("flags")[1].split("\n")[0].split()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), platform.machine())
    print(f"# machine: {cpu}, {os.cpu_count()} CPUs; "
          f"isa: " + " ".join(f"{f}={'yes' if f in flags else 'no'}"
                              for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16")))
    print(f"# load average at start: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    print("# 3 x Conv 3x3 64->64 at 56x56 + Relu, f32, 1 thread, sync; median latency in ms")
    runtimes = (("runnel CPU", lambda m, d: runnel(a.tools, m, d, a.seconds)),
                ("OpenVINO CPU", lambda m, d: openvino(m, d, a.seconds)))
    best = {}
    for _ in range(a.rounds):
        for name, run in runtimes:
            for d in ("YES", "NO"):
                for k, p in models.items():
                    t = run(p, d)
                    best[name, d, k] = min(best.get((name, d, k), t), t)
    for name, _ in runtimes:
        for d in ("YES", "NO"):
            t = {k: best[name, d, k] for k in models}
            print(f"{name:13s} CPU_DENORMALS_OPTIMIZATION={d:3s} subnormal {t['subnormal']:8.2f} "
                  f"flushed {t['flushed']:8.2f} ratio={t['subnormal'] / t['flushed']:.2f}")
    print(f"# load average at end: {' '.join(open('/proc/loadavg').read().split()[:3])}")


if __name__ == "__main__":
    main()
