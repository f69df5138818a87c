#!/usr/bin/python3
"""Synthetic explicitly quantized ONNX model of about N nodes, for compile-speed benches.

usage: /usr/bin/python3 bench/gen_qdq_chain.py N OUT.onnx

A chain of units (16 nodes each) on a 1x8x4x4 float tensor, shaped so that placement passes have
work at every unit (what bench/ScalingBench.cpp's qdq-mix does for cse/dce, with convs):

    x -> Q(s1) -> DQ ----------------------------+        (DQ with two consumers: ensure-unique-dq)
                  |                              |
                  Conv(DQ(int8 W, per-channel s), bias) -> Relu -> Q(s2) -> DQ
                  -> Split(4,4) -> Q(s3)/DQ and Q(s4)/DQ (a scale per branch) -> Concat
                  -> Q(s5) -> DQ -> Add(., residual DQ) -> next x

Per-tensor scales alternate between shape [1] (torch style) and scalars (scalar-qparams has work);
every unit has its own values, so cse finds nothing to merge by accident.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    n_nodes, out = int(sys.argv[1]), sys.argv[2]
    units = max(1, n_nodes // 16)
    C = 8
    nodes, inits = [], []
    rng = np.random.default_rng(0)
    split = numpy_helper.from_array(np.array([4, 4], np.int64), "split")
    inits.append(split)
    zp = numpy_helper.from_array(np.array(0, np.int8), "zp")
    zp1 = numpy_helper.from_array(np.array([0], np.int8), "zp1")
    inits += [zp, zp1]
    N = helper.make_node
    x = "x"
    for u in range(units):
        p = f"u{u}_"
        shape1 = u % 2 == 0
        z = "zp1" if shape1 else "zp"

        def scale(name, v):
            arr = np.array([v] if shape1 else v, np.float32)
            inits.append(numpy_helper.from_array(arr, p + name))
            return p + name

        s = [scale(f"s{i}", 0.01 + 0.001 * ((u * 5 + i) % 97)) for i in range(1, 6)]
        w = numpy_helper.from_array(rng.integers(-127, 128, (C, C, 1, 1), dtype=np.int8), p + "w")
        ws = numpy_helper.from_array((0.001 + 0.0001 * np.arange(C) + 1e-6 * u).astype(np.float32), p + "ws")
        wz = numpy_helper.from_array(np.zeros(C, np.int8), p + "wz")
        b = numpy_helper.from_array((0.01 * np.arange(C)).astype(np.float32), p + "b")
        inits += [w, ws, wz, b]
        nodes += [
            N("QuantizeLinear", [x, s[0], z], [p + "q1"]),
            N("DequantizeLinear", [p + "q1", s[0], z], [p + "a"]),
            N("DequantizeLinear", [p + "w", p + "ws", p + "wz"], [p + "wf"], axis=0),
            N("Conv", [p + "a", p + "wf", p + "b"], [p + "c"]),
            N("Relu", [p + "c"], [p + "r"]),
            N("QuantizeLinear", [p + "r", s[1], z], [p + "q2"]),
            N("DequantizeLinear", [p + "q2", s[1], z], [p + "d2"]),
            N("Split", [p + "d2", "split"], [p + "sa", p + "sb"], axis=1),
            N("QuantizeLinear", [p + "sa", s[2], z], [p + "q3"]),
            N("DequantizeLinear", [p + "q3", s[2], z], [p + "d3"]),
            N("QuantizeLinear", [p + "sb", s[3], z], [p + "q4"]),
            N("DequantizeLinear", [p + "q4", s[3], z], [p + "d4"]),
            N("Concat", [p + "d3", p + "d4"], [p + "cat"], axis=1),
            N("QuantizeLinear", [p + "cat", s[4], z], [p + "q5"]),
            N("DequantizeLinear", [p + "q5", s[4], z], [p + "d5"]),
            N("Add", [p + "d5", p + "a"], [p + "y"]),
        ]
        x = p + "y"
    nodes.append(N("Identity", [x], ["y"]))
    shape = [1, C, 4, 4]
    g = helper.make_graph(nodes, "qdq_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="gen_qdq_chain")
    m.ir_version = 7
    onnx.save(m, out)
    print(f"{out}: {len(nodes)} nodes, {len(inits)} initializers")


if __name__ == "__main__":
    main()
