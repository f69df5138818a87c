"""Dynamic quantization as ONNX Runtime's quantize_dynamic writes it
(dynamic-quant.test): three MatMuls on [1, 16, 32] tokens.

usage: make_dynamic_quant.py OUT.onnx [--forms | --varied]

With --forms, one MatMul three ways on the same x and weight instead:
outputs chain (DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul by
the scale product), fused (DynamicQuantizeLinear -> MatMulIntegerToFloat)
and dqmm (DynamicQuantizeMatMul), which ONNX Runtime computes alike.

  m1  DynamicQuantizeLinear -> MatMulInteger (int8 B [32, 32]) -> Cast ->
      Mul by Mul(a_scale, b_scale) -> Add bias
  m2  com.microsoft.DynamicQuantizeMatMul (B [32, 32], b_scale, zero point)
  m3  DynamicQuantizeLinear -> com.microsoft.MatMulIntegerToFloat with a bias

With --varied, the weights ONNX Runtime's quantizer writes with other
options instead: m1's scale per column (B [32, 48] into 48 columns), m2's
B u8 with zero point 131, m3's B int8 with a zero point per column; 2-D x
[24, 32] -> [24, 48] -> ... (the plan's gemm steps take each form); m2's
bias an Add after it.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

rng = np.random.default_rng(5)


def weight(name):
    return [nh.from_array(rng.integers(-127, 128, (32, 32)).astype(np.int8), name),
            nh.from_array(np.array(0.01, np.float32), name + "_scale"),
            nh.from_array(np.array(0, np.int8), name + "_zero_point")]


inits = weight("w1") + weight("w2") + weight("w3") + [
    nh.from_array(rng.standard_normal(32).astype(np.float32), "b1"),
    nh.from_array(rng.standard_normal(32).astype(np.float32), "b3")]
nodes = [
    h.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dql1"),
    h.make_node("MatMulInteger", ["xq", "w1", "xz", "w1_zero_point"], ["acc1"], name="m1"),
    h.make_node("Cast", ["acc1"], ["f1"], to=T.FLOAT, name="cast1"),
    h.make_node("Mul", ["xs", "w1_scale"], ["s1"], name="scales1"),
    h.make_node("Mul", ["f1", "s1"], ["y1"], name="scale1"),
    h.make_node("Add", ["y1", "b1"], ["z1"], name="bias1"),
    h.make_node("Relu", ["z1"], ["r1"], name="relu1"),
    h.make_node("DynamicQuantizeMatMul", ["r1", "w2", "w2_scale", "w2_zero_point"], ["y2"],
                name="m2", domain="com.microsoft"),
    h.make_node("DynamicQuantizeLinear", ["y2"], ["yq", "ys", "yz"], name="dql3"),
    h.make_node("MatMulIntegerToFloat", ["yq", "w3", "ys", "w3_scale", "yz", "w3_zero_point", "b3"],
                ["y"], name="m3", domain="com.microsoft"),
]
graph = h.make_graph(nodes, "dynamic_quant",
                     [h.make_tensor_value_info("x", T.FLOAT, [1, 16, 32])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, 16, 32])], inits)
if "--forms" in sys.argv:
    nodes = [
        h.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        h.make_node("MatMulInteger", ["xq", "w1", "xz", "w1_zero_point"], ["acc"]),
        h.make_node("Cast", ["acc"], ["accf"], to=T.FLOAT),
        h.make_node("Mul", ["xs", "w1_scale"], ["s"]),
        h.make_node("Mul", ["accf", "s"], ["chain"]),
        h.make_node("MatMulIntegerToFloat", ["xq", "w1", "xs", "w1_scale", "xz", "w1_zero_point"],
                    ["fused"], domain="com.microsoft"),
        h.make_node("DynamicQuantizeMatMul", ["x", "w1", "w1_scale", "w1_zero_point"], ["dqmm"],
                    domain="com.microsoft"),
    ]
    graph = h.make_graph(nodes, "dynamic_forms",
                         [h.make_tensor_value_info("x", T.FLOAT, [1, 16, 32])],
                         [h.make_tensor_value_info(n, T.FLOAT, [1, 16, 32])
                          for n in ("chain", "fused", "dqmm")], inits[:3])
if "--varied" in sys.argv:
    w1 = rng.integers(-127, 128, (32, 48)).astype(np.int8)
    w2 = rng.integers(0, 256, (48, 40)).astype(np.uint8)
    w3 = rng.integers(-120, 121, (40, 16)).astype(np.int8)
    inits = [nh.from_array(w1, "w1"),
             nh.from_array((0.002 + 0.0005 * np.arange(48)).astype(np.float32), "w1_scale"),
             nh.from_array(np.array(0, np.int8), "w1_zero_point"),
             nh.from_array(w2, "w2"), nh.from_array(np.array(0.004, np.float32), "w2_scale"),
             nh.from_array(np.array(131, np.uint8), "w2_zero_point"),
             nh.from_array(w3, "w3"), nh.from_array(np.array(0.01, np.float32), "w3_scale"),
             nh.from_array((np.arange(16) % 5 - 2).astype(np.int8), "w3_zero_point"),
             nh.from_array(rng.standard_normal(48).astype(np.float32), "b1"),
             nh.from_array(rng.standard_normal(16).astype(np.float32), "b3")]
    # m2's bias as an Add after it (torch's Linear exported that way).
    inits.append(nh.from_array(rng.standard_normal(40).astype(np.float32), "b2"))
    nodes = [n for n in nodes]
    nodes.insert(8, h.make_node("Add", ["y2", "b2"], ["y2b"], name="bias2"))
    nodes[9] = h.make_node("DynamicQuantizeLinear", ["y2b"], ["yq", "ys", "yz"], name="dql3")
    graph = h.make_graph(nodes, "dynamic_varied",
                         [h.make_tensor_value_info("x", T.FLOAT, [24, 32])],
                         [h.make_tensor_value_info("y", T.FLOAT, [24, 16])], inits)
model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13), h.make_opsetid("com.microsoft", 1)])
model.ir_version = 7
onnx.save(model, sys.argv[1])
