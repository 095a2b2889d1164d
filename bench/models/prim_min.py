#!/usr/bin/env python3
"""Per-primitive minimum times of a model on runnel's CPU device, by thread count, and
OpenVINO's per-layer minimums beside them: the measurement that still means something on a
loaded machine, where whole-inference times swing 2-4x between runs (bench/LOG.md,
"Inception-v1/v2 per-op against OpenVINO on AVX2").

runnel: tools/bench, one stream, sync, -nthreads T, with ONEDNN_VERBOSE=1; each primitive
execution is keyed by its kind, implementation, layouts and shape, and the minimum over the
inferences is taken per key (a key several nodes share counts once per node: its executions
per inference). Nodes that run no oneDNN primitive (the CPU attention with its heads split:
dnnl_sgemm, which ONEDNN_VERBOSE does not show) come from the same run's -pc counters, as their
average per inference, marked "(-pc mean)". OpenVINO: its Python API with PERF_COUNT, the
minimum of each layer's real_time over the inferences. Prints the sum of the minimums by primitive kind (runnel) and
by layer type and implementation (OpenVINO), then runnel's largest primitives with their
speed-up from the first thread count to the last.

A sum of per-primitive minimums is a floor no inference reaches: each primitive has its best
run in a different inference, and on a loaded machine a team's time varies from run to run
(a preempted thread holds the others at the closing barrier). So, from the same runs, where
an inference's time goes (`account`): per inference, its latency, the sum of its primitives'
times and what is left (the time outside the primitives: runnel's node code, the scheduler,
the request's stages); and per node (the n-th primitive of an inference, as OpenVINO keys by
layer; the minimum per key above pools nodes of one shape, which sets it lower still), the
sum of the minimums and of the medians. OpenVINO's the same way: its request's latency, and
its layers' real_time summed per inference.

  bench/models/run --prim-min MODEL [--threads 1,2] [--inferences 40] [--top 15]
                   [--openvino] [--hint none|latency] [--precision f32|bf16]
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import tempfile


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


def runnel_minimums(bench, model, threads, inferences, hint="none", precision=None):
    """{key: (minimum us, executions an inference)} and the inferences' account."""
    env = dict(os.environ, ONEDNN_VERBOSE="1", RUNNEL_INSTALLED_PLUGINS="0")
    cmd = [bench, "-m", model, "-d", "CPU", "-hint", hint, "-nthreads", str(threads), "-api",
           "sync", "-niter", str(inferences), "-report_type", "detailed", "-pc"]
    if hint == "none":
        cmd += ["-nstreams", "1"]
    if precision:
        cmd += ["-infer_precision", precision]
    for name, path in model_inputs(model).items():
        cmd += ["-i", f"{name}={path}"]
    # The verbose lines go to a file, not a pipe: a line a primitive writes into a full pipe
    # waits for this script to read it, which on a loaded machine is the time outside the
    # primitives the account would show (at one thread, as long as the primitives' own).
    # -report_type detailed, for every latency sample, turns on the per-node counters too
    # (two clock readings a node).
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "bench.json")
        with open(os.path.join(tmp, "stdout"), "w+") as log:
            done = subprocess.run(cmd + ["-json", report], env=env, stdout=log,
                                  stderr=subprocess.PIPE, text=True)
            if done.returncode != 0:
                raise SystemExit(f"{' '.join(cmd)}: exit {done.returncode}\n{done.stderr}")
            log.seek(0)
            out = log.read()
        with open(report) as f:
            latencies = [ms * 1000 for _, ms in json.load(f)["latency_samples"]]
    times = collections.defaultdict(list)
    executed = []
    # Only the measured phase: compile-time weight reorders (step 6) would count as
    # per-inference primitives wherever a model has as many of one shape as runs (vgg19's
    # seven 512x512x3x3 with --inferences 6).
    measuring = False
    for line in out.splitlines():
        measuring = measuring or line.startswith("[Step 9/")
        # oneDNN 3.x marks primitive lines: "onednn_verbose,primitive,exec,..."
        line = line.replace("onednn_verbose,primitive,", "onednn_verbose,", 1)
        if measuring and line.startswith("onednn_verbose,exec,"):
            f = line.split(",")
            # kind, implementation, layouts, problem: the primitive; the last field: ms.
            times[(f[3], f[4], f[6], f[-2])].append(float(f[-1]) * 1000)
            executed.append(float(f[-1]) * 1000)
    runs = inferences + 1  # tools/bench's first (uncounted) inference
    # Keys run fewer times than the inferences ran only in the first (lazy set-up).
    mins = {k: (min(v), len(v) // runs) for k, v in times.items() if len(v) >= runs}
    # Nodes that run no oneDNN primitive, so ONEDNN_VERBOSE never shows them: the attention
    # with its heads split (plugins/cpu/attention.c, dnnl_sgemm). Their time is tools/bench
    # -pc's average per inference (not a minimum), one key per node type and impl; the
    # account counts it outside the primitives.
    # The first table only (all requests; -report_type detailed repeats it per request).
    extra = collections.defaultdict(lambda: [0.0, 0])
    tables = 0
    for line in out.splitlines():
        tables += line.startswith("Performance counters")
        f = line.split()
        if tables == 1 and "EXECUTED" in f and "gemm:heads" in f:
            e = extra[(f[f.index("EXECUTED") + 1], "gemm:heads")]
            e[0] += float(f[-2])
            e[1] += 1
    for (kind, impl), (us, n) in extra.items():
        mins[(kind + " (-pc mean)", impl, "", "per node")] = (us / n, n)
    return mins, account(executed, latencies)


def account(executed, latencies):
    """Where the timed inferences' time went, from their primitives' times in execution order
    (the first inference's, which tools/bench does not time, leads) and their latencies, us;
    None where the primitives do not split evenly into the inferences."""
    n = len(latencies)
    per = len(executed) // (n + 1) if n else 0
    if n == 0 or per == 0 or per * (n + 1) != len(executed):
        return None
    runs = [executed[(i + 1) * per:(i + 2) * per] for i in range(n)]
    return summarise(latencies, runs)


def summarise(latencies, runs):
    """latencies[i] and the times of inference i's primitives (or layers), us."""
    sums = [sum(r) for r in runs]
    nodes = list(zip(*runs))
    return {"latency": statistics.median(latencies), "best": min(latencies),
            "inside": statistics.median(sums),
            "outside": statistics.median(l - s for l, s in zip(latencies, sums)),
            "node_min": sum(min(t) for t in nodes),
            "node_median": sum(statistics.median(t) for t in nodes), "nodes": len(nodes)}


def print_account(who, a):
    if a is None:
        print(f"{who}: no account (the primitives do not split evenly into the inferences)")
        return
    print(f"{who}: latency median {a['latency'] / 1000:.2f} ms (best {a['best'] / 1000:.2f}); "
          f"in the primitives {a['inside'] / 1000:.2f}, outside {a['outside'] / 1000:.2f} "
          f"(medians over the inferences); {a['nodes']} a run: sum of their minimums "
          f"{a['node_min'] / 1000:.2f}, of their medians {a['node_median'] / 1000:.2f}")


def openvino_minimums(model, threads, inferences, precision=None):
    import numpy as np
    import openvino as ov
    config = {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": "1",
              "INFERENCE_NUM_THREADS": str(threads), "PERF_COUNT": "YES"}
    if precision:
        config["INFERENCE_PRECISION_HINT"] = precision
    compiled = ov.Core().compile_model(model, "CPU", config)
    request = compiled.create_infer_request()
    recorded = model_inputs(model)
    feeds = {i.any_name: np.load(recorded[i.any_name]) if i.any_name in recorded
             else np.random.rand(*i.shape).astype(np.float32) for i in compiled.inputs}
    best = {}
    request.infer(feeds)  # as tools/bench, a first inference not counted
    latencies, runs = [], []
    for _ in range(inferences):
        request.infer(feeds)
        latencies.append(request.latency * 1000)
        run = []
        for p in request.profiling_info:
            if p.status == p.Status.EXECUTED:
                key = (p.node_name, p.node_type, p.exec_type)
                us = p.real_time.total_seconds() * 1e6
                best[key] = min(best.get(key, 1e18), us)
                run.append(us)
        runs.append(run)
    same = all(len(r) == len(runs[0]) for r in runs)
    return best, summarise(latencies, runs) if same and runs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="an .onnx path, or a light model's or bench/models' made "
                                  "model's name (squeezenet, bert_base_encoder, minilm_l6_encoder)")
    ap.add_argument("--tools", required=True, help="the folder of the built tools/bench")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--inferences", type=int, default=40)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--openvino", action="store_true")
    ap.add_argument("--hint", choices=["none", "latency"], default="none",
                    help="runnel's PERFORMANCE_HINT (none: one stream of --threads; latency: "
                         "what a user gets, the stream and its team from the hint; OpenVINO "
                         "runs LATENCY, one stream, either way)")
    ap.add_argument("--precision", choices=["f32", "bf16"],
                    help="INFERENCE_PRECISION_HINT for both runtimes (default: each one's own)")
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
    measured = {t: runnel_minimums(bench, a.model, t, a.inferences, a.hint, a.precision) for t in counts}
    mins = {t: m for t, (m, _) in measured.items()}
    for t in counts:
        kinds = collections.defaultdict(lambda: [0.0, 0])
        for (kind, impl, _, _), (m, per) in mins[t].items():
            kinds[(kind, impl)][0] += m * per
            kinds[(kind, impl)][1] += per
        total = sum(v[0] for v in kinds.values())
        print(f"runnel, {t} thread(s): primitive minimums {total:.0f} us an inference")
        for (kind, impl), (us, n) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
            print(f"  {us:9.0f} us {100 * us / total:5.1f} %  {n:3d}  {kind} {impl}")
        print_account(f"runnel, {t} thread(s), where an inference's time goes", measured[t][1])
        if a.openvino:
            best, ov_account = openvino_minimums(a.model, t, a.inferences, a.precision)
            types = collections.defaultdict(lambda: [0.0, 0])
            for (_, typ, impl), us in best.items():
                types[(typ, impl)][0] += us
                types[(typ, impl)][1] += 1
            total = sum(v[0] for v in types.values())
            print(f"OpenVINO, {t} thread(s): layer minimums {total:.0f} us an inference")
            for (typ, impl), (us, n) in sorted(types.items(), key=lambda kv: -kv[1][0]):
                print(f"  {us:9.0f} us {100 * us / total:5.1f} %  {n:3d}  {typ} {impl}")
            print_account(f"OpenVINO, {t} thread(s), where an inference's time goes", ov_account)
    first, last = counts[0], counts[-1]
    print(f"runnel's largest primitives: minimum us at {first} / {last} thread(s), speed-up")
    rows = [(m * per, mins[last][k][0] * per, per, k) for k, (m, per) in mins[first].items()
            if k in mins[last]]
    for a_us, b_us, per, (kind, impl, _, problem) in sorted(rows, key=lambda r: -r[0])[:a.top]:
        print(f"  {a_us:9.0f} {b_us:9.0f} {a_us / b_us:5.2f}  x{per} {kind} {impl} {problem}")


if __name__ == "__main__":
    main()
