#!/usr/bin/env python3
"""Writes an int8 ResNet-50: the onnx wheel's light_resnet50.onnx quantized by ONNX Runtime's
quantize_static, in the QDQ format (QuantizeLinear/DequantizeLinear around each Conv, Gemm and
the ops between them), weights int8 with a scale per output channel, activations uint8 (the
U8S8 scheme ONNX Runtime and OpenVINO recommend for x86), MinMax calibration on the model's own
test input (the onnx backend test feeds light models arange(n)/n).

The light model is opset 9; per-channel QDQ needs opset 13, so it is converted first (onnx's
version converter). Then quant_pre_process (what ONNX Runtime's quantization guide asks for):
shape inference and ONNX Runtime's basic graph optimizations, which fold the light model's
ConstantOfShape weights into initializers (quantize_static quantizes only initializer weights)
and BatchNormalization into the convolutions, as an export for deployment does.

With --qop, the operator format instead (QuantFormat.QOperator): ONNX's QLinearConv for each
convolution (the Relu after it dropped by the quantizer: its u8 output range starts at 0),
MaxPool on the u8 tensor, and QuantizeLinear/DequantizeLinear where the graph leaves int8 (the
residual Sum and Relu). Only Conv, Relu and MaxPool are quantized: the operator format's Add,
GlobalAveragePool and Gemm are ONNX Runtime's com.microsoft ops (QLinearAdd,
QLinearGlobalAveragePool, QGemm), not ONNX's, so those stay f32. Its weights are quantized per
tensor: OpenVINO 2026.4's ONNX frontend refuses QLinearConv with a w_scale per output channel
("Check 'scale_dim.compatible(x_dim_at_axis)' failed").

  make_int8.py [--qop] MODEL.onnx OUT.onnx
"""
import argparse
import os
import tempfile

import onnx
import onnxruntime as ort
from common import graph_inputs, test_input
from onnx import version_converter
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                      QuantType, quantize_static)
from onnxruntime.quantization.shape_inference import quant_pre_process


class TestInputReader(CalibrationDataReader):
    """Yields the model's test input once."""

    def __init__(self, path):
        self.feeds = iter([{name: test_input(shape, dtype)
                            for name, dtype, shape in graph_inputs(path)}])

    def get_next(self):
        return next(self.feeds, None)


def upgrade(path, out):
    """The light model is opset 9 with its weights listed as graph inputs (IR 3). Per-channel
    QDQ needs opset 13 (DequantizeLinear's axis), so convert it, and drop the inputs that an
    initializer backs (IR 4 on), which would otherwise stay behind as inputs nothing feeds."""
    model = version_converter.convert_version(onnx.load(path), 13)
    inits = {i.name for i in model.graph.initializer}
    keep = [i for i in model.graph.input if i.name not in inits]
    del model.graph.input[:]
    model.graph.input.extend(keep)
    model.ir_version = max(model.ir_version, 7)
    onnx.save(model, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--qop", action="store_true", help="QuantFormat.QOperator (QLinearConv)")
    a = ap.parse_args()
    ort.set_default_logger_severity(3)  # not the optimizer's notes on unused initializers
    with tempfile.TemporaryDirectory() as tmp:
        upgraded, pre = os.path.join(tmp, "opset13.onnx"), os.path.join(tmp, "pre.onnx")
        upgrade(a.model, upgraded)
        # Static shapes: ONNX shape inference suffices (symbolic inference needs sympy).
        quant_pre_process(upgraded, pre, skip_symbolic_shape=True)
        fmt = dict(quant_format=QuantFormat.QOperator, op_types_to_quantize=["Conv", "Relu", "MaxPool"]) \
            if a.qop else dict(quant_format=QuantFormat.QDQ)
        quantize_static(pre, a.out, TestInputReader(pre), per_channel=not a.qop,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.MinMax, **fmt)
    # ONNX Runtime's optimizer declares every domain it knows; keep the ones the nodes use.
    model = onnx.load(a.out)
    used = {n.domain for n in model.graph.node} | {""}
    keep = [o for o in model.opset_import if o.domain in used]
    del model.opset_import[:]
    model.opset_import.extend(keep)
    onnx.save(model, a.out)


if __name__ == "__main__":
    main()
