#!/usr/bin/env python3
"""One BERT-base attention block on the CPU device, primitive by primitive: builds in
ONE run several tools/bench builds (e.g. before and after a change) and compares the oneDNN
primitives each runs, from ONEDNN_VERBOSE's execution times.

The block is what bench/models/make_encoder.py writes per layer between the Q/K/V projections
and the context Transpose: Q, K, V [1, 128, 12, 64] (inputs), the head Transposes (Q and V
[0, 2, 1, 3], K [0, 2, 3, 1]), MatMul, Div by 8, Add of a [1, 1, 1, 128] mask (the last 28
positions padded with float32 min), Softmax, MatMul. Written to .cache/bench-models/
attention_block.onnx.

Each build runs single-threaded (one stream of one thread, sync API) for --niter inferences,
--rounds times, the builds interleaved round by round so that they share the machine's load;
the first executions of each run are dropped. Printed per build: the median time of each
primitive kind (oneDNN's kind, implementation, post-ops, shapes) over every round, and their
sum per inference (each median times its executions per inference). Medians over interleaved
rounds are what a shared, loaded machine can still compare; whole-model FPS there cannot show
differences below the load's swings.

  attention_block.py LABEL=DIR [LABEL=DIR ...] [--rounds 12] [--niter 60]
  DIR holds a tools/bench binary ("bench") and the libruntime.so it links (copied from
  bazel-bin/tools/bench and bazel-bin/_solib_k8/.../libruntime.so of a build).
"""
import argparse
import collections
import os
import statistics
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
MODEL = os.path.join(ROOT, ".cache/bench-models/attention_block.onnx")


def write_model():
    mask = np.zeros((1, 1, 1, 128), np.float32)
    mask[..., 100:] = np.finfo(np.float32).min
    nodes = [helper.make_node("Transpose", ["q"], ["qh"], perm=[0, 2, 1, 3]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 3, 1]),
             helper.make_node("Transpose", ["v"], ["vh"], perm=[0, 2, 1, 3]),
             helper.make_node("MatMul", ["qh", "kt"], ["s"]),
             helper.make_node("Div", ["s", "c"], ["d"]),
             helper.make_node("Add", ["d", "mask"], ["a"]),
             helper.make_node("Softmax", ["a"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "vh"], ["y"])]
    g = helper.make_graph(
        nodes, "attention_block",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 128, 12, 64]) for n in "qkv"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 12, 128, 64])],
        [numpy_helper.from_array(np.array(8.0, np.float32), "c"),
         numpy_helper.from_array(mask, "mask")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    os.makedirs(os.path.dirname(MODEL), exist_ok=True)
    onnx.save(m, MODEL)


def run(directory, niter):
    env = dict(os.environ, ONEDNN_VERBOSE="1", LD_LIBRARY_PATH=directory)
    out = subprocess.run([os.path.join(directory, "bench"), "-m", MODEL, "-d", "CPU", "-hint",
                          "none", "-nstreams", "1", "-nthreads", "1", "-nireq", "1", "-niter",
                          str(niter), "-api", "sync"], env=env, check=True, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT).stdout
    return [l.split(",") for l in out.splitlines() if l.startswith("onednn_verbose,exec")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("builds", nargs="+", help="LABEL=DIR")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--niter", type=int, default=60)
    a = ap.parse_args()
    write_model()
    builds = [b.split("=", 1) for b in a.builds]
    times = {label: collections.defaultdict(list) for label, _ in builds}
    count = {label: collections.Counter() for label, _ in builds}  # executions per run
    for r in range(a.rounds):
        for label, directory in builds:
            lines = run(directory, a.niter)
            for i, f in enumerate(lines):
                post = " post-ops" if "post-ops" in f[7] else ""
                kind = f"{f[3]} {f[4]}{post} {f[-2]}"
                if r == 0:
                    count[label][kind] += 1
                if i >= 10:  # the first run's executions (primitive warm-up) are dropped
                    times[label][kind].append(float(f[-1]))
    print(f"# load average {os.getloadavg()}; {a.rounds} rounds of {a.niter} inferences")
    for label, _ in builds:
        total = 0.0
        print(f"{label}:")
        for k, v in sorted(times[label].items(), key=lambda kv: -statistics.median(kv[1])):
            per = max(1, round(count[label][k] / (a.niter + 1)))  # tools/bench runs one more
            total += statistics.median(v) * per
            print(f"  {statistics.median(v):7.3f} ms  x{per}  {k}")
        print(f"  sum {total:.3f} ms per inference")


if __name__ == "__main__":
    main()
