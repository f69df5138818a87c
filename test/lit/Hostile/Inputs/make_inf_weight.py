"""A Q/DQ conv whose weight scale (3e38) makes dequantized weights inf.

usage: make_inf_weight.py OUT.onnx

The reference dequantizes in f32: weights of 2 and -3 become inf and -inf,
and the sums inf - inf or inf * 0 = NaN, which quantizes to the zero point
(128); integer sums would give 255 or 0 there instead.
"""
import numpy as np, onnx, sys
from onnx import helper as h, TensorProto as T, numpy_helper as nh
w = np.zeros((4, 4, 3, 3), np.int8); w[0, 0, 1, 1] = 2; w[1, 1, 0, 0] = -3; w[2] = 1
g = h.make_graph([
    h.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
    h.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
    h.make_node("DequantizeLinear", ["w", "ws"], ["wd"]),
    h.make_node("Conv", ["xd", "wd"], ["y"], pads=[1, 1, 1, 1]),
    h.make_node("QuantizeLinear", ["y", "ys", "xz"], ["yq"]),
    h.make_node("DequantizeLinear", ["yq", "ys", "xz"], ["yd"]),
], "g", [h.make_tensor_value_info("x", T.FLOAT, [1, 4, 5, 5])],
   [h.make_tensor_value_info("yd", T.FLOAT, [1, 4, 5, 5])],
   [nh.from_array(w, "w"), nh.from_array(np.array(0.05, np.float32), "xs"),
    nh.from_array(np.array(128, np.uint8), "xz"),
    nh.from_array(np.array(3e38, np.float32), "ws"),
    nh.from_array(np.array(0.5, np.float32), "ys")])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), sys.argv[1])
