#!/usr/bin/env python3
"""Writes tests/cpu/attention_heads.onnx: the attention of one BERT layer as PyTorch's exporter
writes it (transformers' BertSelfAttention: the head Transposes of Q [0, 2, 1, 3], K
[0, 2, 3, 1] and V [0, 2, 1, 3], MatMul(Q, K^T), Div by sqrt(head size), Add of the extended
mask [B, 1, 1, S] made by Unsqueeze, Cast, Sub from 1, Mul by float32 min, Softmax, MatMul with
V), at batch 2, 4 heads of 32, sequence 128: large enough that the LATENCY stream gives the
attention a team (plugins/cpu/team.c's rule). Q, K and V are the one input x [2, 128, 4, 32]
(the tests fill input 0 only); the mask pads the last 40 tokens of the second sequence. No
weights. test_cpu_attention checks the fused node's heads split across the team against REF.
Run with the bench venv's Python:
  .cache/venv-bench/bin/python tests/cpu/make_attention_heads_model.py"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
B, S, H, D = 2, 128, 4, 32

attention = np.ones((B, S), np.int64)
attention[1, S - 40:] = 0
inits = [
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
    helper.make_node("Transpose", ["x"], ["q"], perm=[0, 2, 1, 3]),
    helper.make_node("Transpose", ["x"], ["kt"], perm=[0, 2, 3, 1]),
    helper.make_node("Transpose", ["x"], ["v"], perm=[0, 2, 1, 3]),
    helper.make_node("MatMul", ["q", "kt"], ["scores"]),
    helper.make_node("Div", ["scores", "sqrt_d"], ["scaled"]),
    helper.make_node("Add", ["scaled", "mask"], ["masked"]),
    helper.make_node("Softmax", ["masked"], ["probs"], axis=-1),
    helper.make_node("MatMul", ["probs", "v"], ["y"]),
]
graph = helper.make_graph(
    nodes, "attention_heads",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, H, D])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, H, S, D])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(HERE, "attention_heads.onnx"))
