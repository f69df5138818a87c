"""Writes two FP4 weights whose DequantizeLinear nodes read one block-scale
tensor, the DequantizeLinear of FP8 codes (legal ONNX; the two-level type
holds a scale tensor read by one DQ only). Usage: OUT.onnx."""
import os
import sys

import onnx
from onnx import helper, TensorProto

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_fp8_zero_point import FLOAT8E4M3FN, raw  # noqa: E402

FLOAT4E2M1 = 23  # onnx 1.12 has no name for it


# [32, 2] FP4 codes (packed two a byte), blocks of 16 along axis 0: [2, 2]
# scales, FP8 codes 2.0 (0x40) and 3.0 (0x44).
codes = bytes((i * 7 + 3) % 256 for i in range(32))
nodes = [
    helper.make_node("DequantizeLinear", ["s8", "g"], ["s"], name="scale_dq"),
    helper.make_node("DequantizeLinear", ["w1_fp4", "s"], ["w1"], name="w1_dq",
                     axis=0, block_size=16),
    helper.make_node("DequantizeLinear", ["w2_fp4", "s"], ["w2"], name="w2_dq",
                     axis=0, block_size=16),
    helper.make_node("MatMul", ["x", "w1"], ["y1"], name="mm1"),
    helper.make_node("MatMul", ["x", "w2"], ["y2"], name="mm2"),
]
inits = [
    raw("s8", FLOAT8E4M3FN, [2, 2], bytes([0x40, 0x44, 0x44, 0x40])),
    helper.make_tensor("g", TensorProto.FLOAT, [], [0.125]),
    raw("w1_fp4", FLOAT4E2M1, [32, 2], codes),
    raw("w2_fp4", FLOAT4E2M1, [32, 2], codes[::-1]),
]
graph = helper.make_graph(
    nodes, "shared_two_level",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])],
    [helper.make_tensor_value_info("y1", TensorProto.FLOAT, [1, 2]),
     helper.make_tensor_value_info("y2", TensorProto.FLOAT, [1, 2])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
model.ir_version = 11
onnx.save(model, sys.argv[1])

# With a second path: one FP4 weight whose block scales' DequantizeLinear
# has a scalar +0 zero point and a [1]-shaped scale, read by that weight
# alone: the two-level type takes it, and export writes both back.
if len(sys.argv) > 2:
    nodes = [
        helper.make_node("DequantizeLinear", ["s8", "g1", "z8"], ["s"],
                         name="scale_dq"),
        helper.make_node("DequantizeLinear", ["w1_fp4", "s"], ["w1"],
                         name="w1_dq", axis=0, block_size=16),
        helper.make_node("MatMul", ["x", "w1"], ["y1"], name="mm1"),
    ]
    inits = [
        raw("s8", FLOAT8E4M3FN, [2, 2], bytes([0x40, 0x44, 0x44, 0x40])),
        helper.make_tensor("g1", TensorProto.FLOAT, [1], [0.125]),
        raw("z8", FLOAT8E4M3FN, [], bytes([0])),
        raw("w1_fp4", FLOAT4E2M1, [32, 2], codes),
    ]
    graph = helper.make_graph(
        nodes, "two_level_zero_point",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])],
        [helper.make_tensor_value_info("y1", TensorProto.FLOAT, [1, 2])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 11
    onnx.save(model, sys.argv[2])
