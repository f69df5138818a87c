"""Q/DQ -> Pad(constant 0.5) -> Q/DQ on u8 with zero point 128.

usage: make_pad_qdq.py OUT.onnx
"""
import numpy as np, onnx, sys
from onnx import helper as h, TensorProto as T, numpy_helper as nh
g = h.make_graph([
    h.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
    h.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
    h.make_node("Pad", ["xd", "pads", "v"], ["p"], mode="constant"),
    h.make_node("QuantizeLinear", ["p", "s", "z"], ["pq"]),
    h.make_node("DequantizeLinear", ["pq", "s", "z"], ["y"]),
], "g", [h.make_tensor_value_info("x", T.FLOAT, [1, 2, 3, 3])],
   [h.make_tensor_value_info("y", T.FLOAT, [1, 2, 5, 5])],
   [nh.from_array(np.array(0.05, np.float32), "s"), nh.from_array(np.array(128, np.uint8), "z"),
    nh.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"), nh.from_array(np.array(0.5, np.float32), "v")])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), sys.argv[1])
