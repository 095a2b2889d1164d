#!/usr/bin/env python3
"""Writes a BERT-base encoder as ONNX, built node by node with onnx.helper, in the layout
PyTorch's exporter gives transformers' BertModel at opset 14 (before LayerNormalization was an
ONNX op): 12 layers, hidden 768, 12 heads of 64, intermediate 3072, vocabulary 30522, 512
positions, sequence 128, batch 1. Weights are random (numpy, a fixed seed), so the model
computes nothing meaningful; its shapes, operators and FLOPs are BERT-base's.

What the exporter writes and this reproduces:
  - embeddings: Gather on the word, position and token-type tables, the position ids sliced
    from a [1,512] buffer by the sequence length read with Shape/Gather, two Adds;
  - LayerNorm decomposed: ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul, Add;
  - the extended attention mask: Unsqueeze, Unsqueeze, Cast, Sub from 1, Mul by float32 min;
  - per layer: Q, K, V as MatMul + Add; each split into heads by a Reshape whose shape is a
    Concat of Shape/Gather/Unsqueeze (batch, sequence) and constants (12, 64), then Transpose;
    scores MatMul(Q, K^T), Div by sqrt(64), Add mask, Softmax, MatMul with V, Transpose back,
    Reshape by another Shape/Gather/Concat chain to [batch, sequence, 768]; the output dense
    MatMul + Add, residual Add, LayerNorm; the feed-forward MatMul + Add, Gelu as
    x * 0.5 * (1 + Erf(x / sqrt(2))), MatMul + Add, residual Add, LayerNorm;
  - the pooler: Gather of token 0, Gemm (transB), Tanh.
Inputs input_ids, attention_mask, token_type_ids (int64 [1,128]); outputs last_hidden_state
[1,128,768] and pooler_output [1,768]. With --dynamic the batch and sequence dims are named
(batch, sequence), as an export with dynamic_axes makes them; with --batch N the batch is N
(static).

With --inputs DIR it also writes one input as DIR/<input>.npy: token ids drawn from the
vocabulary (the same seed), the attention mask all ones at batch 1 (at batch N sequence i
padded after 128 - 12 i tokens), token types the first half 0 and the second half 1.

  make_encoder.py OUT.onnx [--seed 0] [--layers 12] [--dynamic] [--batch 1] [--inputs DIR]
                  [--minilm]
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN, HEADS, HEAD_SIZE, INTERMEDIATE = 768, 12, 64, 3072
VOCAB, POSITIONS, TYPES, SEQ = 30522, 512, 2, 128


class Builder:
    """Accumulates nodes and initializers; names every value uniquely, as the exporter does
    (onnx::Name_N)."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def name(self, hint):
        self.count += 1
        return f"/{hint}_{self.count}"

    def node(self, op, inputs, hint=None, **attrs):
        out = self.name(hint or op)
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def const(self, value, hint="Constant"):
        name = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(self, shape, hint, mean=0.0, std=0.02):
        data = self.rng.normal(mean, std, size=shape).astype(np.float32)
        return self.const(data, hint)

    def layer_norm(self, x, prefix):
        mean = self.node("ReduceMean", [x], f"{prefix}/ReduceMean", axes=[-1], keepdims=1)
        centred = self.node("Sub", [x, mean], f"{prefix}/Sub")
        square = self.node("Pow", [centred, self.const(np.float32(2.0))], f"{prefix}/Pow")
        var = self.node("ReduceMean", [square], f"{prefix}/ReduceMean", axes=[-1], keepdims=1)
        var_eps = self.node("Add", [var, self.const(np.float32(1e-12))], f"{prefix}/Add")
        std = self.node("Sqrt", [var_eps], f"{prefix}/Sqrt")
        normed = self.node("Div", [centred, std], f"{prefix}/Div")
        gamma = self.weight([HIDDEN], f"{prefix}.weight", mean=1.0)
        beta = self.weight([HIDDEN], f"{prefix}.bias")
        scaled = self.node("Mul", [normed, gamma], f"{prefix}/Mul")
        return self.node("Add", [scaled, beta], f"{prefix}/Add")

    def linear(self, x, n_in, n_out, prefix):
        w = self.weight([n_in, n_out], f"{prefix}.weight")  # stored transposed, as exported
        b = self.weight([n_out], f"{prefix}.bias")
        mm = self.node("MatMul", [x, w], f"{prefix}/MatMul")
        return self.node("Add", [b, mm], f"{prefix}/Add")

    def dim(self, x, index, prefix):
        """Shape(x)[index] as a 1-element tensor: Shape, Gather (scalar index), Unsqueeze."""
        shape = self.node("Shape", [x], f"{prefix}/Shape")
        d = self.node("Gather", [shape, self.const(np.int64(index))], f"{prefix}/Gather", axis=0)
        return self.node("Unsqueeze", [d, self.const(np.array([0], np.int64))],
                         f"{prefix}/Unsqueeze")

    def split_heads(self, x, prefix, perm):
        batch, seq = self.dim(x, 0, prefix), self.dim(x, 1, prefix)
        shape = self.node("Concat", [batch, seq, self.const(np.array([HEADS], np.int64)),
                                     self.const(np.array([HEAD_SIZE], np.int64))],
                          f"{prefix}/Concat", axis=0)
        heads = self.node("Reshape", [x, shape], f"{prefix}/Reshape")
        return self.node("Transpose", [heads], f"{prefix}/Transpose", perm=perm)

    def attention(self, h, mask, prefix):
        q = self.split_heads(self.linear(h, HIDDEN, HIDDEN, f"{prefix}/query"), f"{prefix}/q",
                             [0, 2, 1, 3])
        k = self.split_heads(self.linear(h, HIDDEN, HIDDEN, f"{prefix}/key"), f"{prefix}/k",
                             [0, 2, 3, 1])
        v = self.split_heads(self.linear(h, HIDDEN, HIDDEN, f"{prefix}/value"), f"{prefix}/v",
                             [0, 2, 1, 3])
        scores = self.node("MatMul", [q, k], f"{prefix}/MatMul")
        scaled = self.node("Div", [scores, self.const(np.float32(np.sqrt(HEAD_SIZE)))],
                           f"{prefix}/Div")
        masked = self.node("Add", [scaled, mask], f"{prefix}/Add")
        probs = self.node("Softmax", [masked], f"{prefix}/Softmax", axis=-1)
        ctx = self.node("MatMul", [probs, v], f"{prefix}/MatMul")
        ctx = self.node("Transpose", [ctx], f"{prefix}/Transpose", perm=[0, 2, 1, 3])
        batch, seq = self.dim(ctx, 0, f"{prefix}/ctx"), self.dim(ctx, 1, f"{prefix}/ctx")
        shape = self.node("Concat", [batch, seq, self.const(np.array([HIDDEN], np.int64))],
                          f"{prefix}/Concat", axis=0)
        return self.node("Reshape", [ctx, shape], f"{prefix}/Reshape")

    def gelu(self, x, prefix):
        div = self.node("Div", [x, self.const(np.float32(1.4142135381698608))], f"{prefix}/Div")
        erf = self.node("Erf", [div], f"{prefix}/Erf")
        one = self.node("Add", [erf, self.const(np.float32(1.0))], f"{prefix}/Add")
        mul = self.node("Mul", [x, one], f"{prefix}/Mul")
        return self.node("Mul", [mul, self.const(np.float32(0.5))], f"{prefix}/Mul")

    def layer(self, h, mask, i):
        p = f"encoder/layer.{i}"
        ctx = self.attention(h, mask, f"{p}/attention/self")
        dense = self.linear(ctx, HIDDEN, HIDDEN, f"{p}/attention/output/dense")
        res = self.node("Add", [dense, h], f"{p}/attention/output/Add")
        h1 = self.layer_norm(res, f"{p}/attention/output/LayerNorm")
        inter = self.gelu(self.linear(h1, HIDDEN, INTERMEDIATE, f"{p}/intermediate/dense"),
                          f"{p}/intermediate/intermediate_act_fn")
        out = self.linear(inter, INTERMEDIATE, HIDDEN, f"{p}/output/dense")
        res = self.node("Add", [out, h1], f"{p}/output/Add")
        return self.layer_norm(res, f"{p}/output/LayerNorm")


