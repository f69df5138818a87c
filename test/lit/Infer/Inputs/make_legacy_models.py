"""Writes ONNX models with old opsets' attribute spellings and outputs that
declare only their element type (no shape), for legacy-opset-spellings.test.
usage: make_legacy_models.py OUTDIR"""
import os
import sys

from onnx import TensorProto, helper, save


def model(name, opset, node, x_shape):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([node], name, [x], [y])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 3 if opset < 7 else 5
    save(m, os.path.join(sys.argv[1], name + ".onnx"))


model("reshape4", 4, helper.make_node("Reshape", ["x"], ["y"], name="reshape", shape=[0, -1]),
      ["N", 3, 4])
model("pad10", 10, helper.make_node("Pad", ["x"], ["y"], name="pad", pads=[0, 0, 1, 0, 0, 0, 2, 1],
                                    value=0.5), ["N", 2, 3, 3])
model("squeeze12", 12, helper.make_node("Squeeze", ["x"], ["y"], name="squeeze", axes=[1, -1]),
      ["N", 1, 5, 1])
