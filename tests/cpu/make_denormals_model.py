#!/usr/bin/env python3
"""Writes tests/cpu/denormals.onnx for tests/cpu/test_cpu_denormals.c: a 3x3 Conv (16 -> 16
channels, pads 1, + Relu) on x [1, 16, 8, 8] whose weights are all subnormal f32 values
(0.5e-39 to 1.5e-39, below f32's smallest normal 1.18e-38). Fed x in [0.5, 1.5], each output is
a sum of up to 144 such products, about 1e-37: a normal number when subnormal inputs are read as
they are, exactly 0 when the CPU reads them as zero (DAZ, CPU_DENORMALS_OPTIMIZATION=YES).
Weights from numpy's default_rng(0). Run with a Python that has onnx and numpy:
  .cache/venv-bench/bin/python tests/cpu/make_denormals_model.py"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(0)
w = (rng.uniform(0.5, 1.5, (16, 16, 3, 3)) * 1e-39).astype(np.float32)
assert np.all(w < np.finfo(np.float32).tiny) and np.all(w > 0)
g = helper.make_graph(
    [helper.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1]),
     helper.make_node("Relu", ["c"], ["y"])],
    "denormals",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 8, 8])],
    [numpy_helper.from_array(w, "W")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(m)
onnx.save(m, os.path.join(HERE, "denormals.onnx"))
