#!/usr/bin/env python3
"""Writes the models of tests/cpu/test_cpu_fallback.c, each a shape of real models that the CPU
device once failed where REF ran:
  anchors_dyn.onnx   a detection head's anchor grid (YOLO's make_anchors): Shape -> Range ->
                     Expand -> Unsqueeze -> Concat(axis=-1) over dynamic H and W; the Concats
                     fold to constants once the plan is specialised for a run's shapes (oneDNN's
                     concat needs scratch memory there).
  pool_big_pads.onnx an AveragePool whose pads exceed its kernel (ONNX's reference runs it; oneDNN
                     refuses the primitive with invalid arguments), beside a MaxPool oneDNN runs.
  conv_in_if.onnx    a Conv in each branch of an If that a model input picks.
  conv_folded.onnx   a Conv on constants only (folded at compile time) added to the input.
Outputs are compared with REF's by the test. Run with a Python that has onnx:
  .cache/venv-bench/bin/python tests/cpu/make_fallback_models.py"""
import os

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def save(name, nodes, inputs, outputs, inits=()):
    g = h.make_graph(nodes, name, inputs, outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, name + ".onnx"))


def ints(name, v):
    return h.make_tensor(name, T.INT64, [len(v)] if isinstance(v, list) else [],
                         v if isinstance(v, list) else [v])


nodes = [
    h.make_node("Shape", ["x"], ["s"]),
    h.make_node("Gather", ["s", "i2"], ["H"], axis=0),
    h.make_node("Gather", ["s", "i3"], ["W"], axis=0),
    h.make_node("Cast", ["H"], ["Hf"], to=T.FLOAT),
    h.make_node("Cast", ["W"], ["Wf"], to=T.FLOAT),
    h.make_node("Range", ["zf", "Hf", "onef"], ["ry"]),
    h.make_node("Range", ["zf", "Wf", "onef"], ["rx"]),
    h.make_node("Unsqueeze", ["ry", "ax1"], ["ry2"]),
    h.make_node("Unsqueeze", ["rx", "ax0"], ["rx2"]),
    h.make_node("Unsqueeze", ["H", "ax0"], ["H1"]),
    h.make_node("Unsqueeze", ["W", "ax0"], ["W1"]),
    h.make_node("Concat", ["H1", "W1"], ["hw"], axis=0),
    h.make_node("Expand", ["ry2", "hw"], ["gy"]),
    h.make_node("Expand", ["rx2", "hw"], ["gx"]),
    h.make_node("Unsqueeze", ["gx", "axm1"], ["gx3"]),
    h.make_node("Unsqueeze", ["gy", "axm1"], ["gy3"]),
    h.make_node("Concat", ["gx3", "gy3"], ["g"], axis=-1),
    h.make_node("ReduceMean", ["x"], ["xm0"], axes=[1], keepdims=0),
    h.make_node("Squeeze", ["xm0", "ax0"], ["xm"]),
    h.make_node("Unsqueeze", ["xm", "axm1"], ["xm3"]),
    h.make_node("Concat", ["g", "xm3"], ["y"], axis=-1),
]
inits = [ints("i2", 2), ints("i3", 3), h.make_tensor("zf", T.FLOAT, [], [0.0]),
         h.make_tensor("onef", T.FLOAT, [], [1.0]), ints("ax0", [0]), ints("ax1", [1]),
         ints("axm1", [-1])]
save("anchors_dyn", nodes, [h.make_tensor_value_info("x", T.FLOAT, [1, 4, "h", "w"])],
     [h.make_tensor_value_info("y", T.FLOAT, ["h", "w", 3])], inits)

nodes = [h.make_node("AveragePool", ["x"], ["avg"], kernel_shape=[2, 2], pads=[2, 2, 2, 2]),
         h.make_node("MaxPool", ["x"], ["max"], kernel_shape=[2, 2], pads=[1, 1, 1, 1])]
save("pool_big_pads", nodes, [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 5, 5])],
     [h.make_tensor_value_info("avg", T.FLOAT, [1, 3, 8, 8]),
      h.make_tensor_value_info("max", T.FLOAT, [1, 3, 6, 6])])

# A Conv in each branch of an If (a model input picks the branch): a subgraph
# body's values have their size only at run time, so the Conv must write a
# plain tensor there (it once failed: "writes 'y_then' in layout aBcd8b, but
# its shape is not static").
rng = np.random.default_rng(0)
W1 = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "W1")
W2 = numpy_helper.from_array(rng.standard_normal((8, 3, 1, 1)).astype(np.float32), "W2")
then_g = h.make_graph([h.make_node("Relu", ["x"], ["r_then"]),
                       h.make_node("Conv", ["r_then", "W1"], ["y_then"], pads=[1, 1, 1, 1])], "then",
                      [], [h.make_tensor_value_info("y_then", T.FLOAT, [1, 8, 9, 9])])
else_g = h.make_graph([h.make_node("Conv", ["x", "W2"], ["c_else"]),
                       h.make_node("Relu", ["c_else"], ["y_else"])], "else",
                      [], [h.make_tensor_value_info("y_else", T.FLOAT, [1, 8, 9, 9])])
save("conv_in_if", [h.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)],
     [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 9, 9]),
      h.make_tensor_value_info("cond", T.BOOL, [])],
     [h.make_tensor_value_info("y", T.FLOAT, [1, 8, 9, 9])], [W1, W2])
# The same with a constant condition (an exporter's traced flag).
save("conv_in_if_const",
     [h.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)],
     [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 9, 9])],
     [h.make_tensor_value_info("y", T.FLOAT, [1, 8, 9, 9])],
     [W1, W2, numpy_helper.from_array(np.array(True), "cond")])

# A Conv on constants only, folded at compile time, added to the input: the
# folded value must be the plain tensor (a oneDNN Conv folded in its blocked
# layout once gave wrong values and wrote past the plain buffer).
C = numpy_helper.from_array(rng.standard_normal((1, 3, 6, 6)).astype(np.float32), "C")
W3 = numpy_helper.from_array(rng.standard_normal((5, 3, 3, 3)).astype(np.float32), "W3")
save("conv_folded", [h.make_node("Conv", ["C", "W3"], ["k"], pads=[1, 1, 1, 1]),
                     h.make_node("Add", ["x", "k"], ["y"])],
     [h.make_tensor_value_info("x", T.FLOAT, [1, 5, 6, 6])],
     [h.make_tensor_value_info("y", T.FLOAT, [1, 5, 6, 6])], [C, W3])
