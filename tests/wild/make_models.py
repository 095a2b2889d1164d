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
tests/wild/real_models.py adds the real models that PyPI packages ship.
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


def save_case(name, model, feeds, save=None, reference=None):
    """Saves model and the feeds, runs ONNX Runtime on the saved file, saves its outputs.

    reference(feeds) -> outputs stands in for ONNX Runtime where its CPU provider lacks
    the op (BiasAdd is CUDA-only there): numpy computes what the op's definition says."""
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    path = os.path.join(d, "model.onnx")
    if save is not None:
        save(model, path)
    else:
        onnx.save(model, path)
    if reference is None:
        so = ort.SessionOptions()
        so.log_severity_level = 3
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()]
        out_names = [o.name for o in sess.get_outputs()]
        outs = sess.run(None, {n: feeds[n] for n in names})
    else:
        inits = {i.name for i in model.graph.initializer}
        names = [i.name for i in model.graph.input if i.name not in inits]
        out_names = [o.name for o in model.graph.output]
        outs = reference(feeds)
    ds = os.path.join(d, "test_data_set_0")
    for k, n in enumerate(names):
        t = numpy_helper.from_array(np.asarray(feeds[n]), n)
        open(os.path.join(ds, f"input_{k}.pb"), "wb").write(t.SerializeToString())
    declared = {o.name: o.type for o in model.graph.output}
    for k, (o, v) in enumerate(zip(out_names, outs)):
        if isinstance(v, list) and all(isinstance(m, dict) for m in v):
            t = sequence_of_maps(v, o, declared[o])
        else:
            t = numpy_helper.from_array(np.asarray(v), o)
        open(os.path.join(ds, f"output_{k}.pb"), "wb").write(t.SerializeToString())
    print(f"{name}: {len(names)} inputs, {len(outs)} outputs", flush=True)


def sequence_of_maps(dicts, name, type_proto):
    """ONNX Runtime's list of dicts (a sequence of maps, ZipMap's output) as the
    SequenceProto of MapProtos ONNX's test data holds, with the key and value
    types the model declares (numpy_helper.from_dict would guess them from the
    Python values: float64 values, and no string keys under numpy 2)."""
    mt = type_proto.sequence_type.elem_type.map_type
    vt = helper.tensor_dtype_to_np_dtype(mt.value_type.tensor_type.elem_type)
    seq = onnx.SequenceProto(name=name, elem_type=onnx.SequenceProto.MAP)
    for d in dicts:
        m = onnx.MapProto(key_type=mt.key_type)
        if mt.key_type == TensorProto.STRING:
            m.string_keys.extend(k.encode() for k in d)
        else:
            m.keys.extend(int(k) for k in d)
        m.values.elem_type = onnx.SequenceProto.TENSOR
        m.values.tensor_values.extend(numpy_helper.from_array(np.asarray(x, dtype=vt))
                                      for x in d.values())
        seq.map_values.append(m)
    return seq


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

    if wanted("wild_reader_stale_value_info_dynamic"):
        # exported at batch 5, run at batch 2: the value_info of t froze the batch
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])
        t = helper.make_tensor_value_info("t", TensorProto.FLOAT, [5, 3])
        g = helper.make_graph(
            [helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Neg", ["t"], ["y"])],
            "stale_batch", [x], [y], value_info=[t])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        save_case("wild_reader_stale_value_info_dynamic", m, {"x": f32(2, 3)})


# ---- com.microsoft contrib ops, one node each, as ONNX Runtime runs them ----

def contrib_model(op, inputs, outputs, attrs=None, inits=(), order=None):
    """inputs: (name, elem, shape) of graph inputs; outputs: (name, elem, shape); the node's
    inputs are the graph inputs then the initializers, or `order`."""
    ins = [helper.make_tensor_value_info(n, e, s) for n, e, s in inputs]
    outs = [helper.make_tensor_value_info(n, e, s) for n, e, s in outputs]
    node_ins = order or [n for n, _, _ in inputs] + [t.name for t in inits]
    node = helper.make_node(op, node_ins, [n for n, _, _ in outputs], domain="com.microsoft",
                            **(attrs or {}))
    g = helper.make_graph([node], op.lower(), ins, outs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                               helper.make_opsetid("com.microsoft", 1)])


