#!/usr/bin/env python3
"""Writes the models of tests/cpu/test_cpu_qop.c: ONNX's operator-format int8 ops (QLinearConv,
QLinearMatMul, MatMulInteger, ConvInteger), one node each, whose input x is the graph input
(u8 or i8, filled by the test with the formula below) and whose other inputs are constants, and
the expected output of each as raw bytes (<name>.expected), computed by onnx's reference
evaluator (numpy) and checked here against ONNX Runtime where it runs the case. Weights from
numpy's default_rng(0). Run with a Python that has onnx 1.22, onnxruntime and numpy
(bench/models/run's venv):
  .cache/venv-bench/bin/python tests/cpu/make_qop_models.py"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(0)
ELEM = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8, np.int32: TensorProto.INT32,
        np.float32: TensorProto.FLOAT}


def test_input(shape, dtype):
    """What the test feeds: element i is b = (i * 7919 + 13) mod 256, as u8, b - 128 as i8,
    b / 64 - 2 as f32."""
    n = int(np.prod(shape))
    v = (np.arange(n, dtype=np.int64) * 7919 + 13) % 256
    if dtype == np.float32:
        return (v.astype(np.float32) / np.float32(64) - np.float32(2)).reshape(shape)
    if dtype == np.int8:
        v -= 128
    return v.astype(dtype).reshape(shape)


def c(a, dtype=None):
    return np.array(a, dtype=dtype)


def save(name, op, x_shape, x_dtype, consts, out_dtype, before=None, after=None, opset=13,
         **attrs):
    """One node `op` reading x then the constants (None: an empty name, an absent optional);
    with `before`, nodes that make x (named "xq") and its zero point ("xz") from the input
    first, and "xz" read in place of the constant at that position (the string "xz"); with
    `after` (nodes and their constants), the op writes "t" and those nodes make "y" from it
    (opset: the model's; onnx's evaluator has DequantizeLinear from 19 on)."""
    inits, names = [], ["xq" if before else "x"]
    for i, a in enumerate(consts):
        if isinstance(a, str):
            names.append(a)
            continue
        if a is None:
            names.append("")
            continue
        names.append(f"c{i}")
        inits.append(numpy_helper.from_array(a, f"c{i}"))
    node = helper.make_node(op, names, ["t" if after else "y"], **attrs)
    after_nodes, after_consts = after or ([], {})
    inits += [numpy_helper.from_array(a, k) for k, a in after_consts.items()]
    g = helper.make_graph((before or []) + [node] + after_nodes, name,
                          [helper.make_tensor_value_info("x", ELEM[x_dtype], x_shape)],
                          [helper.make_tensor_value_info("y", ELEM[out_dtype], None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    onnx.checker.check_model(m)
    x = test_input(x_shape, x_dtype)
    y = ReferenceEvaluator(m).run(None, {"x": x})[0]
    assert y.dtype == out_dtype, (name, y.dtype)
    try:
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.log_severity_level = 3
        s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        got = s.run(None, {"x": x})[0]
    except Exception as e:  # ONNX Runtime does not run every case (e.g. i8 x by u8 w)
        print(f"{name}: {y.shape}, ONNX Runtime: {str(e).splitlines()[0][:100]}")
    else:
        # Without VNNI ONNX Runtime's u8 x s8 kernels saturate too (full-range weights).
        diff = np.abs(got.astype(np.int64) - y.astype(np.int64))
        print(f"{name}: {y.shape}, ONNX Runtime max diff {diff.max()} at {np.count_nonzero(diff)}"
              f" of {diff.size}")
    onnx.save(m, os.path.join(HERE, name + ".onnx"))
    y.tofile(os.path.join(HERE, name + ".expected"))


def weights_s8(shape, center=0, spread=63):
    """Weights within +-63 of `center` (w - zero point fits 7 bits: without VNNI oneDNN's
    vpmaddubsw pair sums cannot saturate)."""
    return rng.integers(-spread, spread + 1, size=shape) + center


# QLinearConv, u8 x (zero point 37), i8 weights with a scale per output channel, grouped,
# strided, dilated, asymmetric pads, an i32 bias, u8 y (zero point 120).
M = 12
save("qop_conv_u8", "QLinearConv", [1, 8, 10, 11], np.uint8,
     [c(0.02, np.float32), c(37, np.uint8), weights_s8([M, 4, 3, 3]).astype(np.int8),
      rng.uniform(0.002, 0.01, M).astype(np.float32), np.zeros(M, np.int8),
      c(0.05, np.float32), c(120, np.uint8), rng.integers(-2000, 2001, M).astype(np.int32)],
     np.uint8, group=2, strides=[2, 1], pads=[1, 0, 2, 1], dilations=[1, 2])

# QLinearConv, i8 x (zero point -5), u8 weights with a zero point per output channel (100 to
# 150: folded into i8 weights), a per-tensor weight scale, i8 y (zero point -3), no bias.
M = 10
wz = rng.integers(100, 151, M).astype(np.uint8)
save("qop_conv_s8_u8w", "QLinearConv", [1, 6, 9, 9], np.int8,
     [c(0.03, np.float32), c(-5, np.int8),
      weights_s8([M, 6, 3, 3], wz.astype(np.int64).reshape(M, 1, 1, 1)).astype(np.uint8),
      c(0.004, np.float32), wz, c(0.08, np.float32), c(-3, np.int8)],
     np.int8, pads=[1, 1, 1, 1])

# QLinearConv the CPU device leaves to REF's kernel: u8 weights over 0..255 with zero point 0
# (w - w_zero_point leaves i8, which oneDNN's int8 weights are).
save("qop_conv_fallback", "QLinearConv", [1, 4, 6, 6], np.uint8,
     [c(0.02, np.float32), c(10, np.uint8), rng.integers(0, 256, [5, 4, 3, 3]).astype(np.uint8),
      c(0.001, np.float32), c(0, np.uint8), c(0.3, np.float32), c(7, np.uint8)],
     np.uint8)

# QLinearMatMul: u8 a [2, 5, 24] (zero point 100) by i8 b [24, 12] with a scale and a zero
# point per column, u8 y (zero point 60).
N = 12
bz = rng.integers(-10, 11, N).astype(np.int8)
save("qop_matmul", "QLinearMatMul", [2, 5, 24], np.uint8,
     [c(0.02, np.float32), c(100, np.uint8),
      weights_s8([24, N], bz.astype(np.int64)).astype(np.int8),
      rng.uniform(0.002, 0.01, N).astype(np.float32), bz, c(0.1, np.float32), c(60, np.uint8)],
     np.uint8)

# QLinearMatMul: i8 a [4, 32] (zero point -20) by i8 b [32, 16] per tensor, i8 y (zero point 5).
save("qop_matmul_s8", "QLinearMatMul", [4, 32], np.int8,
     [c(0.03, np.float32), c(-20, np.int8), weights_s8([32, 16]).astype(np.int8),
      c(0.005, np.float32), c(0, np.int8), c(0.15, np.float32), c(5, np.int8)],
     np.int8)

# MatMulInteger (quantize_dynamic's form): u8 a (zero point 128) by i8 b (zero point 3).
save("qop_matmul_integer", "MatMulInteger", [3, 16], np.uint8,
     [weights_s8([16, 8], 3).astype(np.int8), c(128, np.uint8), c(3, np.int8)], np.int32)

# ConvInteger: u8 x (zero point 50), u8 w (zero point 128).
save("qop_conv_integer", "ConvInteger", [1, 3, 7, 7], np.uint8,
     [weights_s8([4, 3, 3, 3], 128).astype(np.uint8), c(50, np.uint8), c(128, np.uint8)],
     np.int32, pads=[1, 1, 1, 1])

# The integer ops with full-range weights: u8 a (zero point 0) by i8 b over -127..127, where
# pairs of products overflow 16 bits (vpmaddubsw's saturation, on CPUs without VNNI).
save("qop_matmul_integer_full", "MatMulInteger", [4, 64], np.uint8,
     [rng.integers(-127, 128, [64, 8]).astype(np.int8), c(0, np.uint8), c(0, np.int8)],
     np.int32)
save("qop_conv_integer_full", "ConvInteger", [1, 8, 6, 6], np.uint8,
     [rng.integers(0, 256, [4, 8, 3, 3]).astype(np.uint8), c(0, np.uint8), c(128, np.uint8)],
     np.int32)

# quantize_dynamic's form: DynamicQuantizeLinear of the f32 input, then MatMulInteger with its
# zero point known only at run time (oneDNN's runtime source zero point), i8 b (zero point 2).
save("qop_matmul_integer_dynamic", "MatMulInteger", [6, 40], np.float32,
     [weights_s8([40, 24], 2).astype(np.int8), "xz", c(2, np.int8)], np.int32,
     before=[helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"])])

# The operator format's residual, as quantize_static writes ResNet-50's when Add is not
# quantized: QLinearConv -> DequantizeLinear -> Sum(., an f32 residual) -> Relu ->
# QuantizeLinear, the residual here a projection shortcut (a 1x1 QLinearConv of x ->
# DequantizeLinear). The CPU device fuses the DequantizeLinears, the Sum and the Relu into the
# convolutions (the mid quantization, an f32 sum post-op). y's scale 0.057: with 0.06 a sixth
# of the sums (multiples of 0.05 plus multiples of 0.04) would be exact half steps of y, which
# f32 and double arithmetic round either way.
M = 8


def residual_block(name, x_shape, x_dtype, xz, mid_z, shortcut_z, add_op):
    """x -> QLinearConv 3x3 -> DequantizeLinear -> add_op(., the 1x1 shortcut QLinearConv of x
    -> DequantizeLinear) -> Relu -> QuantizeLinear (u8)."""
    save(name, "QLinearConv", x_shape, x_dtype,
         [c(0.02, np.float32), c(xz, x_dtype), weights_s8([M, M, 3, 3]).astype(np.int8),
          rng.uniform(0.002, 0.01, M).astype(np.float32), np.zeros(M, np.int8),
          c(0.05, np.float32), c(mid_z, x_dtype), rng.integers(-2000, 2001, M).astype(np.int32)],
         np.uint8, pads=[1, 1, 1, 1], opset=19,
         after=([helper.make_node("DequantizeLinear", ["t", "c5", "c6"], ["td"]),
                 helper.make_node("QLinearConv",
                                  ["x", "c0", "c1", "w2", "ws2", "wz2", "s2", "z2"], ["t2"]),
                 helper.make_node("DequantizeLinear", ["t2", "s2", "z2"], ["xr"]),
                 helper.make_node(add_op, ["td", "xr"] if add_op == "Sum" else ["xr", "td"],
                                  ["s"]),
                 helper.make_node("Relu", ["s"], ["r"]),
                 helper.make_node("QuantizeLinear", ["r", "ys", "yz"], ["y"])],
                {"w2": weights_s8([M, M, 1, 1]).astype(np.int8),
                 "ws2": rng.uniform(0.002, 0.01, M).astype(np.float32),
                 "wz2": np.zeros(M, np.int8), "s2": c(0.04, np.float32),
                 "z2": c(shortcut_z, x_dtype), "ys": c(0.057, np.float32),
                 "yz": c(5, np.uint8)}))


residual_block("qop_conv_residual", [1, M, 6, 7], np.uint8, 37, 120, 128, "Sum")
# The same block on an i8 x (zero points -5, 3, -10): without VNNI the CPU device declines an i8
# x to oneDNN's convolution, and REF's kernel of the fused op runs it, f32 residual included.
residual_block("qop_conv_residual_s8", [1, M, 5, 6], np.int8, -5, 3, -10, "Add")
