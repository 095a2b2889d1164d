#!/usr/bin/env python3
"""Per-primitive minimum times of a model on runnel's CPU device, by thread count, and
OpenVINO's per-layer minimums beside them: the measurement that still means something on a
loaded machine, where whole-inference times swing 2-4x between runs (bench/LOG.md,
"Inception-v1/v2 per-op against OpenVINO on AVX2").

runnel: tools/bench, one stream, sync, -nthreads T, with ONEDNN_VERBOSE=1; each primitive
execution is keyed by its kind, implementation, layouts and shape, and the minimum over the
inferences is taken per key (a key several nodes share counts once per node: its executions
per inference). OpenVINO: its Python API with PERF_COUNT, the minimum of each layer's
real_time over the inferences. Prints the sum of the minimums by primitive kind (runnel) and
by layer type and implementation (OpenVINO), then runnel's largest primitives with their
speed-up from the first thread count to the last.

  bench/models/run --prim-min MODEL [--threads 1,2] [--inferences 40] [--top 15]
                   [--openvino]
"""
import argparse
import collections
import os
import subprocess


def model_inputs(model):
    """The model's recorded inputs (.npy by input name) in inputs/<model name>/ beside it, as
    bench/models/suite.py keeps them (a '/' in an input's name is '_' in its file's: the int8
    ResNet-50s' gpu_0/data_0): {} when none."""
    folder = os.path.join(os.path.dirname(model), "inputs",
                          os.path.splitext(os.path.basename(model))[0])
    if not os.path.isdir(folder):
        return {}
    from common import graph_inputs
    names = {name.replace("/", "_"): name for name, _, _ in graph_inputs(model)}
    return {names.get(f[:-4], f[:-4]): os.path.join(folder, f) for f in sorted(os.listdir(folder))
            if f.endswith(".npy")}


def runnel_minimums(bench, model, threads, inferences):
    env = dict(os.environ, ONEDNN_VERBOSE="1", RUNNEL_INSTALLED_PLUGINS="0")
    cmd = [bench, "-m", model, "-d", "CPU", "-hint", "none", "-nstreams", "1", "-nthreads",
           str(threads), "-api", "sync", "-niter", str(inferences)]
    for name, path in model_inputs(model).items():
        cmd += ["-i", f"{name}={path}"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    times = collections.defaultdict(list)
    # Only the measured phase: compile-time weight reorders (step 6) would count as
    # per-inference primitives wherever a model has as many of one shape as runs (vgg19's
    # seven 512x512x3x3 with --inferences 6).
    measuring = False
    for line in out.splitlines():
        measuring = measuring or line.startswith("[Step 9/")
        if measuring and line.startswith("onednn_verbose,exec,"):
            f = line.split(",")
            # kind, implementation, layouts, problem: the primitive; the last field: ms.
            times[(f[3], f[4], f[6], f[-2])].append(float(f[-1]) * 1000)
    runs = inferences + 1  # tools/bench's first (uncounted) inference
    # Keys run fewer times than the inferences ran only in the first (lazy set-up).
    return {k: (min(v), len(v) // runs) for k, v in times.items() if len(v) >= runs}


def openvino_minimums(model, threads, inferences):
    import numpy as np
    import openvino as ov
    compiled = ov.Core().compile_model(model, "CPU", {
        "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": "1",
        "INFERENCE_NUM_THREADS": str(threads), "PERF_COUNT": "YES"})
    request = compiled.create_infer_request()
    recorded = model_inputs(model)
    feeds = {i.any_name: np.load(recorded[i.any_name]) if i.any_name in recorded
             else np.random.rand(*i.shape).astype(np.float32) for i in compiled.inputs}
    best = {}
    for _ in range(inferences):
        request.infer(feeds)
        for p in request.profiling_info:
            if p.status == p.Status.EXECUTED:
                key = (p.node_name, p.node_type, p.exec_type)
                best[key] = min(best.get(key, 1e18), p.real_time.total_seconds() * 1e6)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="an .onnx path, or a light model's or bench/models' made "
                                  "model's name (squeezenet, bert_base_encoder, minilm_l6_encoder)")
    ap.add_argument("--tools", required=True, help="the folder of the built tools/bench")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--inferences", type=int, default=40)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--openvino", action="store_true")
    a = ap.parse_args()
    counts = [int(t) for t in a.threads.split(",")]
    if not os.path.exists(a.model):
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")
        for candidate in (f".cache/onnx-1.22.0/light/light_{a.model}.onnx",
                          f".cache/bench-models/{a.model}.onnx"):
            if os.path.exists(os.path.join(root, candidate)):
                a.model = os.path.join(root, candidate)
                break
        else:
            ap.error(f"no model {a.model} (a path, or a name under .cache/onnx-1.22.0/light or "
                     ".cache/bench-models: bench/models/run --suite --models NAME makes those)")
    bench = os.path.join(a.tools, "bench")
    mins = {t: runnel_minimums(bench, a.model, t, a.inferences) for t in counts}
    for t in counts:
        kinds = collections.defaultdict(lambda: [0.0, 0])
        for (kind, impl, _, _), (m, per) in mins[t].items():
            kinds[(kind, impl)][0] += m * per
            kinds[(kind, impl)][1] += per
        total = sum(v[0] for v in kinds.values())
        print(f"runnel, {t} thread(s): primitive minimums {total:.0f} us an inference")
        for (kind, impl), (us, n) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
            print(f"  {us:9.0f} us {100 * us / total:5.1f} %  {n:3d}  {kind} {impl}")
        if a.openvino:
            best = openvino_minimums(a.model, t, a.inferences)
            types = collections.defaultdict(lambda: [0.0, 0])
            for (_, typ, impl), us in best.items():
                types[(typ, impl)][0] += us
                types[(typ, impl)][1] += 1
            total = sum(v[0] for v in types.values())
            print(f"OpenVINO, {t} thread(s): layer minimums {total:.0f} us an inference")
            for (typ, impl), (us, n) in sorted(types.items(), key=lambda kv: -kv[1][0]):
                print(f"  {us:9.0f} us {100 * us / total:5.1f} %  {n:3d}  {typ} {impl}")
    first, last = counts[0], counts[-1]
    print(f"runnel's largest primitives: minimum us at {first} / {last} thread(s), speed-up")
    rows = [(m * per, mins[last][k][0] * per, per, k) for k, (m, per) in mins[first].items()
            if k in mins[last]]
    for a_us, b_us, per, (kind, impl, _, problem) in sorted(rows, key=lambda r: -r[0])[:a.top]:
        print(f"  {a_us:9.0f} {b_us:9.0f} {a_us / b_us:5.2f}  x{per} {kind} {impl} {problem}")


if __name__ == "__main__":
    main()
