#!/usr/bin/env python3
"""runnel's CPU layers against OpenVINO's, one by one: the minimum time of each layer over the
inferences (runnel: tools/bench's per-node counters, one stream, sync; OpenVINO: its Python API
with PERF_COUNT, one stream, the same threads), joined by the model's node each stands for.
OpenVINO names a fused layer after one of its nodes (often a made-up `Multiply_N` for a Conv with
its BatchNormalization folded) and lists the model's nodes it stands for in the runtime model's
`originalLayersNames`; runnel names a fused node after its first node. A layer is joined to the
runnel node whose name is among those nodes or among their producers (walking back through
first inputs). Prints the sums by OpenVINO's layer type (runnel's unjoined nodes by their own
type) and the joined layers, the largest runnel-minus-OpenVINO difference first, with each
Conv's shapes. On a loaded machine the minimums are what still mean something
(bench/LOG.md, "Inception-v2 per layer against OpenVINO, and its pool projections after the
Conv").

  bench/models/run --layers MODEL [--threads 1] [--inferences 40] [--precision f32|bf16]
"""
import argparse
import collections
import json
import os
import subprocess
import tempfile

from prim_min import model_inputs


def runnel_layers(bench, model, threads, inferences, precision=None):
    """{node name: (minimum us, layer type, impl)} over the inferences."""
    cmd = [bench, "-m", model, "-d", "CPU", "-hint", "none", "-nstreams", "1", "-nthreads",
           str(threads), "-api", "sync", "-niter", str(inferences), "-report_type", "detailed",
           "-pc"]
    if precision:
        cmd += ["-infer_precision", precision]
    for name, path in model_inputs(model).items():
        cmd += ["-i", f"{name}={path}"]
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "bench.json")
        subprocess.run(cmd + ["-json", report], env=dict(os.environ, RUNNEL_INSTALLED_PLUGINS="0"),
                       stdout=subprocess.DEVNULL, check=True)
        with open(report) as f:
            requests = json.load(f)["requests"]
    best = {}
    for r in requests:
        for layer in r["performance_counters"]["layers"]:
            if layer["status"] != "EXECUTED":
                continue
            name, us = layer["name"], layer["real_time_us"]
            if name not in best or us < best[name][0]:
                best[name] = (us, layer["layer_type"], layer["impl"])
    return best