def build(seed, layers, dynamic, batch_size=1):
    b = Builder(seed)
    ids, mask_in, types = "input_ids", "attention_mask", "token_type_ids"
    # Embeddings.
    word = b.node("Gather", [b.weight([VOCAB, HIDDEN], "embeddings.word_embeddings.weight"), ids],
                  "embeddings/word_embeddings/Gather", axis=0)
    tok = b.node("Gather", [b.weight([TYPES, HIDDEN], "embeddings.token_type_embeddings.weight"),
                            types], "embeddings/token_type_embeddings/Gather", axis=0)
    seq_len = b.dim(ids, 1, "embeddings")
    position_ids = b.const(np.arange(POSITIONS, dtype=np.int64)[None, :], "embeddings.position_ids")
    pos_ids = b.node("Slice", [position_ids, b.const(np.array([0], np.int64)), seq_len,
                               b.const(np.array([1], np.int64)),
                               b.const(np.array([1], np.int64))], "embeddings/Slice")
    pos = b.node("Gather", [b.weight([POSITIONS, HIDDEN], "embeddings.position_embeddings.weight"),
                            pos_ids], "embeddings/position_embeddings/Gather", axis=0)
    emb = b.node("Add", [b.node("Add", [word, tok], "embeddings/Add"), pos], "embeddings/Add")
    h = b.layer_norm(emb, "embeddings/LayerNorm")
    # Extended attention mask: (1 - mask[:, None, None, :]) * float32 min.
    m = b.node("Unsqueeze", [mask_in, b.const(np.array([1], np.int64))], "Unsqueeze")
    m = b.node("Unsqueeze", [m, b.const(np.array([2], np.int64))], "Unsqueeze")
    m = b.node("Cast", [m], "Cast", to=TensorProto.FLOAT)
    m = b.node("Sub", [b.const(np.float32(1.0)), m], "Sub")
    mask = b.node("Mul", [m, b.const(np.float32(np.finfo(np.float32).min))], "Mul")
    for i in range(layers):
        h = b.layer(h, mask, i)
    # Pooler: tanh(dense(h[:, 0])).
    first = b.node("Gather", [h, b.const(np.int64(0))], "pooler/Gather", axis=1)
    pooled = b.node("Gemm", [first, b.weight([HIDDEN, HIDDEN], "pooler.dense.weight"),
                             b.weight([HIDDEN], "pooler.dense.bias")], "pooler/dense/Gemm",
                    alpha=1.0, beta=1.0, transB=1)
    pooled = b.node("Tanh", [pooled], "pooler/activation/Tanh")
    # Name the outputs as the exporter does.
    b.nodes.append(helper.make_node("Identity", [h], ["last_hidden_state"]))
    b.nodes.append(helper.make_node("Identity", [pooled], ["pooler_output"]))
    batch, seq = ("batch", "sequence") if dynamic else (batch_size, SEQ)
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, [batch, seq])
              for n in (ids, mask_in, types)]
    outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                             [batch, seq, HIDDEN]),
               helper.make_tensor_value_info("pooler_output", TensorProto.FLOAT, [batch, HIDDEN])]
    graph = helper.make_graph(b.nodes, "main_graph", inputs, outputs, b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)],
                              producer_name="runnel bench/models/make_encoder.py")
    model.ir_version = 8
    return model


