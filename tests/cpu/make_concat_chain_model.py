#!/usr/bin/env python3
"""Writes tests/cpu/concat_chain.onnx and concat_chain.expected: Concats whose first input
other nodes read too, the case the plan places in the Concat's output only where nothing
writes over those bytes in place while they are still read:

  a, b, d, h = Conv 3x3 (8 filters each) of x [1, 3, 8, 8]
  c = Concat(a, b)   read by r = Conv 1x1 (c) and by e     (a, b placed in c)
  e = Concat(c, d)   read by f = Conv 1x1 (e) and by g     (c placed in e: a chain, as DenseNet)
  g = Concat(e, h)   w = Sigmoid(g), in place over g's bytes while f may still read e:
                     e is copied (g is "concat_in_place_partial")
  outputs r, f, w

On CPU the convolutions write nChw8c, in which the parts lie end to end along C. The
expected outputs (r, f, w as raw float32, one after the other) are onnx's reference
evaluator's, on the input test_cpu feeds: x[i] = ((i * 7919) % 1000) / 500 - 1. Weights
from numpy's default_rng(0). Run with a Python that has onnx and numpy:
  python tests/cpu/make_concat_chain_model.py"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(0)


def w(name, shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)


inits = [w("Wa", (8, 3, 3, 3)), w("Wb", (8, 3, 3, 3)), w("Wd", (8, 3, 3, 3)),
         w("Wh", (8, 3, 3, 3)), w("Wr", (8, 16, 1, 1)), w("Wf", (8, 24, 1, 1))]
conv3 = dict(pads=[1, 1, 1, 1])
nodes = [helper.make_node("Conv", ["x", "Wa"], ["a"], **conv3),
         helper.make_node("Conv", ["x", "Wb"], ["b"], **conv3),
         helper.make_node("Conv", ["x", "Wd"], ["d"], **conv3),
         helper.make_node("Conv", ["x", "Wh"], ["h"], **conv3),
         helper.make_node("Concat", ["a", "b"], ["c"], name="concat_c", axis=1),
         helper.make_node("Conv", ["c", "Wr"], ["r"]),
         helper.make_node("Concat", ["c", "d"], ["e"], name="concat_e", axis=1),
         helper.make_node("Conv", ["e", "Wf"], ["f"]),
         helper.make_node("Concat", ["e", "h"], ["g"], name="concat_g", axis=1),
         helper.make_node("Sigmoid", ["g"], ["w"])]
g = helper.make_graph(nodes, "concat_chain",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                      [helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 8, 8, 8]),
                       helper.make_tensor_value_info("f", TensorProto.FLOAT, [1, 8, 8, 8]),
                       helper.make_tensor_value_info("w", TensorProto.FLOAT, [1, 32, 8, 8])],
                      inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(m)
x = ((np.arange(3 * 8 * 8, dtype=np.int64) * 7919) % 1000).astype(np.float32) / 500.0 - 1.0
x = x.reshape(1, 3, 8, 8)
outs = ReferenceEvaluator(m).run(None, {"x": x})
onnx.save(m, os.path.join(HERE, "concat_chain.onnx"))
np.concatenate([o.astype(np.float32).ravel() for o in outs]).tofile(
    os.path.join(HERE, "concat_chain.expected"))
print([o.shape for o in outs])