def contrib_cases():
    F, I32 = TensorProto.FLOAT, TensorProto.INT32
    x = f32(2, 5, 8)
    bias = numpy_helper.from_array(f32(8), "bias")
    cases = {
        "gelu": (contrib_model("Gelu", [("x", F, [2, 5, 8])], [("y", F, [2, 5, 8])]), {"x": x}),
        "fast_gelu": (contrib_model("FastGelu", [("x", F, [2, 5, 8])], [("y", F, [2, 5, 8])],
                                    inits=[bias]), {"x": x}),
        "bias_gelu": (contrib_model("BiasGelu", [("x", F, [2, 5, 8])], [("y", F, [2, 5, 8])],
                                    inits=[bias]), {"x": x}),
        "quick_gelu": (contrib_model("QuickGelu", [("x", F, [2, 5, 8])], [("y", F, [2, 5, 8])],
                                     {"alpha": 1.5}), {"x": x}),
        "bias_add": (contrib_model("BiasAdd", [("x", F, [2, 5, 8]), ("b", F, [8]),
                                               ("s", F, [2, 5, 8])], [("y", F, [2, 5, 8])]),
                     {"x": x, "b": f32(8), "s": f32(2, 5, 8)}),
        "fused_matmul": (contrib_model("FusedMatMul", [("a", F, [2, 3, 6, 4]), ("b", F, [3, 5, 6])],
                                       [("y", F, [2, 3, 4, 5])],
                                       {"alpha": 0.5, "transA": 1, "transB": 1}),
                         {"a": f32(2, 3, 6, 4), "b": f32(3, 5, 6)}),
        "dynamic_quantize_matmul": (
            contrib_model("DynamicQuantizeMatMul", [("a", F, [3, 4, 16])], [("y", F, [3, 4, 6])],
                          # B within 7 bits: ONNX Runtime's u8s8 kernel on AVX2 without
                          # VNNI (vpmaddubsw) saturates pairs of products at int16, so
                          # full-range int8 weights make its own answer machine-dependent
                          # (seen on an AVX2-only EPYC: 2 of 6 columns off by up to 3.7).
                          inits=[numpy_helper.from_array(
                                     rng.integers(-64, 64, (16, 6)).astype(np.int8), "b"),
                                 numpy_helper.from_array(
                                     (rng.random(6) * 0.05 + 0.01).astype(np.float32), "b_scale"),
                                 numpy_helper.from_array(
                                     rng.integers(-3, 3, 6).astype(np.int8), "b_zero_point"),
                                 numpy_helper.from_array(f32(6), "bias")]),
            {"a": f32(3, 4, 16)}),
        "skip_layernorm": (
            contrib_model("SkipLayerNormalization", [("x", F, [2, 5, 8]), ("skip", F, [2, 5, 8])],
                          [("y", F, [2, 5, 8]), ("mean", F, [2, 5, 1]), ("inv", F, [2, 5, 1]),
                           ("sum", F, [2, 5, 8])], {"epsilon": 1e-5},
                          inits=[numpy_helper.from_array(f32(8), "gamma"),
                                 numpy_helper.from_array(f32(8), "beta"), bias]),
            {"x": x, "skip": f32(2, 5, 8)}),
        "embed_layernorm": (
            contrib_model("EmbedLayerNormalization",
                          [("ids", I32, [2, 5]), ("seg", I32, [2, 5])],
                          [("y", F, [2, 5, 8]), ("mask_index", I32, [2])], {"epsilon": 1e-5},
                          inits=[numpy_helper.from_array(f32(11, 8), "word"),
                                 numpy_helper.from_array(f32(7, 8), "pos"),
                                 numpy_helper.from_array(f32(2, 8), "segment"),
                                 numpy_helper.from_array(f32(8), "gamma"),
                                 numpy_helper.from_array(f32(8), "beta"),
                                 numpy_helper.from_array(
                                     np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32),
                                     "mask")]),
            {"ids": rng.integers(0, 11, (2, 5)).astype(np.int32),
             "seg": rng.integers(0, 2, (2, 5)).astype(np.int32)}),
        "attention": (
            contrib_model("Attention", [("x", F, [2, 5, 8]), ("mask", I32, [2, 5])],
                          [("y", F, [2, 5, 8])], {"num_heads": 2},
                          inits=[numpy_helper.from_array(f32(8, 24) * 0.3, "w"),
                                 numpy_helper.from_array(f32(24), "b")],
                          order=["x", "w", "b", "mask"]),
            {"x": x, "mask": np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32)}),
        "attention_causal_lengths": (
            contrib_model("Attention", [("x", F, [2, 5, 8]), ("lengths", I32, [2])],
                          [("y", F, [2, 5, 12])],
                          {"num_heads": 2, "unidirectional": 1,
                           "qkv_hidden_sizes": [8, 8, 12]},
                          inits=[numpy_helper.from_array(f32(8, 28) * 0.3, "w"),
                                 numpy_helper.from_array(f32(28), "b")],
                          order=["x", "w", "b", "lengths"]),
            {"x": x, "lengths": np.array([4, 5], np.int32)}),
        "multihead_attention": (
            contrib_model("MultiHeadAttention",
                          [("q", F, [2, 5, 8]), ("k", F, [2, 7, 8]), ("v", F, [2, 7, 4]),
                           ("bias", F, [20]), ("kpm", I32, [2, 7])],
                          [("y", F, [2, 5, 4])], {"num_heads": 2}),
            {"q": x, "k": f32(2, 7, 8), "v": f32(2, 7, 4), "bias": f32(20),
             "kpm": np.array([[1] * 7, [1] * 4 + [0] * 3], np.int32)}),
    }
    references = {"bias_add": lambda f: [f["x"] + f["b"] + f["s"]]}
    for name, (m, feeds) in cases.items():
        if wanted(f"wild_contrib_{name}"):
            save_case(f"wild_contrib_{name}", m, feeds, reference=references.get(name))


