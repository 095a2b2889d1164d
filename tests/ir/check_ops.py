"""Every OpenVINO op the IR reader maps, checked against OpenVINO itself: each case
builds a small model with OpenVINO's Python opset API, writes it as IR with
openvino.save_model (the serializer ovc uses), runs it on OpenVINO's CPU plugin (f32
inference precision) for the reference outputs, and runs the same .xml on runnel through
tools/run. The IR and the reference both come from OpenVINO; nothing here computes an
expected output.

    python check_ops.py --run PATH/TO/tools/run [--device REF] [--keep DIR] [CASE...]

Prints one line per case and ends with "N passed, N failed".
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import openvino as ov
import openvino.opset1 as op1
import openvino.opset10 as op10  # Interpolate-4
import openvino.opset13 as ops
import openvino.opset3 as op3  # GRUCell, RNNCell, ScatterElementsUpdate-3
import openvino.opset4 as op4  # LSTMCell-4, Range-4
import openvino.opset8 as op8  # If
import openvino.opset9 as op9  # GridSample, NonMaxSuppression-9

RNG = np.random.default_rng(1616)


def f32(*shape, lo=None):
    x = RNG.standard_normal(shape).astype(np.float32)
    return np.abs(x) + lo if lo is not None else x


def const(x):
    return ops.constant(np.asarray(x))


CASES = {}


def case(name):
    def register(fn):
        CASES[name] = fn
        return fn
    return register


def unary(name, fn, lo=None):
    case(name)(lambda: ([f32(2, 3, 4, lo=lo)], lambda p: fn(p[0])))


def binary(name, fn, a=None, b=None):
    case(name)(lambda: ([a() if a else f32(2, 3, 4), b() if b else f32(3, 1)],
                        lambda p: fn(p[0], p[1])))


for name, fn, lo in [("Relu", ops.relu, None), ("Sigmoid", ops.sigmoid, None),
                     ("Tanh", ops.tanh, None), ("Exp", ops.exp, None), ("Log", ops.log, 0.1),
                     ("Sqrt", ops.sqrt, 0.0), ("Abs", ops.abs, None),
                     ("Negative", ops.negative, None), ("Floor", ops.floor, None),
                     ("Ceiling", ops.ceiling, None), ("Erf", ops.erf, None),
                     ("Sign", ops.sign, None), ("Sin", ops.sin, None), ("Cos", ops.cos, None),
                     ("Atan", ops.atan, None), ("SoftPlus", ops.softplus, None),
                     ("SoftSign", ops.softsign, None), ("HSwish", ops.hswish, None),
                     ("Mish", ops.mish, None), ("HSigmoid", ops.hsigmoid, None),
                     ("Swish", ops.swish, None),
                     ("SwishBeta", lambda x: ops.swish(x, const(np.float32(1.7))), None),
                     ("Elu", lambda x: ops.elu(x, 0.7), None),
                     ("GeluErf", lambda x: ops.gelu(x, "erf"), None),
                     ("GeluTanh", lambda x: ops.gelu(x, "tanh"), None),
                     ("Clamp", lambda x: ops.clamp(x, -0.5, 0.8), None),
                     ("Round", lambda x: ops.round(ops.multiply(x, const(np.float32(3))),
                                                   "half_to_even"), None),
                     ("Convert", lambda x: ops.convert(ops.multiply(x, const(np.float32(4))),
                                                       "i32"), None)]:
    unary(name, fn, lo)
for name, fn, lo in [("Tan", ops.tan, None), ("Asin", lambda x: ops.asin(ops.tanh(x)), None),
                     ("Acos", lambda x: ops.acos(ops.tanh(x)), None), ("Sinh", ops.sinh, None),
                     ("Cosh", ops.cosh, None), ("Asinh", ops.asinh, None),
                     ("Acosh", ops.acosh, 1.0), ("Atanh", lambda x: ops.atanh(ops.tanh(x)), None),
                     ("SoftMaxV1", lambda x: op1.softmax(x, 2), None),
                     ("GeluV2", ov.opset2.gelu, None),
                     ("MVNV2", lambda x: ov.opset2.mvn(x, across_channels=True,
                                                       normalize_variance=True, eps=1e-3), None)]:
    unary(name, fn, lo)

for name, fn in [("Add", ops.add), ("Subtract", ops.subtract), ("Multiply", ops.multiply),
                 ("Divide", ops.divide), ("Maximum", ops.maximum), ("Minimum", ops.minimum),
                 ("SquaredDifference", ops.squared_difference),
                 ("Less", ops.less), ("Greater", ops.greater), ("Equal", ops.equal),
                 ("NotEqual", ops.not_equal), ("LessEqual", ops.less_equal),
                 ("GreaterEqual", ops.greater_equal)]:
    binary(name, fn)
binary("Power", ops.power, a=lambda: f32(2, 3, 4, lo=0.5))
binary("Mod", ops.mod, b=lambda: f32(3, 1, lo=0.5))
case("Logical")(lambda: ([f32(2, 5), f32(2, 5)], lambda p: ops.convert(ops.logical_xor(
    ops.logical_and(ops.less(p[0], p[1]), ops.greater(p[0], const(np.float32(-0.5)))),
    ops.logical_not(ops.logical_or(ops.less(p[1], const(np.float32(0))),
                                   ops.greater(p[0], const(np.float32(1)))))), "f32")))
case("FloorMod")(lambda: ([RNG.integers(-20, 20, (2, 5)).astype(np.int32),
                          RNG.integers(1, 6, (2, 5)).astype(np.int32)],
                         lambda p: ops.floor_mod(p[0], ops.negative(p[1]))))
case("Select")(lambda: ([f32(2, 3, 4), f32(2, 3, 4)],
                        lambda p: ops.select(ops.less(p[0], p[1]), p[0], const(np.float32(7)))))
case("PReLU")(lambda: ([f32(1, 3, 4, 5)],
                       lambda p: ops.prelu(p[0], const(np.array([0.1, 0.2, 0.3], np.float32)))))

case("Convolution")(lambda: ([f32(1, 3, 9, 9)], lambda p: ops.convolution(
    p[0], const(f32(4, 3, 3, 3)), [2, 1], [1, 0], [0, 1], [1, 2])))
case("ConvolutionSameUpper")(lambda: ([f32(1, 2, 7, 7)], lambda p: ops.convolution(
    p[0], const(f32(3, 2, 2, 2)), [2, 2], [0, 0], [0, 0], [1, 1], auto_pad="same_upper")))
case("GroupConvolution")(lambda: ([f32(1, 4, 6, 6)], lambda p: ops.group_convolution(
    p[0], const(f32(2, 3, 2, 3, 3)), [1, 1], [1, 1], [1, 1], [1, 1])))
case("MatMul")(lambda: ([f32(2, 4, 3), f32(5, 4)],
                        lambda p: ops.matmul(p[0], p[1], transpose_a=True, transpose_b=True)))
case("MaxPool")(lambda: ([f32(1, 2, 7, 7)], lambda p: ops.max_pool(
    p[0], [2, 2], [1, 1], [0, 0], [1, 1], [3, 3], rounding_type="ceil").output(0)))
case("MaxPoolV1")(lambda: ([f32(1, 2, 6, 6)], lambda p: op1.max_pool(
    p[0], [2, 2], [1, 0], [1, 0], [3, 2])))
case("AvgPoolExcludePad")(lambda: ([f32(1, 2, 6, 6)], lambda p: ops.avg_pool(
    p[0], [2, 2], [1, 1], [1, 1], [3, 3], exclude_pad=True)))
case("AvgPoolIncludePad")(lambda: ([f32(1, 2, 6, 6)], lambda p: ops.avg_pool(
    p[0], [1, 1], [1, 1], [1, 1], [3, 3], exclude_pad=False)))
case("LRN")(lambda: ([f32(1, 6, 4, 4)], lambda p: ops.lrn(p[0], const(np.array([1], np.int64)),
                                                          alpha=1e-3, beta=0.75, bias=2.0, size=3)))
case("SoftMax")(lambda: ([f32(2, 3, 5)], lambda p: ops.softmax(p[0], -2)))
case("LogSoftmax")(lambda: ([f32(2, 3, 5)], lambda p: ops.log_softmax(p[0], 1)))
case("MVNInside")(lambda: ([f32(2, 3, 8)], lambda p: ops.mvn(
    p[0], const(np.array([-1], np.int64)), True, 1e-3, "inside_sqrt")))
case("MVNOutside")(lambda: ([f32(2, 3, 4, 4)], lambda p: ops.mvn(
    p[0], const(np.array([2, 3], np.int32)), True, 1e-2, "outside_sqrt")))
case("MVNMeanOnly")(lambda: ([f32(2, 3, 8)], lambda p: ops.mvn(
    p[0], const(np.array([1, 2], np.int64)), False, 1e-3, "inside_sqrt")))
case("BatchNormInference")(lambda: ([f32(2, 3, 4, 4)], lambda p: ops.batch_norm_inference(
    p[0], const(f32(3)), const(f32(3)), const(f32(3)), const(f32(3, lo=0.5)), 1e-3)))
case("BatchNormInferenceV1")(lambda: ([f32(2, 3, 4)], lambda p: op1.batch_norm_inference(
    p[0], const(f32(3)), const(f32(3)), const(f32(3)), const(f32(3, lo=0.5)), 1e-3)))
case("SDPA")(lambda: ([f32(1, 2, 5, 8), f32(1, 2, 6, 8), f32(1, 2, 6, 4), f32(1, 1, 5, 6)],
                      lambda p: ops.scaled_dot_product_attention(p[0], p[1], p[2], p[3])))
case("SDPABoolMaskScale")(lambda: ([f32(1, 2, 5, 8), f32(1, 2, 6, 8), f32(1, 2, 6, 4)],
                                   lambda p: ops.scaled_dot_product_attention(
                                       p[0], p[1], p[2],
                                       const(np.tril(np.ones((5, 6), bool), 1)),
                                       const(np.float32(0.3)))))
case("InterpolateNearestSizes")(lambda: ([f32(1, 2, 4, 5)], lambda p: ops.interpolate(
    p[0], const(np.array([7, 9], np.int64)), "nearest", "sizes",
    axes=const(np.array([2, 3], np.int64)), coordinate_transformation_mode="asymmetric",
    nearest_mode="floor")))
case("InterpolateLinearScales")(lambda: ([f32(1, 2, 4, 5)], lambda p: ops.interpolate(
    p[0], const(np.array([1.5, 2.0], np.float32)), "linear_onnx", "scales",
    axes=const(np.array([2, 3], np.int64)))))
case("InterpolateV4Cubic")(lambda: ([f32(1, 1, 4, 4)], lambda p: op10.interpolate(
    p[0], const(np.array([6, 6], np.int64)), const(np.array([1.5, 1.5], np.float32)),
    "cubic", "sizes", axes=const(np.array([2, 3], np.int64)))))

case("Concat")(lambda: ([f32(2, 3), f32(2, 1)], lambda p: ops.concat([p[0], p[1], p[0]], -1)))
case("ReshapeSpecialZero")(lambda: ([f32(2, 3, 4)], lambda p: ops.reshape(
    p[0], const(np.array([0, -1], np.int32)), True)))
case("Reshape")(lambda: ([f32(2, 3, 4)], lambda p: ops.reshape(
    p[0], const(np.array([4, 6], np.int64)), False)))
case("Transpose")(lambda: ([f32(2, 3, 4)], lambda p: ops.transpose(
    p[0], const(np.array([2, 0, 1], np.int64)))))
case("SqueezeUnsqueeze")(lambda: ([f32(2, 1, 4)], lambda p: ops.unsqueeze(
    ops.squeeze(p[0], const(np.array([1], np.int64))), const(np.array([0, 3], np.int32)))))
case("ShuffleChannels")(lambda: ([f32(1, 6, 2, 2)], lambda p: ops.shuffle_channels(p[0], 1, 3)))
case("Gather")(lambda: ([f32(5, 4)], lambda p: ops.gather(
    p[0], const(np.array([[0, -1], [2, 3]], np.int64)), const(np.int64(0)))))
case("ShapeOf")(lambda: ([f32(2, 3, 4)], lambda p: ops.convert(
    ops.shape_of(p[0], "i32"), "f32")))
case("Broadcast")(lambda: ([f32(3, 1)], lambda p: ops.broadcast(
    p[0], const(np.array([2, 3, 4], np.int64)))))
case("BroadcastBidirectional")(lambda: ([f32(3, 1)], lambda p: ops.broadcast(
    p[0], const(np.array([2, 1, 4], np.int64)), broadcast_spec="BIDIRECTIONAL")))
case("Slice")(lambda: ([f32(6, 7)], lambda p: ops.slice(
    p[0], const(np.array([1, -1], np.int64)), const(np.array([5, 0], np.int64)),
    const(np.array([2, -2], np.int64)), const(np.array([0, 1], np.int64)))))
case("StridedSlice")(lambda: ([f32(4, 5, 6)], lambda p: ops.strided_slice(
    p[0], const(np.array([1, 0, 1], np.int64)), const(np.array([3, 2, 6], np.int64)),
    const(np.array([1, 1, 2], np.int64)), begin_mask=[0, 0, 1], end_mask=[0, 1, 0],
    shrink_axis_mask=[0, 1, 0])))
case("Split")(lambda: ([f32(2, 6)], lambda p: ops.split(p[0], const(np.int64(1)), 3).outputs()))
case("VariadicSplit")(lambda: ([f32(5, 2)], lambda p: ops.variadic_split(
    p[0], const(np.int64(0)), const(np.array([2, -1, 1], np.int64))).outputs()))
case("PadConstant")(lambda: ([f32(2, 3)], lambda p: ops.pad(
    p[0], const(np.array([1, 0], np.int64)), const(np.array([0, 2], np.int64)), "constant",
    const(np.float32(0.5)))))
case("PadReflect")(lambda: ([f32(3, 4)], lambda p: ops.pad(
    p[0], const(np.array([1, 2], np.int32)), const(np.array([2, 1], np.int32)), "reflect")))
case("PadEdge")(lambda: ([f32(3, 4)], lambda p: ops.pad(
    p[0], const(np.array([0, 1], np.int64)), const(np.array([2, 0], np.int64)), "edge")))
case("Tile")(lambda: ([f32(2, 3, 2)], lambda p: ops.tile(p[0], const(np.array([2, 3], np.int64)))))
case("DepthToSpaceBlocksFirst")(lambda: ([f32(1, 8, 2, 3)], lambda p: ops.depth_to_space(
    p[0], "blocks_first", 2)))
case("DepthToSpaceDepthFirst")(lambda: ([f32(1, 8, 2, 3)], lambda p: ops.depth_to_space(
    p[0], "depth_first", 2)))
for name, fn in [("ReduceMean", ops.reduce_mean), ("ReduceSum", ops.reduce_sum),
                 ("ReduceMax", ops.reduce_max), ("ReduceMin", ops.reduce_min),
                 ("ReduceProd", ops.reduce_prod), ("ReduceL1", ops.reduce_l1),
                 ("ReduceL2", ops.reduce_l2)]:
    case(name)(lambda fn=fn: ([f32(2, 3, 4)], lambda p: [
        fn(p[0], const(np.array([1, -1], np.int64)), True),
        fn(p[0], const(np.array([0], np.int32)), False)]))
case("Einsum")(lambda: ([f32(2, 3, 4), f32(2, 4, 5)], lambda p: ops.einsum([p[0], p[1]],
                                                                            "bij,bjk->bik")))



# Recurrent ops: weights [dirs, gates * hidden, ...] in OpenVINO's gate order, which the
# reader regroups for ONNX (LSTM f,i,c,o -> i,o,f,c; separate recurrence biases).
def rnn_seq(fn, gates, dirs, extra, lbr=False):
    b, t, i, h = 2, 5, 3, 4
    nb = gates + (1 if lbr else 0)
    states = [f32(b, dirs, h) for _ in range(2 if gates == 4 else 1)]
    return ([f32(b, t, i), *states], lambda p: fn(
        p[0], *p[1:], const(np.array([5, 3], np.int32)), const(f32(dirs, gates * h, i)),
        const(f32(dirs, gates * h, h)), const(f32(dirs, nb * h)), h, extra, **(
            {"linear_before_reset": True} if lbr else {})).outputs())


case("LSTMSequenceBidirectional")(lambda: rnn_seq(ops.lstm_sequence, 4, 2, "bidirectional"))
case("LSTMSequenceReverse")(lambda: rnn_seq(ops.lstm_sequence, 4, 1, "reverse"))
case("GRUSequence")(lambda: rnn_seq(ops.gru_sequence, 3, 1, "forward"))
case("GRUSequenceLinearBeforeReset")(lambda: rnn_seq(ops.gru_sequence, 3, 2, "bidirectional",
                                                     lbr=True))
case("RNNSequence")(lambda: rnn_seq(ops.rnn_sequence, 1, 1, "reverse"))
case("LSTMCell")(lambda: ([f32(2, 3), f32(2, 4), f32(2, 4)], lambda p: op4.lstm_cell(
    p[0], p[1], p[2], const(f32(16, 3)), const(f32(16, 4)), const(f32(16)), 4).outputs()))
case("GRUCellLinearBeforeReset")(lambda: ([f32(2, 3), f32(2, 4)], lambda p: op3.gru_cell(
    p[0], p[1], const(f32(12, 3)), const(f32(12, 4)), const(f32(16)), 4,
    linear_before_reset=True)))
case("RNNCellRelu")(lambda: ([f32(2, 3), f32(2, 4)], lambda p: op3.rnn_cell(
    p[0], p[1], const(f32(4, 3)), const(f32(4, 4)), const(f32(4)), 4, ["relu"], [], [])))
case("HardSigmoid")(lambda: ([f32(2, 3, 4)], lambda p: op1.hard_sigmoid(
    p[0], const(np.float32(0.3)), const(np.float32(0.4)))))
case("Selu")(lambda: ([f32(2, 3, 4)], lambda p: op1.selu(
    p[0], const(np.float32([1.6])), const(np.float32([1.05])))))
case("Range4")(lambda: ([np.array(2.5, np.float32)], lambda p: ops.range(
    p[0], const(np.float32(9)), const(np.float32(1.5)), "f32")))
case("Range4Int")(lambda: ([np.array(7, np.int64)], lambda p: ops.range(
    const(np.int32(-3)), p[0], const(np.int32(2)), "i32")))
case("IntegerDivide")(lambda: ([RNG.integers(-20, 20, (2, 5)).astype(np.int32),
                              RNG.choice([-7, -3, 2, 5], (2, 5)).astype(np.int32)],
                             lambda p: ops.divide(p[0], p[1])))
case("TopK")(lambda: ([f32(3, 7)], lambda p: ops.topk(
    p[0], const(np.int64(3)), 1, "max", "value", "i32").outputs()))
case("TopKMin")(lambda: ([f32(6, 2)], lambda p: ops.topk(
    p[0], const(np.int32(2)), 0, "min", "value", "i64").outputs()))
case("GatherElements")(lambda: ([f32(3, 4)], lambda p: ops.gather_elements(
    p[0], const(np.array([[0, 2, 1, 1], [2, 0, 0, 1]], np.int32)), 0)))
case("GatherND")(lambda: ([f32(2, 3, 4)], lambda p: ops.gather_nd(
    p[0], const(np.array([[[1], [0]], [[2], [1]]], np.int64)), 1)))
case("ScatterElementsUpdateSum")(lambda: ([f32(3, 4), f32(2, 4)], lambda p:
                                          ops.scatter_elements_update(
    p[0], const(np.array([[0, 2, 1, 1], [2, 0, 0, 1]], np.int64)), p[1],
    const(np.int64(0)), "sum")))
case("ConvolutionBackpropData")(lambda: ([f32(1, 3, 5, 5)], lambda p:
                                         ops.convolution_backprop_data(
    p[0], const(f32(3, 2, 3, 3)), [2, 2], pads_begin=[1, 0], pads_end=[0, 1], dilations=[1, 1],
    output_padding=[1, 1])))
case("GroupConvolutionBackpropData")(lambda: ([f32(1, 4, 4, 4)], lambda p:
                                              ops.group_convolution_backprop_data(
    p[0], const(f32(2, 2, 3, 3, 3)), [1, 1], pads_begin=[1, 1], pads_end=[1, 1],
    dilations=[1, 1])))
case("FakeQuantize")(lambda: ([f32(2, 3, 4)], lambda p: ops.fake_quantize(
    p[0], const(np.float32(-1.0)), const(np.float32(1.2)), const(np.float32(-0.5)),
    const(np.float32(2.0)), 5)))
case("FakeQuantizePerChannel")(lambda: ([f32(1, 3, 2, 2)], lambda p: ops.fake_quantize(
    p[0], const(np.float32([-1, -0.5, -2]).reshape(1, 3, 1, 1)),
    const(np.float32([1, 0.5, 2]).reshape(1, 3, 1, 1)), const(np.float32(0)),
    const(np.float32(255)), 256)))
case("CumSumExclusiveReverse")(lambda: ([f32(3, 4)], lambda p: ops.cumsum(
    p[0], const(np.int32(1)), True, True)))
case("OneHot")(lambda: ([np.array([[0, 2], [1, 3]], np.int32)], lambda p: ops.one_hot(
    p[0], const(np.int64(4)), const(np.float32(5)), const(np.float32(-1)), 1)))
case("SpaceToDepthDepthFirst")(lambda: ([f32(1, 3, 4, 6)], lambda p: ops.space_to_depth(
    p[0], "depth_first", 2)))
case("ReverseSequence")(lambda: ([f32(4, 3, 2)], lambda p: ops.reverse_sequence(
    p[0], const(np.array([4, 1, 3], np.int32)), 1, 0)))
case("NormalizeL2Max")(lambda: ([f32(2, 3, 4)], lambda p: ops.normalize_l2(
    p[0], const(np.array([1, 2], np.int64)), 1e-3, "max")))
case("VariadicSplitMinusOne")(lambda: ([f32(2, 7)], lambda p: ops.variadic_split(
    p[0], const(np.int64(1)), const(np.array([2, -1, 1], np.int64))).outputs()))
# bicubic with border padding is refused: OpenVINO's CPU plugin differs from ONNX's there.
for gs_mode, gs_pad in [("bicubic", "zeros"), ("bilinear", "border"), ("nearest", "reflection")]:
    case(f"GridSample_{gs_mode}_{gs_pad}")(lambda m=gs_mode, pd=gs_pad: (
        [f32(1, 2, 4, 5), np.clip(f32(1, 3, 3, 2), -1.2, 1.2)], lambda p: op9.grid_sample(
            p[0], p[1], {"align_corners": True, "mode": m, "padding_mode": pd})))
case("NonMaxSuppression")(lambda: ([np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9],
                                               [0, 10, 1, 11], [0, 10.1, 1, 11.1],
                                               [0, 100, 1, 101]]], np.float32),
                                    np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3],
                                               [0.1, 0.8, 0.7, 0.2, 0.9, 0.6]]], np.float32)],
                                   lambda p: op9.non_max_suppression(
    p[0], p[1], const(np.int64(3)), const(np.float32(0.5)), const(np.float32(0.0)),
    sort_result_descending=False, output_type="i32").outputs()))
case("MaxPoolIndices")(lambda: ([f32(2, 3, 5, 5)], lambda p: op8.max_pool(
    p[0], [1, 1], [1, 1], [0, 0], [1, 1], [3, 3], "ceil", "explicit", "i32", 0).outputs()))


def loop_model(p):
    """Loop (opset5): 4 iterations (trip count input), a carried sum and the iteration
    number, the per-iteration values concatenated along axis 0."""
    trip = const(np.int64(4))
    cond = const(np.bool_(True))
    it = ops.parameter([], np.int64)
    acc = ops.parameter([2, 3], np.float32)
    x = ops.parameter([2, 3], np.float32)
    nxt = ops.add(acc, ops.multiply(x, ops.convert(it, "f32")))
    body = ov.Model([ops.result(ops.constant(np.bool_(True))), ops.result(nxt),
                     ops.result(ops.unsqueeze(nxt, const(np.int64(0))))], [it, acc, x], "body")
    node = ops.loop(trip.output(0), cond.output(0))
    node.set_function(body)
    node.set_special_body_ports([0, 0])
    node.set_merged_input(acc, p[0].output(0), body.get_results()[1].output(0))
    node.set_invariant_input(x, p[1].output(0))
    return [node.get_iter_value(body.get_results()[1].output(0), -1),
            node.get_concatenated_slices(body.get_results()[2].output(0), 0, 1, 1, -1, 0)]


case("Loop")(lambda: ([f32(2, 3), f32(2, 3)], loop_model))


def if_model(p):
    """If whose branches read the layer's inputs through the port maps: then x + y,
    else x * x (one input unused by one branch)."""
    cond = ops.reduce_sum(p[0], const(np.array([0, 1], np.int64)), False)
    cond = ops.greater(cond, const(np.float32(0)))
    tx = ops.parameter([2, 3], np.float32)
    ty = ops.parameter([2, 3], np.float32)
    then_body = ov.Model([ops.result(ops.add(tx, ty))], [tx, ty], "then")
    ex = ops.parameter([2, 3], np.float32)
    else_body = ov.Model([ops.result(ops.multiply(ex, ex))], [ex], "else")
    node = op8.if_op(cond.output(0))
    node.set_then_body(then_body)
    node.set_else_body(else_body)
    node.set_input(p[0].output(0), tx, ex)
    node.set_input(p[1].output(0), ty, None)
    return node.set_output(then_body.get_results()[0], else_body.get_results()[0])


case("IfThen")(lambda: ([np.abs(f32(2, 3)), f32(2, 3)], if_model))
case("IfElse")(lambda: ([-np.abs(f32(2, 3)), f32(2, 3)], if_model))


def build(name):
    inputs, body = CASES[name]()
    params = []
    for i, x in enumerate(inputs):
        p = ops.parameter(list(x.shape), ov.Type(x.dtype), name=f"in{i}")
        p.output(0).get_tensor().set_names({f"in{i}"})
        params.append(p)
    outs = body(params)
    outs = outs if isinstance(outs, list) else [outs]
    results = []
    for i, o in enumerate(outs):
        o = o if isinstance(o, ov.Output) else o.output(0)
        o.get_tensor().set_names({f"out{i}"})
        results.append(ops.result(o))
    return ov.Model(results, params, name), inputs


def check(name, tool, device, folder):
    model, inputs = build(name)
    xml = os.path.join(folder, name + ".xml")
    ov.save_model(model, xml, compress_to_fp16=False)
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    ref = compiled(inputs)
    args = []
    for i, x in enumerate(inputs):
        path = os.path.join(folder, f"{name}_in{i}.npy")
        np.save(path, x)
        args += ["-i", f"in{i}={path}"]
    out = os.path.join(folder, name + "_out")
    os.makedirs(out, exist_ok=True)
    p = subprocess.run([tool, "-m", xml, "-d", device, "-o", out] + args,
                       capture_output=True, text=True)
    if p.returncode != 0:
        return False, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "tools/run failed"
    worst = 0.0
    for i in range(len(compiled.outputs)):
        want = np.asarray(ref[compiled.outputs[i]])
        path = os.path.join(out, f"out{i}.npy")
        if not os.path.exists(path):
            return False, f"no output out{i} (have {sorted(os.listdir(out))})"
        got = np.load(path)
        if got.shape != want.shape:
            return False, f"out{i}: shape {list(got.shape)}, OpenVINO {list(want.shape)}"
        if want.dtype.kind == "f":
            err = np.abs(got.astype(np.float64) - want)
            if not np.all(err <= 1e-4 + 1e-4 * np.abs(want)):
                return False, f"out{i}: max abs diff {err.max():.3g}"
            worst = max(worst, float(err.max()))
        elif not np.array_equal(got.astype(want.dtype), want):
            return False, f"out{i}: values differ"
    return True, f"{len(compiled.outputs)} outputs, max abs diff {worst:.2g}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--run", required=True)
    p.add_argument("--device", default="REF")
    p.add_argument("--keep", help="write the IR files here instead of a temporary folder")
    p.add_argument("cases", nargs="*")
    a = p.parse_args()
    names = a.cases or list(CASES)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = a.keep or tmp
        os.makedirs(folder, exist_ok=True)
        for name in names:
            try:
                ok, what = check(name, a.run, a.device, folder)
            except Exception as e:  # a case OpenVINO itself refuses is a failure to report
                ok, what = False, f"{type(e).__name__}: {e}".splitlines()[0]
            print(f"{'PASS' if ok else 'FAIL'} {name}: {what}", flush=True)
            passed += ok
            failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
