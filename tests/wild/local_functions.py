"""A model with model-local functions, written by onnxscript (imported by
make_models.py; onnxscript reads the functions' source, so they live at module
level). block calls scaled_tanh (a nested function) with its own attribute
(ref_attr_name) and with the default one."""
from onnxscript import FLOAT, script
from onnxscript import opset18 as op
from onnxscript.values import Opset

local = Opset("this", 1)


@script(local, default_opset=op)
def scaled_tanh(x, alpha: float = 0.5):
    return op.Tanh(op.Mul(x, op.Constant(value_float=alpha)))


@script(local, default_opset=op)
def block(x, w, alpha: float = 2.0):
    h = op.MatMul(x, w)
    return op.Add(scaled_tanh(h, alpha=alpha), scaled_tanh(h))


@script(default_opset=op)
def main(x: FLOAT[3, 4], w: FLOAT[4, 5]) -> FLOAT[3, 5]:
    return op.Add(block(x, w, alpha=3.0), block(x, w))
