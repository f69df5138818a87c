"""Writes a model whose int8 weight (2^20 + 2 elements, over the import
folder's cap) reaches its DequantizeLinear through a Reshape of constants."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

n = (1 << 20) + 2
w = numpy_helper.from_array((np.arange(n) % 7 - 3).astype(np.int8).reshape(2, n // 2), "w")
shape = numpy_helper.from_array(np.array([n // 2, 2], np.int64), "shape")
scale = numpy_helper.from_array(np.array(0.5, np.float32), "scale")
zp = numpy_helper.from_array(np.array(0, np.int8), "zp")
nodes = [
    helper.make_node("Identity", ["zp"], ["zp_id"], name="dedup"),
    helper.make_node("Reshape", ["w", "shape"], ["w_r"], name="reshape"),
    helper.make_node("DequantizeLinear", ["w_r", "scale", "zp_id"], ["y"], name="dq"),
]
graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=[w, shape, scale, zp])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 7
onnx.save(model, sys.argv[1])
