"""How far the NVIDIA device's f16 and bf16 storage moves a model's outputs,
emulated on the CPU with ONNX Runtime: every f32 weight and every float
value a node writes is rounded to f16 or bf16 (to nearest), the arithmetic
stays f32, as on the device (cuDNN, cuBLAS and runnel's kernels accumulate
in f32 and store the compute type). Used to choose nvidia_check's bounds
before bf16 ran on a GPU (bench/LOG.md, "bf16 bounds for the NVIDIA
harness"); not a test.

    python3 tests/nvidia/emulate_storage.py LIGHT_DIR
    python3 tests/nvidia/emulate_storage.py --encoder MODEL.onnx INPUTS_DIR

LIGHT_DIR: ONNX's light models (light_X.onnx, light_X_output_0.pb), run on
nvidia_check's input arange(n)/n; each prints the worst of |got - ref| /
(atol + rtol |ref|) for f16 (1e-2, 1e-3) and bf16 (1e-1, 1e-2). --encoder:
a model whose inputs are INPUTS_DIR/NAME.npy, against its own f32 output
with atol = rtol x RMS as for the exported models. Constants beyond 1e30
(attention masks' finfo.min) stay f32: the harness's models fold them in
f32 at compile time.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

BOUNDS = {"f16": (1e-2, 1e-3), "bf16": (1e-1, 1e-2)}


def bf16_round(a):
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return np.where(np.isnan(a), a, bits.astype(np.uint32).view(np.float32))


def rounding_nodes(kind, opset, raw, out):
    """Nodes writing `out` = `raw` rounded to `kind`, in f32."""
    if kind == "f16" or opset >= 13:
        to = TensorProto.FLOAT16 if kind == "f16" else TensorProto.BFLOAT16
        return [helper.make_node("Cast", [raw], [out + "__h"], to=to),
                helper.make_node("Cast", [out + "__h"], [out], to=TensorProto.FLOAT)]
    # Before opset 13 Cast has no bf16: Veltkamp's split keeps 8 significant
    # bits, rounded to nearest (|x| below 5e33).
    return [helper.make_node("Mul", [raw, "__veltkamp"], [out + "__t"]),
            helper.make_node("Sub", [out + "__t", raw], [out + "__d"]),
            helper.make_node("Sub", [out + "__t", out + "__d"], [out])]


def emulate(model, kind):
    m = onnx.shape_inference.infer_shapes(model)
    g = m.graph
    for init in g.initializer:
        if init.data_type != TensorProto.FLOAT:
            continue
        a = numpy_helper.to_array(init)
        if a.size and np.max(np.abs(a)) > 1e30:
            continue
        a = bf16_round(a) if kind == "bf16" else a.astype(np.float16).astype(np.float32)
        init.CopyFrom(numpy_helper.from_array(a.astype(np.float32), init.name))
    types = {v.name: v.type.tensor_type.elem_type
             for v in list(g.value_info) + list(g.output) + list(g.input)}
    opset = m.opset_import[0].version
    nodes = []
    for n in g.node:
        nodes.append(n)
        for i, o in enumerate(n.output):
            if types.get(o) == TensorProto.FLOAT:
                n.output[i] = o + "__raw"
                nodes.extend(rounding_nodes(kind, opset, o + "__raw", o))
    del g.node[:]
    g.node.extend(nodes)
    del g.value_info[:]
    if kind == "bf16" and opset < 13:
        g.initializer.append(numpy_helper.from_array(np.array(65537.0, np.float32), "__veltkamp"))
        if m.ir_version < 4:
            g.input.append(helper.make_tensor_value_info("__veltkamp", TensorProto.FLOAT, []))
    return m


def run(model, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)[0]


def worst(got, ref, rtol, atol):
    return float(np.max(np.abs(got - ref) / (atol + rtol * np.abs(ref))))


def light(directory):
    for f in sorted(os.listdir(directory)):
        if not f.startswith("light_") or not f.endswith(".onnx"):
            continue
        name = f[len("light_"):-len(".onnx")]
        model = onnx.load(os.path.join(directory, f))
        ref = numpy_helper.to_array(
            onnx.load_tensor(os.path.join(directory, f"light_{name}_output_0.pb")))
        inits = {i.name for i in model.graph.initializer}
        inp = [i for i in model.graph.input if i.name not in inits][0]
        shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
        n = int(np.prod(shape))
        x = (np.arange(n, dtype=np.float32) / np.float32(n)).reshape(shape)
        line = [name]
        for kind, (rtol, atol) in BOUNDS.items():
            got = run(emulate(model, kind), {inp.name: x})
            line.append(f"{kind} {worst(got, ref, rtol, atol):.5f} of the bound "
                        f"(max |diff| {np.max(np.abs(got - ref)):.3g}, max |ref| "
                        f"{np.max(np.abs(ref)):.3g})")
        print("; ".join(line), flush=True)


def encoder(path, inputs):
    model = onnx.load(path)
    inits = {i.name for i in model.graph.initializer}
    feeds = {i.name: np.load(os.path.join(inputs, i.name + ".npy"))
             for i in model.graph.input if i.name not in inits}
    ref = run(model, feeds)
    rms = float(np.sqrt(np.mean(ref.astype(np.float64) ** 2)))
    for kind, (rtol, _) in BOUNDS.items():
        got = run(emulate(model, kind), feeds)
        print(f"{os.path.basename(path)} {kind}: {worst(got, ref, rtol, rtol * rms):.3f} of the "
              f"bound (rtol {rtol}, atol rtol x rms {rms:.3g}), max |diff| "
              f"{np.max(np.abs(got - ref)):.3g}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--encoder":
        encoder(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 2:
        light(sys.argv[1])
    else:
        sys.exit(__doc__)
