#!/usr/bin/env python3
"""Writes tests/cpu/winograd.onnx: x [1, 3, 56, 56] -> Conv (64 filters, 3x3, pads 1, bias)
-> Relu -> Conv (128 filters, 3x3, pads 1, bias) -> Relu -> MaxPool 2x2/2 -> Conv (128
filters, 3x3, pads 1, bias) -> Relu -> y [1, 128, 28, 28], VGG's first blocks in small: a
first convolution of an image's 3 channels, then two stride-1 3x3 convolutions, 64 -> 128 at
56x56 and 128 -> 128 at 28x28, which the CPU device runs as oneDNN's F(4x4, 3x3) Winograd
kernel on AVX-512 under EXECUTION_MODE_HINT PERFORMANCE (on a team of any size), the first
one writing their layout (plugins/cpu/conv.c). Weights He-initialised (normal, std sqrt(2 / fan_in), as trained
networks start) and biases from numpy's default_rng(0).
Run with the bench venv's Python:
  .cache/venv-bench/bin/python tests/cpu/make_winograd_model.py"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)


def conv_weights(name, m, c):
    w = rng.standard_normal((m, c, 3, 3)) * np.sqrt(2.0 / (c * 9))
    b = rng.standard_normal(m) * 0.1
    return (numpy_helper.from_array(w.astype(np.float32), name + "_W"),
            numpy_helper.from_array(b.astype(np.float32), name + "_B"))


w0, b0 = conv_weights("c0", 64, 3)
w1, b1 = conv_weights("c1", 128, 64)
w2, b2 = conv_weights("c2", 128, 128)
nodes = [helper.make_node("Conv", ["x", "c0_W", "c0_B"], ["c0"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c0"], ["r0"]),
         helper.make_node("Conv", ["r0", "c1_W", "c1_B"], ["c1"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c1"], ["r1"]),
         helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Conv", ["p1", "c2_W", "c2_B"], ["c2"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c2"], ["y"])]
g = helper.make_graph(nodes, "winograd",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 56, 56])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 128, 28, 28])],
                      [w0, b0, w1, b1, w2, b2])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(m)
onnx.save(m, os.path.join(os.path.dirname(os.path.abspath(__file__)), "winograd.onnx"))