def openvino_layers(model, threads, inferences, precision=None):
    """{(layer, type, impl): minimum us} and {layer: [the model's node names it stands for]},
    from one compile: OpenVINO numbers the layers it makes (`Multiply_N`) per process, so a
    second compile names them differently."""
    import numpy as np
    import openvino as ov
    config = {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": "1",
              "INFERENCE_NUM_THREADS": str(threads), "PERF_COUNT": "YES"}
    if precision:
        config["INFERENCE_PRECISION_HINT"] = precision
    compiled = ov.Core().compile_model(model, "CPU", config)
    originals = {}
    for op in compiled.get_runtime_model().get_ordered_ops():
        rt = op.get_rt_info()
        names = rt["originalLayersNames"].astype(str) if "originalLayersNames" in rt else ""
        originals[op.get_friendly_name()] = [n for n in names.split(",") if n]
    request = compiled.create_infer_request()
    recorded = model_inputs(model)
    feeds = {i.any_name: np.load(recorded[i.any_name]) if i.any_name in recorded
             else np.random.rand(*i.shape).astype(np.float32) for i in compiled.inputs}
    request.infer(feeds)  # as tools/bench, a first inference not counted
    best = {}
    for _ in range(inferences):
        request.infer(feeds)
        for p in request.profiling_info:
            if p.status == p.Status.EXECUTED:
                key = (p.node_name, p.node_type, p.exec_type)
                best[key] = min(best.get(key, 1e18), p.real_time.total_seconds() * 1e6)
    return best, originals


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="an .onnx path, or a light model's name (inception_v2)")
    ap.add_argument("--tools", required=True, help="the folder of the built tools/bench")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--inferences", type=int, default=40)
    ap.add_argument("--precision", default=None,
                    help="INFERENCE_PRECISION_HINT of both (f32, bf16); default: each one's own")
    a = ap.parse_args()
    if not os.path.exists(a.model):
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")
        a.model = os.path.join(root, f".cache/onnx-1.22.0/light/light_{a.model}.onnx")
    import onnx
    graph = onnx.shape_inference.infer_shapes(onnx.load(a.model)).graph
    nodes = {n.name: n for n in graph.node}
    producer = {o: n.name for n in graph.node for o in n.output}
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(graph.value_info) + list(graph.input) + list(graph.output)}

    ov_best, originals = openvino_layers(a.model, a.threads, a.inferences, a.precision)
    ours = runnel_layers(os.path.join(a.tools, "bench"), a.model, a.threads, a.inferences,
                         a.precision)

    def joined(layer, layer_type):
        if layer_type in ("Concatenation", "Concat", "Reorder"):
            return layer if layer in ours else None
        for name in originals.get(layer, []) + [layer]:
            for _ in range(8):
                if name in ours:
                    return name
                node = nodes.get(name)
                if node is None or not node.input or node.input[0] not in producer:
                    break
                name = producer[node.input[0]]
        return None

    rows, seen = [], set()
    # Convolutions first: a Subgraph after a 1x1 (its BatchNormalization and ReLU, unfused)
    # walks back to the same runnel node.
    for (layer, layer_type, impl), us in sorted(ov_best.items(),
                                                key=lambda kv: kv[0][1] != "Convolution"):
        ours_name = joined(layer, layer_type)
        if ours_name in seen:
            ours_name = None
        if ours_name:
            seen.add(ours_name)
        rows.append((layer_type, layer, impl, us, ours_name))
    for name, (us, layer_type, impl) in ours.items():
        if name not in seen:
            rows.append((layer_type, None, "", None, name))

    # The sums by type, each runtime's layers by its own type (a join can miss: the layers
    # below say which).
    ov_types = collections.defaultdict(lambda: [0.0, 0])
    for (_, layer_type, _), us in ov_best.items():
        ov_types[layer_type][0] += us
        ov_types[layer_type][1] += 1
    our_types = collections.defaultdict(lambda: [0.0, 0])
    for us, layer_type, _ in ours.values():
        our_types[layer_type][0] += us
        our_types[layer_type][1] += 1
    print(f"# {os.path.basename(a.model)}, {a.threads} thread(s), minimum per layer over "
          f"{a.inferences} inferences, us")
    left = sorted(ov_types.items(), key=lambda kv: -kv[1][0])
    right = sorted(our_types.items(), key=lambda kv: -kv[1][0])
    def cell(rows, i):
        if i >= len(rows):
            return " " * 33
        name, (us, count) = rows[i]
        return f"{name:<16} {count:6d} {us:9.0f}"
    print(f"{'OpenVINO type':<16} {'layers':>6} {'us':>9}   "
          f"{'runnel type':<16} {'nodes':>6} {'us':>9}")
    for i in range(max(len(left), len(right))):
        print(f"{cell(left, i)}   {cell(right, i)}")
    ov_total = sum(v[0] for v in ov_types.values())
    our_total = sum(v[0] for v in our_types.values())
    print(f"{'total':<16} {'':6} {ov_total:9.0f}   {'total':<16} {'':6} {our_total:9.0f}")

    def conv_shapes(name):
        node = nodes.get(name)
        if node is None or node.op_type != "Conv":
            return ""
        attrs = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
        x, y = shapes.get(node.input[0], []), shapes.get(node.output[0], [])
        return (f"{x[1:]} -> {y[1:]} k{list(attrs.get('kernel_shape', []))} "
                f"s{list(attrs.get('strides', [1, 1]))}")

    print(f"\n{'OpenVINO layer':<34} {'impl':<22} {'us':>8} | {'runnel node':<16} {'impl':<14} "
          f"{'us':>8} {'diff':>7}  conv")
    def diff(row):
        us, ours_name = row[3], row[4]
        return (ours[ours_name][0] if ours_name else 0) - (us or 0)
    for row in sorted(rows, key=lambda r: -diff(r)):
        layer_type, layer, impl, us, ours_name = row
        r = ours.get(ours_name)
        print(f"{(layer or '-')[:34]:<34} {impl[:22]:<22} "
              f"{'' if us is None else f'{us:.0f}':>8} | {(ours_name or '-')[:16]:<16} "
              f"{(r[2] if r else '')[:14]:<14} {'' if r is None else f'{r[0]:.0f}':>8} "
              f"{diff(row):7.0f}  {conv_shapes(ours_name)}")


if __name__ == "__main__":
    main()
