#!/usr/bin/env python3
"""Writes tests/cpu/conv_relu_transpose.onnx: x [1, 3, 10, 12] -> Conv (24 filters, 3x3,
pads 1) -> Relu -> Transpose [0, 2, 3, 1] (NCHW to NHWC). On CPU the Conv writes a blocked
layout and the Transpose (a oneDNN reorder) reads it as it is; test_cpu compares the result
with REF's. Weights from numpy's default_rng(0). Run with the bench venv's Python:
  .cache/venv-bench/bin/python tests/cpu/make_transpose_model.py"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)
w = numpy_helper.from_array(rng.standard_normal((24, 3, 3, 3)).astype(np.float32), "W")
nodes = [helper.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 3, 1])]
g = helper.make_graph(nodes, "conv_relu_transpose",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 10, 12])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10, 12, 24])],
                      [w])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(m)
onnx.save(m, os.path.join(os.path.dirname(os.path.abspath(__file__)), "conv_relu_transpose.onnx"))
