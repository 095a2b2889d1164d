"""Writes data/dynamic_add.onnx, the dynamic-shape model of the tools'
tests: sum = x + y with x, y of shape [N, 4] (N dynamic).

Run once with the system python3 (onnx 1.22.0); the file is checked in.
It only builds a graph: no expected outputs come from here."""
import os

import onnx
from onnx import TensorProto, helper

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
s = helper.make_tensor_value_info("sum", TensorProto.FLOAT, ["N", 4])
graph = helper.make_graph([helper.make_node("Add", ["x", "y"], ["sum"], name="add")],
                          "dynamic_add", [x, y], [s])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="runnel tests")
model.ir_version = 8
onnx.checker.check_model(model)
here = os.path.dirname(os.path.abspath(__file__))
onnx.save(model, os.path.join(here, "data", "dynamic_add.onnx"))