def write_inputs(directory, seed, batch=1):
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(seed)
    types = np.zeros((batch, SEQ), np.int64)
    types[:, SEQ // 2:] = 1
    # Sequence i of a batch keeps SEQ - 12 i tokens (padded as a tokenizer pads a batch of
    # sentences of different lengths); the first keeps all, as at batch 1.
    mask = np.ones((batch, SEQ), np.int64)
    for i in range(1, batch):
        mask[i, max(1, SEQ - 12 * i):] = 0
    for name, data in [("input_ids", rng.integers(0, VOCAB, size=(batch, SEQ), dtype=np.int64)),
                       ("attention_mask", mask),
                       ("token_type_ids", types)]:
        np.save(os.path.join(directory, name + ".npy"), data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--dynamic", action="store_true", help="named batch and sequence dims")
    ap.add_argument("--batch", type=int, default=1,
                    help="static batch size (the inputs' sequences then padded to different "
                         "lengths by the attention mask)")
    ap.add_argument("--inputs", help="also write an input, as DIR/<name>.npy")
    ap.add_argument("--minilm", action="store_true",
                    help="MiniLM-L12/L6's widths (all-MiniLM-L6-v2 with --layers 6): hidden 384, "
                         "12 heads of 32, intermediate 1536")
    a = ap.parse_args()
    if a.minilm:
        global HIDDEN, HEADS, HEAD_SIZE, INTERMEDIATE
        HIDDEN, HEADS, HEAD_SIZE, INTERMEDIATE = 384, 12, 32, 1536
    if a.batch < 1:
        ap.error("--batch: at least 1")
    model = build(a.seed, a.layers, a.dynamic, a.batch)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, a.out)
    if a.inputs:
        write_inputs(a.inputs, a.seed, a.batch)


if __name__ == "__main__":
    main()
