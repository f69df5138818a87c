"""Writes OUT.onnx: Relu then Upsample (nearest, scales 1 1 2 2) at opset
OPSET (7 and 8: scales as an attribute; 9: as an input).
usage: make_upsample.py OUT.onnx OPSET"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out, opset = sys.argv[1], int(sys.argv[2])
inits = []
if opset >= 9:
    inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"))
    up = helper.make_node("Upsample", ["r", "scales"], ["u"], name="up", mode="nearest")
else:
    up = helper.make_node("Upsample", ["r"], ["u"], name="up", mode="nearest",
                          scales=[1.0, 1.0, 2.0, 2.0])
graph = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["r"], name="relu"), up], "upsample",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 3])],
    [helper.make_tensor_value_info("u", TensorProto.FLOAT, [1, 2, 6, 6])], inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), out)
