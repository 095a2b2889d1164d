#!/usr/bin/env python3
"""Writes tests/gpu/encoder_ops/<case>/model.onnx and test_data_set_0/input_K.pb (raw_data
tensors): small models of the ops a transformer encoder's embeddings, masks and LayerNorms use,
for test_gpu_encoder_ops.c (GPU against REF on these inputs):

  gather_i64_neg      f32 data [3,4,5], i64 indices [2,3] with negative ones, axis 1
  gather_i32_axis_last i64 data [2,3,4], i32 indices [3] with a negative one, axis -1
  gather_bool         bool data [4,3], constant i64 scalar index -1, axis 0
  where_bcast         bool [3,1], f32 [2,1,4], f32 [4] -> [2,3,4]
  where_i64           bool [4], i64 [2,4], i64 [1]
  cast_round_trips    f32 -> i64 -> f32, f32 -> bool -> i32 -> i64, i64 -> bool -> f32,
                      f32 -> i32 -> f32, CastLike f32 -> i64
  compare             Equal/Less/Greater/LessOrEqual/GreaterOrEqual (i64, f32, broadcast), Not
  bert_mask           PyTorch's BertModel mask: Equal(ids, 0), Unsqueeze x2, Expand,
                      ConstantOfShape, Where, added to scores, Softmax
  slice               Slice with negative starts, ends past the end, a negative step
  reduce              ReduceMean (attribute axes, keepdims), ReduceSum (axes input, no keepdims),
                      ReduceMax (all axes), ReduceSum with no axes and noop_with_empty_axes
  layernorm_gelu      a decomposed LayerNorm (make_encoder.py's) and Gelu (x*0.5*(1+Erf(x/sqrt2)))

Run with the bench venv's Python (numpy, onnx):
  .cache/venv-bench/bin/python tests/gpu/make_encoder_ops_models.py"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "encoder_ops")
RNG = np.random.default_rng(0)
T = {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64, np.int32: TensorProto.INT32,
     np.bool_: TensorProto.BOOL}


def value(name, arr):
    return helper.make_tensor_value_info(name, T[arr.dtype.type], list(arr.shape))


def write(case, nodes, inputs, outputs, inits=(), opset=17):
    """inputs: [(name, array)]; outputs: [(name, dtype, shape)]."""
    graph = helper.make_graph(
        nodes, case, [value(n, a) for n, a in inputs],
        [helper.make_tensor_value_info(n, T[t], s) for n, t, s in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    d = os.path.join(HERE, case, "test_data_set_0")
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(HERE, case, "model.onnx"))
    for k, (n, a) in enumerate(inputs):
        with open(os.path.join(d, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())


def f32(*shape):
    return RNG.uniform(-2, 2, size=shape).astype(np.float32)


def main():
    write("gather_i64_neg", [helper.make_node("Gather", ["x", "i"], ["y"], axis=1)],
          [("x", f32(3, 4, 5)), ("i", np.array([[-1, 0, 3], [2, -4, 1]], np.int64))],
          [("y", np.float32, [3, 2, 3, 5])])
    write("gather_i32_axis_last", [helper.make_node("Gather", ["x", "i"], ["y"], axis=-1)],
          [("x", RNG.integers(-1 << 40, 1 << 40, size=(2, 3, 4)).astype(np.int64)),
           ("i", np.array([-1, 0, 2], np.int32))],
          [("y", np.int64, [2, 3, 3])])
    write("gather_bool", [helper.make_node("Gather", ["x", "k"], ["y"], axis=0)],
          [("x", RNG.integers(0, 2, size=(4, 3)).astype(np.bool_))],
          [("y", np.bool_, [3])], inits=[("k", np.int64(-1))])
    write("where_bcast", [helper.make_node("Where", ["c", "a", "b"], ["y"])],
          [("c", np.array([[True], [False], [True]])), ("a", f32(2, 1, 4)), ("b", f32(4))],
          [("y", np.float32, [2, 3, 4])])
    write("where_i64", [helper.make_node("Where", ["c", "a", "b"], ["y"])],
          [("c", np.array([True, False, False, True])),
           ("a", RNG.integers(-1 << 40, 1 << 40, size=(2, 4)).astype(np.int64)),
           ("b", np.array([-7], np.int64))],
          [("y", np.int64, [2, 4])])
    x = np.array([[-2.75, -1.0, -0.5, 0.0, 0.25], [0.5, 1.0, 1.5, 3.99, 1e6]], np.float32)
    to = TensorProto
    write("cast_round_trips", [
        helper.make_node("Cast", ["x"], ["xi"], to=to.INT64),
        helper.make_node("Cast", ["xi"], ["y_f_i64_f"], to=to.FLOAT),
        helper.make_node("Cast", ["x"], ["xb"], to=to.BOOL),
        helper.make_node("Cast", ["xb"], ["xb32"], to=to.INT32),
        helper.make_node("Cast", ["xb32"], ["y_f_b_i32_i64"], to=to.INT64),
        helper.make_node("Cast", ["m"], ["mb"], to=to.BOOL),
        helper.make_node("Cast", ["mb"], ["y_i64_b_f"], to=to.FLOAT),
        helper.make_node("Cast", ["x"], ["x32"], to=to.INT32),
        helper.make_node("Cast", ["x32"], ["y_f_i32_f"], to=to.FLOAT),
        helper.make_node("CastLike", ["x", "m"], ["y_like_i64"]),
    ], [("x", x), ("m", np.array([0, 1, 0, 5, -3], np.int64))],
        [("y_f_i64_f", np.float32, [2, 5]), ("y_f_b_i32_i64", np.int64, [2, 5]),
         ("y_i64_b_f", np.float32, [5]), ("y_f_i32_f", np.float32, [2, 5]),
         ("y_like_i64", np.int64, [2, 5])])
    a = RNG.integers(-3, 3, size=(2, 3)).astype(np.int64)
    b = RNG.integers(-3, 3, size=(3,)).astype(np.int64)
    fa = np.round(f32(2, 3)).astype(np.float32)
    write("compare", [
        helper.make_node("Equal", ["a", "b"], ["eq"]),
        helper.make_node("Less", ["a", "b"], ["lt"]),
        helper.make_node("Greater", ["fa", "fb"], ["gt"]),
        helper.make_node("LessOrEqual", ["fa", "fb"], ["le"]),
        helper.make_node("GreaterOrEqual", ["a", "b"], ["ge"]),
        helper.make_node("Not", ["eq"], ["ne"]),
    ], [("a", a), ("b", b), ("fa", fa), ("fb", np.float32([0.0, 1.0, -1.0]))],
        [(n, np.bool_, [2, 3]) for n in ("eq", "lt", "gt", "le", "ge", "ne")])
    ids = RNG.integers(1, 1000, size=(2, 8)).astype(np.int64)
    ids[1, 5:] = 0  # padding
    write("bert_mask", [
        helper.make_node("Equal", ["ids", "zero"], ["pad"]),
        helper.make_node("Unsqueeze", ["pad", "ax1"], ["pad1"]),
        helper.make_node("Unsqueeze", ["pad1", "ax2"], ["pad2"]),
        helper.make_node("Expand", ["pad2", "shape"], ["padx"]),
        helper.make_node("ConstantOfShape", ["one_shape"], ["neg"],
                         value=numpy_helper.from_array(np.float32([-1e4]))),
        helper.make_node("Where", ["padx", "neg", "zeros"], ["bias"]),
        helper.make_node("Add", ["scores", "bias"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["probs"], axis=-1),
    ], [("ids", ids), ("scores", f32(2, 1, 8, 8))], [("probs", np.float32, [2, 1, 8, 8])],
        inits=[("zero", np.int64(0)), ("ax1", np.int64([1])), ("ax2", np.int64([2])),
               ("shape", np.int64([2, 1, 8, 8])), ("one_shape", np.int64([1])),
               ("zeros", np.float32([0.0]))])
    write("slice", [
        helper.make_node("Slice", ["x", "s", "e", "ax", "st"], ["y"]),
        helper.make_node("Slice", ["i", "s2", "e2", "ax2"], ["yi"]),
    ], [("x", f32(4, 6, 5)), ("i", RNG.integers(0, 9, size=(3, 7)).astype(np.int64))],
        [("y", np.float32, [2, 3, 5]), ("yi", np.int64, [3, 4])],
        inits=[("s", np.int64([1, -1])), ("e", np.int64([100, -1000])),
               ("ax", np.int64([0, -2])), ("st", np.int64([2, -2])),
               ("s2", np.int32([-5])), ("e2", np.int32([-1])), ("ax2", np.int32([1]))])
    write("reduce", [
        helper.make_node("ReduceMean", ["x"], ["mean"], axes=[-1], keepdims=1),
        helper.make_node("ReduceSum", ["x", "axes"], ["sum"], keepdims=0),
        helper.make_node("ReduceMax", ["x"], ["max"], keepdims=1),
        helper.make_node("ReduceSum", ["x"], ["same"], noop_with_empty_axes=1),
    ], [("x", f32(2, 3, 4))],
        [("mean", np.float32, [2, 3, 1]), ("sum", np.float32, [3]),
         ("max", np.float32, [1, 1, 1]), ("same", np.float32, [2, 3, 4])],
        inits=[("axes", np.int64([0, 2]))])
    c = np.float32
    write("layernorm_gelu", [
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[-1], keepdims=1),
        helper.make_node("Sub", ["x", "m"], ["d"]),
        helper.make_node("Pow", ["d", "two"], ["d2"]),
        helper.make_node("ReduceMean", ["d2"], ["v"], axes=[-1], keepdims=1),
        helper.make_node("Add", ["v", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["sd"]),
        helper.make_node("Div", ["d", "sd"], ["n"]),
        helper.make_node("Mul", ["n", "gamma"], ["ng"]),
        helper.make_node("Add", ["ng", "beta"], ["ln"]),
        helper.make_node("Div", ["ln", "sqrt2"], ["q"]),
        helper.make_node("Erf", ["q"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["e1"]),
        helper.make_node("Mul", ["ln", "e1"], ["p"]),
        helper.make_node("Mul", ["p", "half"], ["y"]),
    ], [("x", f32(2, 4, 16))], [("y", np.float32, [2, 4, 16])],
        inits=[("two", c(2.0)), ("eps", c(1e-12)), ("gamma", f32(16)), ("beta", f32(16)),
               ("sqrt2", c(np.sqrt(2.0))), ("one", c(1.0)), ("half", c(0.5))])


if __name__ == "__main__":
    main()
