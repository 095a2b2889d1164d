"""Writes a BERT-layout transformer encoder as ONNX, the way PyTorch's exporter lays
out a BertModel: word + position + token-type embeddings (Gather), LayerNorm written
out as ReduceMean/Sub/Pow/Sqrt/Div, multi-head self-attention with the attention mask
turned into an additive bias, an erf-GELU feed-forward block, residuals, and a pooler
(first token, Dense, Tanh). Weights are random with a fixed seed; shapes are those of
a small BERT (hidden 64, 4 heads, 2 layers, intermediate 128, vocabulary 100).

    python make_encoder.py OUT.onnx [--seq 16]
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN, HEADS, LAYERS, FFN, VOCAB, MAX_POS, TYPES = 64, 4, 2, 128, 100, 64, 2


class Builder:
    def __init__(self, rng):
        self.rng, self.nodes, self.inits, self.n = rng, [], [], 0

    def name(self, stem):
        self.n += 1
        return f"{stem}_{self.n}"

    def weight(self, stem, shape, scale=0.05):
        name = self.name(stem)
        data = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(data, name))
        return name

    def const(self, stem, array):
        name = self.name(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type, inputs, **attrs):
        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=self.name(op_type), **attrs))
        return out

    def dense(self, x, n_in, n_out, stem):
        w = self.weight(stem + "_weight", (n_in, n_out))
        b = self.weight(stem + "_bias", (n_out,))
        return self.op("Add", [self.op("MatMul", [x, w]), b])

    def layer_norm(self, x, stem):
        mean = self.op("ReduceMean", [x], axes=[-1])
        centered = self.op("Sub", [x, mean])
        var = self.op("ReduceMean", [self.op("Pow", [centered, self.const("two", np.float32(2))])], axes=[-1])
        std = self.op("Sqrt", [self.op("Add", [var, self.const("eps", np.float32(1e-12))])])
        normed = self.op("Div", [centered, std])
        gamma = self.const(stem + "_gamma", (1 + 0.1 * self.rng.standard_normal(HIDDEN)).astype(np.float32))
        return self.op("Add", [self.op("Mul", [normed, gamma]), self.weight(stem + "_beta", (HIDDEN,))])

    def gelu(self, x):
        scaled = self.op("Div", [x, self.const("sqrt2", np.float32(np.sqrt(2.0)))])
        erf1 = self.op("Add", [self.op("Erf", [scaled]), self.const("one", np.float32(1))])
        return self.op("Mul", [self.op("Mul", [x, erf1]), self.const("half", np.float32(0.5))])

    def heads(self, x, seq):
        shaped = self.op("Reshape", [x, self.const("shape", np.array([1, seq, HEADS, HIDDEN // HEADS], np.int64))])
        return self.op("Transpose", [shaped], perm=[0, 2, 1, 3])


def build(seq):
    b = Builder(np.random.default_rng(16))
    ids, mask, types = "input_ids", "attention_mask", "token_type_ids"
    positions = b.const("position_ids", np.arange(seq, dtype=np.int64).reshape(1, seq))
    emb = b.op("Add", [b.op("Gather", [b.weight("word_embeddings", (VOCAB, HIDDEN)), ids]),
                       b.op("Gather", [b.weight("position_embeddings", (MAX_POS, HIDDEN)), positions])])
    emb = b.op("Add", [emb, b.op("Gather", [b.weight("token_type_embeddings", (TYPES, HIDDEN)), types])])
    x = b.layer_norm(emb, "embeddings_ln")
    # The additive mask: (1 - mask) * -10000, shaped [batch, 1, 1, seq].
    m = b.op("Cast", [b.op("Unsqueeze", [mask, b.const("axes", np.array([1, 2], np.int64))])], to=TensorProto.FLOAT)
    bias = b.op("Mul", [b.op("Sub", [b.const("one", np.float32(1)), m]), b.const("neg", np.float32(-10000))])
    for i in range(LAYERS):
        q = b.heads(b.dense(x, HIDDEN, HIDDEN, f"l{i}_query"), seq)
        k = b.heads(b.dense(x, HIDDEN, HIDDEN, f"l{i}_key"), seq)
        v = b.heads(b.dense(x, HIDDEN, HIDDEN, f"l{i}_value"), seq)
        scores = b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])])
        scores = b.op("Add", [b.op("Div", [scores, b.const("scale", np.float32(np.sqrt(HIDDEN // HEADS)))]), bias])
        ctx = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])
        ctx = b.op("Reshape", [b.op("Transpose", [ctx], perm=[0, 2, 1, 3]),
                               b.const("shape", np.array([1, seq, HIDDEN], np.int64))])
        x = b.layer_norm(b.op("Add", [b.dense(ctx, HIDDEN, HIDDEN, f"l{i}_attn_out"), x]), f"l{i}_attn_ln")
        h = b.gelu(b.dense(x, HIDDEN, FFN, f"l{i}_intermediate"))
        x = b.layer_norm(b.op("Add", [b.dense(h, FFN, HIDDEN, f"l{i}_output"), x]), f"l{i}_out_ln")
    first = b.op("Squeeze", [b.op("Slice", [x, b.const("s", np.array([0], np.int64)), b.const("e", np.array([1], np.int64)),
                                            b.const("a", np.array([1], np.int64))]), b.const("axes", np.array([1], np.int64))])
    pooled = b.op("Tanh", [b.dense(first, HIDDEN, HIDDEN, "pooler")])
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="out_hidden"))
    b.nodes.append(helper.make_node("Identity", [pooled], ["pooler_output"], name="out_pooled"))
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, [1, seq]) for n in (ids, mask, types)]
    outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, seq, HIDDEN]),
               helper.make_tensor_value_info("pooler_output", TensorProto.FLOAT, [1, HIDDEN])]
    graph = helper.make_graph(b.nodes, "bert_encoder", inputs, outputs, b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="runnel-tests")
    onnx.checker.check_model(model, full_check=True)
    return model


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--seq", type=int, default=16)
    a = p.parse_args()
    onnx.save(build(a.seq), a.out)
