"""Writes a Q/DQ -> Relu -> Q/DQ model whose graph, node and tensor names all
hold an OSC 52 clipboard write, a carriage return and a line break with a
forged "qopt: error:" line (names-everywhere.test).

usage: make_escape_everywhere.py OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

bad = "a\x1b]52;c;ZXZpbA==\x07\rqopt: error: forged\nb"
nodes = [
    h.make_node("QuantizeLinear", ["x", "s", "z"], ["q" + bad], name="Q" + bad),
    h.make_node("DequantizeLinear", ["q" + bad, "s", "z"], ["d" + bad], name="DQ" + bad),
    h.make_node("Relu", ["d" + bad], ["y" + bad], name="R" + bad),
    h.make_node("QuantizeLinear", ["y" + bad, "s2", "z"], ["q2" + bad], name="Q2" + bad),
    h.make_node("DequantizeLinear", ["q2" + bad, "s2", "z"], ["out" + bad], name="DQ2" + bad),
]
graph = h.make_graph(
    nodes, "g" + bad, [h.make_tensor_value_info("x", T.FLOAT, [1, 4])],
    [h.make_tensor_value_info("out" + bad, T.FLOAT, [1, 4])],
    [nh.from_array(np.array(0.1, np.float32), "s"),
     nh.from_array(np.array(0.05, np.float32), "s2"),
     nh.from_array(np.array(0, np.int8), "z")])
model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
model.ir_version = 7
onnx.save(model, sys.argv[1])
