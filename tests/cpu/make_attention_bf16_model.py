#!/usr/bin/env python3
"""Writes tests/cpu/attention_bf16.onnx: one self-attention block whose Q, K and V come from
products, as an encoder's do, so that in bf16 the CPU device reads them as the products write
them (plain bf16, through Reshape views) and runs the attention's heads in bf16
(plugins/cpu/attention.c, bf16 heads). Batch 2, sequence 77 (odd, and not a multiple of the
kernel's 8 rows or 32 columns), 4 heads of 24 (hidden 96): every tail of the bf16 kernel runs.
x [2, 77, 96] -> MatMul by Wq, Wk, Wv -> Reshape [2, 77, 4, 24] -> the exporter's head
Transposes -> MatMul(Q, K^T), Div by sqrt(24), Add of the padding mask [2, 1, 1, 77] (the
last 20 tokens of the second sequence, float32 min) -> Softmax -> MatMul with V -> Transpose,
Reshape [2, 77, 96] -> MatMul by Wo -> y.

The weights are multiples of the identity by powers of two (Wq = I/2, Wk = 2I, Wv = Wo = I),
exact in bf16, so that the products add no rounding of their own and test_cpu_attention can
bound the bf16 result from the input's rounding alone: Q = x/2, K = 2x, V = x with x rounded
to bf16, scores x_i . x_j / sqrt(24) (up to 4.9 for the tests' inputs in [-1, 1)), and y the
attention's output itself (the three products differ so that merge_duplicates keeps them).
Also tests/cpu/attention_bf16_tail.onnx, the same without Wo: the attention is the model's
tail, which the bf16 policy keeps writing f32. Run with the bench venv's Python:
  .cache/venv-bench/bin/python tests/cpu/make_attention_bf16_model.py"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
B, S, H, D = 2, 77, 4, 24
E = H * D

attention = np.ones((B, S), np.int64)
attention[1, S - 20:] = 0
eye = np.eye(E, dtype=np.float32)
inits = [
    numpy_helper.from_array(0.5 * eye, "wq"),
    numpy_helper.from_array(2.0 * eye, "wk"),
    numpy_helper.from_array(eye, "wv"),
    numpy_helper.from_array(eye.copy(), "wo"),
    numpy_helper.from_array(np.array([B, S, H, D], np.int64), "heads"),
    numpy_helper.from_array(np.array([B, S, E], np.int64), "merged"),
    numpy_helper.from_array(attention, "attention_mask"),
    numpy_helper.from_array(np.array([1], np.int64), "axis1"),
    numpy_helper.from_array(np.array([2], np.int64), "axis2"),
    numpy_helper.from_array(np.array(1.0, np.float32), "one"),
    numpy_helper.from_array(np.array(np.finfo(np.float32).min, np.float32), "min"),
    numpy_helper.from_array(np.array(np.sqrt(D), np.float32), "sqrt_d"),
]
nodes = [
    helper.make_node("Unsqueeze", ["attention_mask", "axis1"], ["m1"]),
    helper.make_node("Unsqueeze", ["m1", "axis2"], ["m2"]),
    helper.make_node("Cast", ["m2"], ["m3"], to=TensorProto.FLOAT),
    helper.make_node("Sub", ["one", "m3"], ["m4"]),
    helper.make_node("Mul", ["m4", "min"], ["mask"]),
    helper.make_node("MatMul", ["x", "wq"], ["xq"]),
    helper.make_node("MatMul", ["x", "wk"], ["xk"]),
    helper.make_node("MatMul", ["x", "wv"], ["xv"]),
    helper.make_node("Reshape", ["xq", "heads"], ["qh"]),
    helper.make_node("Reshape", ["xk", "heads"], ["kh"]),
    helper.make_node("Reshape", ["xv", "heads"], ["vh"]),
    helper.make_node("Transpose", ["qh"], ["q"], perm=[0, 2, 1, 3]),
    helper.make_node("Transpose", ["kh"], ["kt"], perm=[0, 2, 3, 1]),
    helper.make_node("Transpose", ["vh"], ["v"], perm=[0, 2, 1, 3]),
    helper.make_node("MatMul", ["q", "kt"], ["scores"]),
    helper.make_node("Div", ["scores", "sqrt_d"], ["scaled"]),
    helper.make_node("Add", ["scaled", "mask"], ["masked"]),
    helper.make_node("Softmax", ["masked"], ["probs"], axis=-1),
    helper.make_node("MatMul", ["probs", "v"], ["ctx"]),
    helper.make_node("Transpose", ["ctx"], ["ct"], perm=[0, 2, 1, 3]),
    helper.make_node("Reshape", ["ct", "merged"], ["cm"]),
    helper.make_node("MatMul", ["cm", "wo"], ["y"]),
]


def save(name, nodes, inits):
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, E])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, S, E])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(HERE, name + ".onnx"))


save("attention_bf16", nodes, inits)
# attention_bf16_tail.onnx: the same without Wo, so that the attention is the graph's tail
# (the bf16 policy, transforms/precision.c, has it write f32) and y its merged output.
tail = nodes[:-2] + [helper.make_node("Reshape", ["ct", "merged"], ["y"])]
save("attention_bf16_tail", tail, [i for i in inits if i.name != "wo"])
