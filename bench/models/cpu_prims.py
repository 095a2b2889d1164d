#!/usr/bin/env python3
"""ConvTranspose, Resize and Reduce* on runnel's CPU device (oneDNN deconvolution, resampling,
reduction), on its REF device (the kernels CPU ran them on before) and on OpenVINO's CPU plugin,
in one run: LATENCY hint, one thread (INFERENCE_NUM_THREADS 1: a loaded machine preempts a
team's threads, which turns every barrier into a scheduler slice), f32, sync requests, the
median latency of each. Models written here
into .cache/bench-models with onnx.helper (constant weights, sizes and axes). Prints ratio=
runnel CPU / OpenVINO per model (below 1: runnel faster).
  bench/models/run --prims [--seconds 3]
(which installs the venv with onnx, numpy and openvino, and builds tools/bench.)"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MADE = os.path.join(ROOT, ".cache/bench-models")


def make(name, node, x_shape, inits, opset=18):
    path = os.path.join(MADE, f"prims_{name}.onnx")
    g = helper.make_graph([node], name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = onnx.shape_inference.infer_shapes(
        helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), strict_mode=True)
    onnx.save(m, path)
    return path


def models():
    os.makedirs(MADE, exist_ok=True)
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((64, 32, 4, 4)).astype(np.float32), "W")
    i64 = lambda n, v: numpy_helper.from_array(np.array(v, dtype=np.int64), n)
    return [
        ("convtranspose_64x56_s2", make("convtranspose", helper.make_node(
            "ConvTranspose", ["x", "W"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1]),
            [1, 64, 56, 56], [w])),
        ("resize_linear_x2", make("resize_linear", helper.make_node(
            "Resize", ["x", "", "", "s"], ["y"], mode="linear"),
            [1, 64, 56, 56], [i64("s", [1, 64, 112, 112])])),
        ("resize_nearest_x2", make("resize_nearest", helper.make_node(
            "Resize", ["x", "", "", "s"], ["y"], mode="nearest"),
            [1, 64, 56, 56], [i64("s", [1, 64, 112, 112])])),
        ("reduce_mean_hw", make("reduce_mean", helper.make_node(
            "ReduceMean", ["x", "a"], ["y"]), [1, 256, 56, 56], [i64("a", [2, 3])])),
        ("reduce_max_w", make("reduce_max", helper.make_node(
            "ReduceMax", ["x", "a"], ["y"], keepdims=0), [1, 256, 56, 56], [i64("a", [3])])),
    ]


def runnel(tools, device, path, seconds):
    fd, report = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    cmd = [os.path.join(tools, "bench"), "-m", path, "-d", device, "-hint", "latency", "-api",
           "sync", "-nthreads", "1", "-t", str(seconds), "-json", report]
    if device == "CPU":
        cmd += ["-infer_precision", "f32"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(report) as f:
        j = json.load(f)
    os.unlink(report)
    return j["results"]["latency"]["median_ms"]


def openvino(path, seconds):
    import openvino as ov
    compiled = ov.Core().compile_model(path, "CPU", {"PERFORMANCE_HINT": "LATENCY",
                                                     "INFERENCE_NUM_THREADS": 1,
                                                     "INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    x = np.arange(int(np.prod(compiled.input(0).shape)), dtype=np.float32)
    x = (x / x.size).reshape(tuple(compiled.input(0).shape))
    request.infer({0: x})
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        request.infer({0: x})
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), ov.get_version()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tools", required=True, help="the folder of the built tools/bench")
    ap.add_argument("--seconds", type=float, default=3.0, help="per model and runtime")
    a = ap.parse_args()
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    print(f"# {cpu}, {os.cpu_count()} CPUs, {platform.machine()}; load average "
          f"{os.getloadavg()[0]:.2f}; LATENCY, 1 thread, f32, sync; median latency in ms")
    for name, path in models():
        c = runnel(a.tools, "CPU", path, a.seconds)
        r = runnel(a.tools, "REF", path, a.seconds)
        o, version = openvino(path, a.seconds)
        print(f"{name:24s} runnel_cpu={c:8.3f} runnel_ref={r:8.3f} openvino={o:8.3f} "
              f"ratio={c / o:5.2f} (OpenVINO {version})", flush=True)
    print(f"# load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
