#!/usr/bin/env python3
"""Models as real exporters write them, with ONNX Runtime's outputs.

Writes one ONNX backend-test folder per case into OUT:
OUT/<case>/model.onnx (plus external data files where the case has them) and
OUT/<case>/test_data_set_0/{input,output}_K.pb, where the inputs are seeded
random data and the outputs are what ONNX Runtime's CPU execution provider
computes on them. tests/conformance:onnx then runs each folder on a runnel
device and compares. Nothing here is computed by runnel.

  make_models.py OUT [CASE_PREFIX ...]

The exporters are the real ones, from PyPI (tests/wild/run installs them):
onnxscript (model-local functions), skl2onnx + scikit-learn (ai.onnx.ml
pipelines), onnxruntime.transformers.optimizer (com.microsoft contrib ops on
a BERT-layout encoder), onnx.version_converter (the light models at other
opsets), and the onnx package itself for what exporters write around the
graph (external data in several files, dim_value -1, stale value_info).
"""
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1]
ONLY = sys.argv[2:]
LIGHT = os.path.join(os.path.dirname(__file__), "../../.cache/onnx-1.22.0/light")
rng = np.random.default_rng(20261125)


def save_case(name, model, feeds, save=None):
    """Saves model and the feeds, runs ONNX Runtime on the saved file, saves its outputs."""
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    path = os.path.join(d, "model.onnx")
    if save is not None:
        save(model, path)
    else:
        onnx.save(model, path)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    outs = sess.run(None, {n: feeds[n] for n in names})
    ds = os.path.join(d, "test_data_set_0")
    for k, n in enumerate(names):
        t = numpy_helper.from_array(np.asarray(feeds[n]), n)
        open(os.path.join(ds, f"input_{k}.pb"), "wb").write(t.SerializeToString())
    for k, (o, v) in enumerate(zip(sess.get_outputs(), outs)):
        t = numpy_helper.from_array(np.asarray(v), o.name)
        open(os.path.join(ds, f"output_{k}.pb"), "wb").write(t.SerializeToString())
    print(f"{name}: {len(names)} inputs, {len(outs)} outputs", flush=True)


def wanted(name):
    return not ONLY or any(name.startswith(p) for p in ONLY)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# ---- onnx.version_converter: light models at other opsets ----

def light_cases():
    for model in ("squeezenet", "shufflenet", "inception_v1"):
        src = onnx.load(os.path.join(LIGHT, f"light_{model}.onnx"))
        inits = {i.name for i in src.graph.initializer}
        for opset in (13, 21):
            name = f"wild_converted_{model}_opset{opset}"
            if not wanted(name):
                continue
            m = onnx.version_converter.convert_version(src, opset)
            feeds = {}
            for i in m.graph.input:
                if i.name in inits:
                    continue
                shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
                n = int(np.prod(shape))
                feeds[i.name] = (np.arange(n, dtype=np.float64) / n).astype(np.float32).reshape(
                    shape)
            save_case(name, m, feeds)


# ---- onnxscript: model-local functions ----

def onnxscript_cases():
    if not wanted("wild_onnxscript"):
        return
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import local_functions

    m = local_functions.main.to_model_proto()
    assert len(m.functions) >= 2, "onnxscript inlined the functions itself"
    save_case("wild_onnxscript_local_functions", m, {"x": f32(3, 4), "w": f32(4, 5)})


# ---- what exporters write around the graph ----

def reader_cases():
    if wanted("wild_reader_external_data"):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
        w1 = numpy_helper.from_array(f32(2, 3), "w1")
        w2 = numpy_helper.from_array(f32(2, 3), "w2")
        w3 = numpy_helper.from_array(f32(3), "w3")
        g = helper.make_graph(
            [helper.make_node("Add", ["x", "w1"], ["a"]), helper.make_node("Mul", ["a", "w2"], ["b"]),
             helper.make_node("Sub", ["b", "w3"], ["y"])], "ext", [x], [y], [w1, w2, w3])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])

        def save(model, path):
            # w1 and w2 share one file (offsets), w3 has its own
            from onnx.external_data_helper import set_external_data
            d = os.path.dirname(path)
            with open(os.path.join(d, "weights.bin"), "wb") as f:
                for t in model.graph.initializer[:2]:
                    off = f.tell()
                    f.write(t.raw_data)
                    set_external_data(t, "weights.bin", offset=off, length=len(t.raw_data))
                    t.ClearField("raw_data")
            t = model.graph.initializer[2]
            os.makedirs(os.path.join(d, "more"), exist_ok=True)
            open(os.path.join(d, "more", "w3.bin"), "wb").write(t.raw_data)
            set_external_data(t, "more/w3.bin")
            t.ClearField("raw_data")
            onnx.save(model, path)

        save_case("wild_reader_external_data", m, {"x": f32(2, 3)}, save)

    if wanted("wild_reader_dim_minus_one"):
        # paddle2onnx writes -1 for unknown dims
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
        x.type.tensor_type.shape.dim[0].dim_value = -1
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
        y.type.tensor_type.shape.dim[0].dim_value = -1
        g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "paddle", [x], [y])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        save_case("wild_reader_dim_minus_one", m, {"x": f32(2, 3)})

    if wanted("wild_reader_stale_value_info"):
        # value_info and the declared output disagree with what the ops compute
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
        t = helper.make_tensor_value_info("t", TensorProto.FLOAT, [7])
        g = helper.make_graph(
            [helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Transpose", ["t"], ["y"])],
            "stale", [x], [y], value_info=[t])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        save_case("wild_reader_stale_value_info", m, {"x": f32(2, 3)})


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    reader_cases()
    onnxscript_cases()
    light_cases()
