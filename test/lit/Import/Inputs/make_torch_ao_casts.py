"""A conv block as torch.onnx.export writes torch.ao's quantized modules
(torch-ao-casts.test): every activation Q -> Cast(to=UINT8) -> DQ, int8
per-channel weights and an int32 bias behind DQs of Constant nodes, the
bias zero point made by ConstantOfShape -> Cast(to=INT32).

usage: make_torch_ao_casts.py OUT.onnx

  x -> Q(u8, 0.02, 128) -> Cast(u8) -> DQ -> Conv(w, b) -> Relu
    -> Q(u8, 0.05, 0) -> Cast(u8) -> DQ -> MaxPool -> Q -> Cast(u8) -> DQ -> y
  and two Casts that stay: the u8 tensor to float (%asfloat, an output) and
  a u8 Cast that is itself a graph output (%qout).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh


def const(name, array):
    return h.make_node("Constant", [], [name], value=nh.from_array(array, name + "_value"))


rng = np.random.default_rng(3)
w = rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
w_scale = np.array([0.004, 0.005, 0.006, 0.007], np.float32)
b = rng.integers(-3000, 3000, 4).astype(np.int32)
nodes = [
    const("xs", np.array(0.02, np.float32)), const("xz", np.array(128, np.uint8)),
    h.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
    h.make_node("Cast", ["xq"], ["xc"], to=T.UINT8),
    h.make_node("DequantizeLinear", ["xc", "xs", "xz"], ["xd"]),
    const("w", w), const("ws", w_scale), const("wz", np.zeros(4, np.int8)),
    h.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
    const("b", b), const("bs", (w_scale * np.float32(0.02)).astype(np.float32)),
    const("bshape", np.array([4], np.int64)),
    h.make_node("ConstantOfShape", ["bshape"], ["bz64"],
                value=nh.from_array(np.array([0], np.int64))),
    h.make_node("Cast", ["bz64"], ["bz"], to=T.INT32),
    h.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bd"], axis=0),
    h.make_node("Conv", ["xd", "wd", "bd"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    h.make_node("Relu", ["c"], ["r"]),
    const("rs", np.array(0.05, np.float32)), const("rz", np.array(0, np.uint8)),
    h.make_node("QuantizeLinear", ["r", "rs", "rz"], ["rq"]),
    h.make_node("Cast", ["rq"], ["rc"], to=T.UINT8),
    h.make_node("DequantizeLinear", ["rc", "rs", "rz"], ["rd"]),
    h.make_node("MaxPool", ["rd"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
    h.make_node("QuantizeLinear", ["p", "rs", "rz"], ["pq"]),
    h.make_node("Cast", ["pq"], ["pc"], to=T.UINT8),
    h.make_node("DequantizeLinear", ["pc", "rs", "rz"], ["y"]),
    h.make_node("Cast", ["pq"], ["asfloat"], to=T.FLOAT),
    h.make_node("Cast", ["rq"], ["qout"], to=T.UINT8),
]
graph = h.make_graph(
    nodes, "torch_ao_casts",
    [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 8, 8])],
    [h.make_tensor_value_info("y", T.FLOAT, [1, 4, 4, 4]),
     h.make_tensor_value_info("asfloat", T.FLOAT, [1, 4, 4, 4]),
     h.make_tensor_value_info("qout", T.UINT8, [1, 4, 8, 8])])
model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)],
                     producer_name="pytorch", producer_version="1.13.0")
model.ir_version = 7
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
