"""Writes small models that ask for far more memory or work than they hold.

usage: make_resource_models.py OUT_DIR

  concat_chain.onnx  x[1] concatenated with itself 40 times: 2^40 floats
  three_tensors.onnx Expand of x[1] to 2^20 floats (4 MiB), then two Negs and
                     an Add: 12 MiB held at the peak
  big_conv.onnx      a 1024x1024 image and kernel, both Expands of x[1],
                     padded to a 1025x1025 output: 2^40 multiply-accumulates
  big_matmul.onnx    two 2048x2048 Expands multiplied: 2^33
  qconv.onnx         a Q/DQ conv of 64 channels, 3x3, over 32x32 (37.7 M MACs)
  neg.onnx           y = -x for x[4]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, nodes, inputs, outputs, inits=()):
    graph = h.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    onnx.save(model, os.path.join(out, name + ".onnx"))


def scalar_input():
    return [h.make_tensor_value_info("x", T.FLOAT, [1])]


def shape(name, dims):
    return nh.from_array(np.array(dims, np.int64), name)


nodes, prev = [], "x"
for i in range(40):
    nodes.append(h.make_node("Concat", [prev, prev], [f"c{i}"], axis=0))
    prev = f"c{i}"
save("concat_chain", nodes, scalar_input(),
     [h.make_tensor_value_info(prev, T.FLOAT, None)])

save("three_tensors", [
    h.make_node("Expand", ["x", "s"], ["a"]),
    h.make_node("Neg", ["a"], ["b"]),
    h.make_node("Neg", ["b"], ["c"]),
    h.make_node("Add", ["a", "c"], ["d"]),
], scalar_input(), [h.make_tensor_value_info("d", T.FLOAT, None)],
    [shape("s", [1 << 20])])

save("big_conv", [
    h.make_node("Expand", ["x", "s"], ["image"]),
    h.make_node("Expand", ["x", "s"], ["kernel"]),
    h.make_node("Conv", ["image", "kernel"], ["y"], pads=[512, 512, 512, 512]),
], scalar_input(), [h.make_tensor_value_info("y", T.FLOAT, None)],
    [shape("s", [1, 1, 1024, 1024])])

save("big_matmul", [
    h.make_node("Expand", ["x", "s"], ["a"]),
    h.make_node("MatMul", ["a", "a"], ["y"]),
], scalar_input(), [h.make_tensor_value_info("y", T.FLOAT, None)],
    [shape("s", [2048, 2048])])

rng = np.random.default_rng(1)
weight = nh.from_array(rng.integers(-100, 100, (64, 64, 3, 3)).astype(np.int8), "w")
save("qconv", [
    h.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
    h.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
    h.make_node("DequantizeLinear", ["w", "ws"], ["wd"]),
    h.make_node("Conv", ["xd", "wd"], ["y"], pads=[1, 1, 1, 1]),
    h.make_node("QuantizeLinear", ["y", "ys", "xz"], ["yq"]),
    h.make_node("DequantizeLinear", ["yq", "ys", "xz"], ["yd"]),
], [h.make_tensor_value_info("x", T.FLOAT, [1, 64, 32, 32])],
    [h.make_tensor_value_info("yd", T.FLOAT, [1, 64, 32, 32])], [
    weight,
    nh.from_array(np.array(0.02, np.float32), "xs"),
    nh.from_array(np.array(0, np.int8), "xz"),
    nh.from_array(np.array(0.01, np.float32), "ws"),
    nh.from_array(np.array(0.5, np.float32), "ys"),
])

save("neg", [h.make_node("Neg", ["x"], ["y"])],
     [h.make_tensor_value_info("x", T.FLOAT, [4])],
     [h.make_tensor_value_info("y", T.FLOAT, [4])])
