#!/usr/bin/env python3
"""runnel's Python package against OpenVINO's Python API and ONNX Runtime's
InferenceSession, measured in the same run. Not a test: it never fails on a
number.

  overhead    per-call time of request.infer on a one-node model (the onnx
              wheel's test_relu, f32[3,4,5]): what a Python user pays per
              call. runnel on REF, OpenVINO on its CPU device (default and
              shared_memory/share_outputs, its zero-copy mode), ONNX
              Runtime's run; all on one thread. runnel's raw C call
              (rn_infer_request_infer through the extension) is the floor.
  throughput  AsyncInferQueue on ResNet-50 (the light model) with the
              THROUGHPUT hint, against tools/bench on the same device in the
              same run (target: within 5%), OpenVINO's AsyncInferQueue on its
              CPU device and ONNX Runtime's run from as many Python threads.
              The devices differ (REF's portable C kernels against oneDNN and
              MLAS): those ratios compare runtimes, the tools/bench one the
              binding.

  bench/python/run [overhead|throughput|calls] [--seconds S] [--device REF]
"""
import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import threading
import time

import numpy as np

import runnel
from runnel._capi import lib

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, ".cache", "onnx-1.22.0")
RELU = os.path.join(DATA, "node", "test_relu", "model.onnx")
RESNET = os.path.join(DATA, "light", "light_resnet50.onnx")


def host():
    cpu = "unknown CPU"
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and cpu == "unknown CPU":
                cpu = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    isa = " ".join(f"{k}={'yes' if k in flags else 'no'}"
                   for k in ("avx2", "avx512f", "avx512_bf16", "amx_tile"))
    print(f"# cpu: {cpu}, {os.cpu_count()} cores; python {platform.python_version()}")
    print(f"# isa: {isa}")


def load(when):
    with open("/proc/loadavg") as f:
        print(f"# load average {when}: {' '.join(f.read().split()[:3])}")


