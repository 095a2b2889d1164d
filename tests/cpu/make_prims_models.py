#!/usr/bin/env python3
"""Writes the models of tests/cpu/test_cpu_prims.c: ConvTranspose, Resize and Reduce* with
constant weights, scales, sizes and axes (the ONNX node tests feed those as inputs, so the CPU
device runs them on REF's kernels there), on shapes the node tests do not cover. Each model's
outputs are compared with REF's by the test. Weights from numpy's default_rng(0). Run with a
Python that has onnx 1.22 and numpy (bench/models/run's venv):
  .cache/venv-bench/bin/python tests/cpu/make_prims_models.py"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(0)


def const(name, a):
    return numpy_helper.from_array(a, name)


def save(name, nodes, x_shape, outputs, inits, opset):
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                           for o in outputs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, name + ".onnx"))


def weights(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# ConvTranspose: x [1, 6, 7, 9].
#   y0: group 3, dilations [2, 1], strides [2, 1], asymmetric pads [1, 0, 2, 2],
#       output_padding [1, 0], bias;
#   y1: depthwise (group 6), strides 3, no bias;
#   y2: output_shape [16, 10] with strides 2 (pads derived as ONNX does).
inits = [const("W0", weights(6, 2, 3, 3)), const("B0", weights(6)),
         const("W1", weights(6, 1, 2, 2)), const("W2", weights(6, 4, 3, 3)),
         const("B2", weights(4))]
nodes = [helper.make_node("ConvTranspose", ["x", "W0", "B0"], ["y0"], group=3,
                          dilations=[2, 1], strides=[2, 1], pads=[1, 0, 2, 2],
                          output_padding=[1, 0]),
         helper.make_node("ConvTranspose", ["x", "W1"], ["y1"], group=6, strides=[3, 3]),
         helper.make_node("ConvTranspose", ["x", "W2", "B2"], ["y2"], strides=[2, 2],
                          output_shape=[14, 18])]
save("convtranspose", nodes, [1, 6, 7, 9], ["y0", "y1", "y2"], inits, 17)

# ConvTranspose 1-D and 3-D: auto_pad SAME_UPPER and SAME_LOWER.
inits = [const("W3", weights(4, 3, 2, 3, 3)), const("W4", weights(4, 2, 5))]
nodes = [helper.make_node("ConvTranspose", ["x", "W3"], ["y0"], strides=[2, 2, 2],
                          auto_pad="SAME_UPPER"),
         helper.make_node("Reshape", ["x", "s"], ["x1"]),
         helper.make_node("ConvTranspose", ["x1", "W4"], ["y1"], strides=[3],
                          auto_pad="SAME_LOWER", dilations=[2])]
inits.append(const("s", np.array([1, 4, 60], dtype=np.int64)))
save("convtranspose_same", nodes, [1, 4, 3, 4, 5], ["y0", "y1"], inits, 17)

# output_padding beyond the end pad (oneDNN's end pad negative), x [1, 16, 5, 5]:
#   y0: strides 2, output_padding [1, 1], 16 -> 8 channels (oneDNN's blocked jit kernel);
#   y1: group 2, pads [0, 1, 0, 0], output_padding [1, 0].
inits = [const("W5", weights(16, 8, 3, 3)), const("W6", weights(16, 4, 3, 3))]
nodes = [helper.make_node("ConvTranspose", ["x", "W5"], ["y0"], strides=[2, 2],
                          output_padding=[1, 1]),
         helper.make_node("ConvTranspose", ["x", "W6"], ["y1"], strides=[2, 2], group=2,
                          output_padding=[1, 0], pads=[0, 1, 0, 0])]
save("convtranspose_outpad", nodes, [1, 16, 5, 5], ["y0", "y1"], inits, 17)

# Resize of a non-square image x [2, 3, 6, 10]:
#   y0: nearest (round_prefer_floor, half_pixel: the defaults) up to sizes [18, 20];
#   y1: linear, scales [0.5, 1.5] -> [3, 15];
#   y2: linear pytorch_half_pixel to sizes [4, 13];
#   y3: nearest round_prefer_ceil down to sizes [3, 5] (every coordinate a half);
#   y4: cubic (REF's kernel: oneDNN has no cubic).
empty = const("empty", np.zeros((0,), dtype=np.float32))
inits = [empty,
         const("sz0", np.array([2, 3, 18, 20], dtype=np.int64)),
         const("sc1", np.array([1, 1, 0.5, 1.5], dtype=np.float32)),
         const("sz2", np.array([2, 3, 4, 13], dtype=np.int64)),
         const("sz3", np.array([2, 3, 3, 5], dtype=np.int64)),
         const("sc4", np.array([1, 1, 2, 2], dtype=np.float32))]
nodes = [helper.make_node("Resize", ["x", "empty", "", "sz0"], ["y0"], mode="nearest"),
         helper.make_node("Resize", ["x", "empty", "sc1"], ["y1"], mode="linear"),
         helper.make_node("Resize", ["x", "empty", "", "sz2"], ["y2"], mode="linear",
                          coordinate_transformation_mode="pytorch_half_pixel"),
         helper.make_node("Resize", ["x", "empty", "", "sz3"], ["y3"], mode="nearest",
                          nearest_mode="round_prefer_ceil"),
         helper.make_node("Resize", ["x", "empty", "sc4"], ["y4"], mode="cubic")]
save("resize", nodes, [2, 3, 6, 10], ["y0", "y1", "y2", "y3", "y4"], inits, 13)

# Resize 3-D (trilinear) x [1, 2, 3, 4, 6] to sizes [6, 5, 3].
inits = [const("sz", np.array([1, 2, 6, 5, 3], dtype=np.int64))]
nodes = [helper.make_node("Resize", ["x", "", "", "sz"], ["y0"], mode="linear")]
save("resize_3d", nodes, [1, 2, 3, 4, 6], ["y0"], inits, 19)

# Reduce* over several axes of x [2, 3, 4, 5], opset 18 (axes as a constant input). oneDNN's
# jit reduction takes the innermost axes; y9 reduces [1, 3] and stays on REF's kernel.
ax = {"a123": [1, 2, 3], "a23": [2, 3], "a_neg": [-1, -2], "a3": [3], "a13": [1, 3]}
inits = [const(k, np.array(v, dtype=np.int64)) for k, v in ax.items()]
nodes = [helper.make_node("ReduceSum", ["x", "a123"], ["y0"], keepdims=0),
         helper.make_node("ReduceMean", ["x", "a23"], ["y1"]),
         helper.make_node("ReduceMax", ["x", "a_neg"], ["y2"], keepdims=0),
         helper.make_node("ReduceMin", ["x", "a3"], ["y3"]),
         helper.make_node("ReduceProd", ["x", "a23"], ["y4"], keepdims=0),
         helper.make_node("ReduceL1", ["x", "a123"], ["y5"]),
         helper.make_node("ReduceL2", ["x", "a_neg"], ["y6"], keepdims=0),
         helper.make_node("ReduceSumSquare", ["x", "a23"], ["y7"]),
         helper.make_node("ReduceSum", ["x"], ["y8"], keepdims=0),
         helper.make_node("ReduceSum", ["x", "a13"], ["y9"])]
save("reduce", nodes, [2, 3, 4, 5], ["y%d" % i for i in range(10)], inits, 18)

# Reduce* with the axes attribute (opset 13; ReduceSum's axes are an input there), over a
# [2, 3, 4, 1] input: axes of size 1 after the reduced ones do not count.
nodes = [helper.make_node("ReduceMean", ["x"], ["y0"], axes=[2, 3]),
         helper.make_node("ReduceMax", ["x"], ["y1"], axes=[2], keepdims=0),
         helper.make_node("ReduceL2", ["x"], ["y2"]),
         helper.make_node("ReduceSum", ["x", "a"], ["y3"], keepdims=1)]
save("reduce_13", nodes, [2, 3, 4, 1], ["y0", "y1", "y2", "y3"],
     [const("a", np.array([1, 2], dtype=np.int64))], 13)
