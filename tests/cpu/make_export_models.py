#!/usr/bin/env python3
"""Writes the models of tests/cpu/test_cpu_export.c with onnx.helper, with
Python that has onnx 1.22 and numpy (bench/models/run's venv):
  .cache/venv-bench/bin/python tests/cpu/make_export_models.py

export_gemm.onnx: x [4, 64] -> Gemm (W [32, 64], transB 1, bias) -> Relu ->
  Gemm (W [10, 32], transB 1, bias): two oneDNN inner products.
export_int8.onnx: a QDQ convolution as quantize_static writes it:
  x f32 [1, 8, 10, 10] -> QuantizeLinear (u8, zero point 50) ->
  DequantizeLinear -> Conv (DequantizeLinear of 7-bit int8 weights, a scale
  per output channel; f32 bias) -> Relu -> QuantizeLinear (u8) ->
  DequantizeLinear -> y: one runnel QLinearFusedConv on oneDNN int8.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(11)


def save(model, name):
    model.opset_import[0].version = 13
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, name))


def gemm():
    w1 = numpy_helper.from_array(rng.standard_normal((32, 64)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((10, 32)).astype(np.float32), "w2")
    b2 = numpy_helper.from_array(rng.standard_normal(10).astype(np.float32), "b2")
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1),
    ]
    g = helper.make_graph(
        nodes, "export_gemm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 10])],
        [w1, b1, w2, b2])
    save(helper.make_model(g), "export_gemm.onnx")


def int8():
    m, c = 16, 8
    w = rng.integers(-63, 64, size=(m, c, 3, 3)).astype(np.int8)
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
        numpy_helper.from_array(np.array(50, np.uint8), "xz"),
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array((rng.random(m) * 0.01 + 0.005).astype(np.float32), "ws"),
        numpy_helper.from_array(np.zeros(m, np.int8), "wz"),
        numpy_helper.from_array(rng.standard_normal(m).astype(np.float32), "b"),
        numpy_helper.from_array(np.array(0.05, np.float32), "ys"),
        numpy_helper.from_array(np.array(0, np.uint8), "yz"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
        helper.make_node("Conv", ["xd", "wd", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("QuantizeLinear", ["r", "ys", "yz"], ["yq"]),
        helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"]),
    ]
    g = helper.make_graph(
        nodes, "export_int8",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 10, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, m, 10, 10])],
        inits)
    save(helper.make_model(g), "export_int8.onnx")


if __name__ == "__main__":
    gemm()
    int8()
