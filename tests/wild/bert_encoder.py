"""A BERT-layout encoder (embeddings, one self-attention layer, the feed-forward
block) written with onnx.helper in the form PyTorch's exporter gives Hugging
Face's BertModel at opset 17, for ONNX Runtime's transformer optimizer to fuse
into its contrib ops (imported by make_models.py)."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

BATCH, SEQ, HIDDEN, HEADS, FFN, VOCAB, TYPES = 2, 6, 16, 2, 32, 30, 2


def build(rng):
    head = HIDDEN // HEADS
    inits = []
    nodes = []

    def w(name, *shape, scale=0.2):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32),
                                             name))
        return name

    def const(name, value, dtype=np.float32):
        inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], name=out + "_node", **attrs))
        return out

    def layernorm(x, name):
        g = w(name + ".weight", HIDDEN, scale=0.1)
        inits[-1].CopyFrom(numpy_helper.from_array(
            (1 + rng.standard_normal(HIDDEN) * 0.1).astype(np.float32), g))
        b = w(name + ".bias", HIDDEN, scale=0.1)
        return node("LayerNormalization", [x, g, b], name + ".out", axis=-1, epsilon=1e-12)

    def linear(x, name, n_in, n_out):
        mm = node("MatMul", [x, w(name + ".weight", n_in, n_out)], name + ".mm")
        return node("Add", [w(name + ".bias", n_out, scale=0.1), mm], name + ".out")

    # embeddings
    we = node("Gather", [w("word_embeddings", VOCAB, HIDDEN), "input_ids"], "we")
    te = node("Gather", [w("token_type_embeddings", TYPES, HIDDEN), "token_type_ids"], "te")
    pos_ids = const("position_ids", [list(range(SEQ))], np.int64)
    pe = node("Gather", [w("position_embeddings", SEQ, HIDDEN), pos_ids], "pe")
    e = node("Add", [node("Add", [we, te], "e0"), pe], "e1")
    x = layernorm(e, "embeddings.LayerNorm")

    # extended attention mask: (1 - mask[:, None, None, :]) * -10000
    m = node("Unsqueeze", ["attention_mask", const("axes1", [1], np.int64)], "mask_u1")
    m = node("Unsqueeze", [m, const("axes2", [2], np.int64)], "mask_u2")
    m = node("Cast", [m], "mask_f", to=TensorProto.FLOAT)
    m = node("Sub", [const("one", 1.0), m], "mask_sub")
    m = node("Mul", [m, const("neg", -10000.0)], "mask_add")

    # self-attention
    split = const("split_shape", [0, 0, HEADS, head], np.int64)
    q = node("Transpose", [node("Reshape", [linear(x, "query", HIDDEN, HIDDEN), split], "q_r")],
             "q_t", perm=[0, 2, 1, 3])
    k = node("Transpose", [node("Reshape", [linear(x, "key", HIDDEN, HIDDEN), split], "k_r")],
             "k_t", perm=[0, 2, 3, 1])
    v = node("Transpose", [node("Reshape", [linear(x, "value", HIDDEN, HIDDEN), split], "v_r")],
             "v_t", perm=[0, 2, 1, 3])
    s = node("Div", [node("MatMul", [q, k], "qk"), const("sqrt_head", float(np.sqrt(head)))],
             "qk_scaled")
    p = node("Softmax", [node("Add", [s, m], "qk_masked")], "probs", axis=-1)
    c = node("Transpose", [node("MatMul", [p, v], "ctx")], "ctx_t", perm=[0, 2, 1, 3])
    c = node("Reshape", [c, const("merge_shape", [0, 0, HIDDEN], np.int64)], "ctx_r")
    a = linear(c, "attention.output.dense", HIDDEN, HIDDEN)
    x = layernorm(node("Add", [a, x], "attn_res"), "attention.output.LayerNorm")

    # feed-forward with exact (erf) GELU
    h = linear(x, "intermediate.dense", HIDDEN, FFN)
    g = node("Div", [h, const("sqrt2", 1.4142135381698608)], "gelu_div")
    g = node("Add", [node("Erf", [g], "gelu_erf"), const("gelu_one", 1.0)], "gelu_add")
    g = node("Mul", [node("Mul", [h, g], "gelu_mul"), const("gelu_half", 0.5)], "gelu_out")
    f = linear(g, "output.dense", FFN, HIDDEN)
    node("Identity", [layernorm(node("Add", [f, x], "ffn_res"), "output.LayerNorm")],
         "last_hidden_state")

    ints = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
            for n in ("input_ids", "attention_mask", "token_type_ids")]
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                        ["batch", "sequence", HIDDEN])
    graph = helper.make_graph(nodes, "bert_encoder", ints, [out], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    feeds = {
        "input_ids": rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int64),
        "attention_mask": np.array([[1] * SEQ, [1] * (SEQ - 2) + [0] * 2], np.int64),
        "token_type_ids": rng.integers(0, TYPES, (BATCH, SEQ)).astype(np.int64),
    }
    return model, feeds