def per_call_us(fn, calls, repeats=7):
    """Median over `repeats` of the mean time of `calls` calls, in us."""
    for _ in range(calls // 10):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(times)


def overhead(args):
    import onnxruntime as ort
    import openvino as ov

    x = np.linspace(-1, 1, 60, dtype=np.float32).reshape(3, 4, 5)
    want = np.maximum(x, 0)
    core = runnel.Core()
    compiled = core.compile_model(RELU, args.device, {"INFERENCE_NUM_THREADS": 1})
    r = compiled.create_infer_request()
    assert np.array_equal(r.infer({"x": x})["y"], want)
    raw_ptr = r._ptr
    ours = per_call_us(lambda: r.infer({"x": x}), args.calls)
    ours_raw = per_call_us(lambda: lib.rn_infer_request_infer(raw_ptr), args.calls)

    ovc = ov.Core()
    ov_compiled = ovc.compile_model(RELU, "CPU", {"INFERENCE_NUM_THREADS": 1})
    ov_req = ov_compiled.create_infer_request()
    assert np.array_equal(ov_req.infer({"x": x})["y"], want)
    theirs = per_call_us(lambda: ov_req.infer({"x": x}), args.calls)
    theirs_shared = per_call_us(
        lambda: ov_req.infer({"x": x}, share_inputs=True, share_outputs=True), args.calls)

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(RELU, so, providers=["CPUExecutionProvider"])
    assert np.array_equal(sess.run(None, {"x": x})[0], want)
    ort_us = per_call_us(lambda: sess.run(None, {"x": x}), args.calls)

    print(f"request.infer on test_relu (f32[3,4,5]), one thread, median of 7 x {args.calls} "
          f"calls (openvino {ov.__version__}, onnxruntime {ort.__version__})")
    print(f"  runnel/{args.device} infer(dict)     {ours:7.2f} us   (raw C call from Python "
          f"{ours_raw:.2f} us)")
    print(f"  openvino/CPU infer(dict)      {theirs:7.2f} us   ratio={ours / theirs:.2f}")
    print(f"  openvino/CPU infer(shared)    {theirs_shared:7.2f} us   "
          f"ratio={ours / theirs_shared:.2f}  (zero-copy in and out, as runnel)")
    print(f"  onnxruntime InferenceSession.run {ort_us:7.2f} us   ratio={ours / ort_us:.2f}")


def queue_fps(queue, x, jobs, seconds):
    """Jobs per second of an AsyncInferQueue (runnel's or OpenVINO's: the
    same calls) kept full for `seconds`, counted as tools/bench and
    benchmark_app do: completions over the time to the last one."""
    done = [0]
    queue.set_callback(lambda request, userdata, *status: done.__setitem__(0, done[0] + 1))
    for _ in range(jobs):  # warm-up
        queue.start_async({0: x})
    queue.wait_all()
    done[0] = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        queue.start_async({0: x})
    queue.wait_all()
    return done[0] / (time.perf_counter() - t0)


def throughput(args):
    import onnxruntime as ort
    import openvino as ov

    x = np.random.default_rng(0).random((1, 3, 224, 224), dtype=np.float32)
    core = runnel.Core()
    compiled = core.compile_model(RESNET, args.device, {"PERFORMANCE_HINT": "THROUGHPUT"})
    jobs = int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
    ours = queue_fps(runnel.AsyncInferQueue(compiled, jobs), x, jobs, args.seconds)

    bench = os.environ.get("RUNNEL_TOOLS_BENCH")
    tools = None
    if bench:
        out = subprocess.run([bench, "-m", RESNET, "-d", args.device, "-hint", "throughput",
                              "-api", "async", "-t", str(int(args.seconds))],
                             capture_output=True, text=True)
        m = re.search(r"Throughput:\s+([0-9.]+) FPS", out.stdout)
        tools = float(m.group(1)) if m else None
        if tools is None:
            print("tools/bench gave no throughput:\n" + out.stdout + out.stderr)

    ovc = ov.Core()
    ov_compiled = ovc.compile_model(RESNET, "CPU", {"PERFORMANCE_HINT": "THROUGHPUT"})
    ov_jobs = ov_compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")
    theirs = queue_fps(ov.AsyncInferQueue(ov_compiled, ov_jobs), x, ov_jobs, args.seconds)

    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(RESNET, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    sess.run(None, {name: x})
    ort_done = [0]
    stop = time.perf_counter() + args.seconds
    lock = threading.Lock()

    def ort_worker():
        while time.perf_counter() < stop:
            sess.run(None, {name: x})
            with lock:
                ort_done[0] += 1

    t0 = time.perf_counter()
    workers = [threading.Thread(target=ort_worker) for _ in range(jobs)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    ort_fps = ort_done[0] / (time.perf_counter() - t0)

    print(f"ResNet-50 (light_resnet50), THROUGHPUT hint, {args.seconds:g} s each")
    print(f"  runnel/{args.device} AsyncInferQueue({jobs})   {ours:8.2f} FPS")
    if tools is not None:
        print(f"  tools/bench -d {args.device} -api async  {tools:8.2f} FPS   "
              f"ratio={ours / tools:.3f} (python / C, target >= 0.95)")
    print(f"  openvino/CPU AsyncInferQueue({ov_jobs}) {theirs:8.2f} FPS   "
          f"ratio={ours / theirs:.3f}")
    print(f"  onnxruntime run x {jobs} threads     {ort_fps:8.2f} FPS   "
          f"ratio={ours / ort_fps:.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", nargs="*", default=["overhead", "throughput"],
                    choices=["overhead", "throughput"])
    ap.add_argument("--device", default="REF")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args()
    host()
    load("before")
    for what in args.what:
        {"overhead": overhead, "throughput": throughput}[what](args)
        sys.stdout.flush()
    load("after")


if __name__ == "__main__":
    main()
