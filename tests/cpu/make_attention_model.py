#!/usr/bin/env python3
"""Writes tests/cpu/attention_encoder.onnx (and attention_causal.onnx, below): one BERT encoder layer in the layout PyTorch's
exporter gives transformers' BertModel (bench/models/make_encoder.py's Builder: the head
Reshapes by Shape/Gather/Unsqueeze/Concat chains, Transposes, MatMul(Q, K^T), Div by sqrt(16),
Add of the extended mask [B, 1, 1, S], Softmax, MatMul with V; LayerNorm and Gelu decomposed),
narrowed to hidden 64, 4 heads of 16, intermediate 128, batch 2, sequence 16. Input x
[2, 16, 64] f32 (the embeddings' output); the attention mask is a constant [2, 16] with the
last 5 tokens of the second sequence padded, through the exporter's Unsqueeze, Cast, Sub,
Mul by float32 min. Weights from numpy's default_rng(0), std 0.3 so that the softmax is far
from uniform. test_cpu compiles it on CPU (one ScaledDotProductAttention, transforms/
fuse_attention.c) and compares with REF. Run with the bench venv's Python:
  .cache/venv-bench/bin/python tests/cpu/make_attention_model.py"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../../bench/models"))
import make_encoder as enc  # noqa: E402

enc.HIDDEN, enc.HEADS, enc.HEAD_SIZE, enc.INTERMEDIATE = 64, 4, 16, 128
BATCH, SEQ = 2, 16


class Builder(enc.Builder):
    def weight(self, shape, hint, mean=0.0, std=0.3):
        return super().weight(shape, hint, mean, std)


b = Builder(0)
attention = np.ones((BATCH, SEQ), np.int64)
attention[1, SEQ - 5:] = 0
m = b.node("Unsqueeze", [b.const(attention, "attention_mask"), b.const(np.array([1], np.int64))],
           "Unsqueeze")
m = b.node("Unsqueeze", [m, b.const(np.array([2], np.int64))], "Unsqueeze")
m = b.node("Cast", [m], "Cast", to=TensorProto.FLOAT)
m = b.node("Sub", [b.const(np.float32(1.0)), m], "Sub")
mask = b.node("Mul", [m, b.const(np.float32(np.finfo(np.float32).min))], "Mul")
h = b.layer("x", mask, 0)
b.nodes.append(helper.make_node("Identity", [h], ["y"]))
g = helper.make_graph(
    b.nodes, "attention_encoder",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, SEQ, enc.HIDDEN])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [BATCH, SEQ, enc.HIDDEN])], b.inits)
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(HERE, "attention_encoder.onnx"))

# tests/cpu/attention_causal.onnx: x [2, 16, 64] split into 4 heads of 16 as Q ([0, 2, 1, 3]),
# K^T and V constants [2, 4, 16, 16] (so the fused node reads them as they are, qkv_layout
# BHSD), Mul by 0.25, Add of a causal mask [1, 1, 16, 16] (0 on and below the diagonal,
# -1e9 above: broadcast over batch and heads), Softmax, MatMul, back to [2, 16, 64].
rng = np.random.default_rng(1)
consts = [helper.make_tensor(n, TensorProto.FLOAT, d, v.ravel().tolist()) for n, d, v in [
    ("kt", [BATCH, 4, 16, SEQ], rng.standard_normal((BATCH, 4, 16, SEQ)).astype(np.float32)),
    ("v", [BATCH, 4, SEQ, 16], rng.standard_normal((BATCH, 4, SEQ, 16)).astype(np.float32)),
    ("mask", [1, 1, SEQ, SEQ], np.triu(np.full((SEQ, SEQ), -1e9, np.float32), 1)),
    ("scale", [], np.array(0.25, np.float32))]]
consts += [helper.make_tensor("heads", TensorProto.INT64, [4], [BATCH, SEQ, 4, 16]),
           helper.make_tensor("merged", TensorProto.INT64, [3], [BATCH, SEQ, 64])]
nodes = [helper.make_node("Reshape", ["x", "heads"], ["xh"]),
         helper.make_node("Transpose", ["xh"], ["q"], perm=[0, 2, 1, 3]),
         helper.make_node("MatMul", ["q", "kt"], ["s"]),
         helper.make_node("Mul", ["s", "scale"], ["ss"]),
         helper.make_node("Add", ["ss", "mask"], ["sm"]),
         helper.make_node("Softmax", ["sm"], ["p"], axis=-1),
         helper.make_node("MatMul", ["p", "v"], ["c"]),
         helper.make_node("Transpose", ["c"], ["ct"], perm=[0, 2, 1, 3]),
         helper.make_node("Reshape", ["ct", "merged"], ["y"])]
g = helper.make_graph(
    nodes, "attention_causal",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, SEQ, 64])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [BATCH, SEQ, 64])], consts)
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(HERE, "attention_causal.onnx"))
