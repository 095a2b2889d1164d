#!/usr/bin/env python3
"""Per-model latency of runnel against ONNX Runtime, measured in the same run.

For each ONNX light model (the onnx wheel's test models, ResNet-50 and the
others), runs runnel's tools/bench on a device (REF by default) and ONNX
Runtime's CPU execution provider on the same model, both single-request
(one request, synchronous, one stream), and prints the median latency of
each and their ratio (runnel / ONNX Runtime, lower is better). Both run the
same number of threads and in f32: runnel with INFERENCE_PRECISION_HINT=f32
(CPU's default is bf16 where the CPU has native bf16; ONNX Runtime's CPU
provider runs these models in f32). Not a test: it never fails on a number.

  bench/models/run [--device REF] [--iters 10] [--threads 1] [MODEL ...]
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort


def ort_latency(path, iters, threads):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        n = int(np.prod(shape))
        feeds[i.name] = (np.arange(n, dtype=np.float64) / n).astype(np.float32).reshape(shape)
    sess.run(None, feeds)  # warm-up
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def runnel_latency(bench, path, device, iters, threads):
    fd, report = tempfile.mkstemp(prefix="runnel-bench-", suffix=".json")
    os.close(fd)
    try:
        out = subprocess.run(
            [bench, "-m", path, "-d", device, "-hint", "latency", "-api", "sync", "-nireq", "1",
             "-nstreams", "1", "-nthreads", str(threads), "-niter", str(iters),
             "-infer_precision", "f32", "-json", report],
            capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip() or out.stdout.strip())
        with open(report) as f:
            j = json.load(f)
    finally:
        os.unlink(report)
    precision = j["compiled_model_properties"].get("INFERENCE_PRECISION_HINT", "?")
    if precision not in ("f32", "?"):
        raise RuntimeError(f"runnel ran at {precision}, not f32")
    return j["results"]["latency"]["median_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="REF")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--bench", required=True, help="path of the built tools/bench")
    ap.add_argument("models", nargs="*")
    a = ap.parse_args()
    models = a.models or sorted(glob.glob(os.path.join(
        os.path.dirname(__file__), "../../.cache/onnx-1.22.0/light/*.onnx")))
    print(f"onnxruntime {ort.__version__}, {a.threads} thread(s), {a.iters} iterations, "
          f"f32 on both sides, median latency")
    for path in models:
        name = os.path.basename(path)
        try:
            ours = runnel_latency(a.bench, path, a.device, a.iters, a.threads)
            theirs = ort_latency(path, a.iters, a.threads)
            print(f"{name:28s} runnel/{a.device}={ours:9.2f} ms  onnxruntime={theirs:9.2f} ms  "
                  f"ratio={ours / theirs:.2f}")
        except Exception as e:  # a model one side cannot run is reported, not fatal
            print(f"{name:28s} error: {e}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
