"""Writes FP8 Q/DQ whose zero point is not +0 (code 0x38, 1.0): legal ONNX
(opset 19) that no quantized type of qopt's holds. Usage: OUT.onnx."""
import sys

import onnx
from onnx import helper, TensorProto

FLOAT8E4M3FN = 17  # onnx 1.12 has no name for it


def raw(name, data_type, dims, data):
    t = TensorProto()
    t.name, t.data_type = name, data_type
    t.dims.extend(dims)
    t.raw_data = data
    return t


def main():
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q_node"),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dq_node"),
    ]
    inits = [
        helper.make_tensor("s", TensorProto.FLOAT, [], [0.5]),
        raw("z", FLOAT8E4M3FN, [], bytes([0x38])),
    ]
    graph = helper.make_graph(
        nodes, "fp8_zero_point",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    onnx.save(model, sys.argv[1])


if __name__ == "__main__":
    main()