# ---- ONNX Runtime's transformer optimizer on a BERT-layout encoder ----

def bert_cases():
    if not wanted("wild_bert"):
        return
    import collections
    import tempfile

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bert_encoder
    from onnxruntime.transformers import optimizer

    raw, feeds = bert_encoder.build(rng)
    save_case("wild_bert_encoder", raw, feeds)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "raw.onnx")
        onnx.save(raw, path)
        opt = optimizer.optimize_model(path, model_type="bert", num_heads=bert_encoder.HEADS,
                                       hidden_size=bert_encoder.HIDDEN, opt_level=0)
    ops = collections.Counter(n.op_type for n in opt.model.graph.node if n.domain == "com.microsoft")
    for op in ("Attention", "SkipLayerNormalization", "BiasGelu"):
        assert ops[op] > 0, f"the optimizer wrote no {op}: {dict(ops)}"
    # in memory the optimized model lacks the com.microsoft import that
    # save_model_to_file adds: runnel reads both, as ONNX Runtime does
    save_case("wild_bert_encoder_ort_optimized", opt.model, feeds,
              save=lambda m, p: opt.save_model_to_file(p))
    save_case("wild_bert_encoder_ort_optimized_no_import", opt.model, feeds)


# ---- skl2onnx: scikit-learn pipelines (ai.onnx.ml) ----

def sklearn_cases():
    if not wanted("wild_sklearn"):
        return
    import warnings

    from skl2onnx import to_onnx
    from sklearn.datasets import load_diabetes, load_iris
    from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import (Binarizer, LabelEncoder, Normalizer, OneHotEncoder,
                                       StandardScaler)

    warnings.filterwarnings("ignore")
    X, y = load_iris(return_X_y=True)
    X = X.astype(np.float32)
    Xq = X.copy()
    Xq[::7, 1] = np.nan  # for the imputer
    Xd, yd = load_diabetes(return_X_y=True)
    Xd = Xd.astype(np.float32)
    no_zipmap = {"zipmap": False}  # probabilities as a tensor (the default is ZipMap's maps)

    def case(name, model, x, **kw):
        if wanted(name):
            save_case(name, to_onnx(model, x[:1], **kw), {"X": x})

    pipe = make_pipeline(SimpleImputer(), StandardScaler(), Normalizer(),
                         LogisticRegression(max_iter=500)).fit(Xq, y)
    case("wild_sklearn_classifier_pipeline", pipe, Xq,
         options={id(pipe.steps[-1][1]): no_zipmap})
    gb = GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0).fit(X, y)
    case("wild_sklearn_gradient_boosting_classifier", gb, X, options=no_zipmap)
    gbr = GradientBoostingRegressor(n_estimators=10, max_depth=3, random_state=0).fit(Xd, yd)
    case("wild_sklearn_gradient_boosting_regressor", gbr, Xd)
    case("wild_sklearn_linear_regression", LinearRegression().fit(Xd, yd), Xd)
    binp = make_pipeline(Binarizer(threshold=2.0), LogisticRegression()).fit(X, y)
    case("wild_sklearn_binarizer_logistic", binp, X, options=no_zipmap)
    Xi = rng.integers(0, 3, (30, 2)).astype(np.int64)
    ohe = make_pipeline(OneHotEncoder(), LogisticRegression()).fit(Xi, y[::5][:60])
    case("wild_sklearn_one_hot_logistic", ohe, Xi, options=no_zipmap)
    # skl2onnx's default export: the probabilities go through ZipMap, a
    # sequence of maps from class label to probability (int64 labels here,
    # string labels below), which ONNX Runtime returns as a list of dicts
    case("wild_sklearn_zipmap_default", pipe, Xq)
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    tree = GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0).fit(X, names)
    case("wild_sklearn_zipmap_string_labels", tree, X)
    labels = np.array([3, 7, 9, 7, 3], dtype=np.int64)
    case("wild_sklearn_label_encoder", LabelEncoder().fit(labels), labels)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    reader_cases()
    onnxscript_cases()
    light_cases()
    contrib_cases()
    bert_cases()
    sklearn_cases()
    # real models from PyPI packages (rapidocr, silero-vad, ddddocr, magika)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import real_models

    real_models.cases(OUT, ONLY)
