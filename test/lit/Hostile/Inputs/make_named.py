"""Writes a small Q/DQ conv model whose node and tensor names are hostile:
usage: make_named.py OUT.onnx KIND, KIND one of newline (a name holding a
line break and a forged "qopt: error:" line), huge (a 1 MB name), nul (a
NUL byte), utf8 (invalid UTF-8 bytes), escape (a terminal escape sequence).
The conv's weight has no Q/DQ, so explain has leftovers to name."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out, kind = sys.argv[1], sys.argv[2]
bad = {
    "newline": "conv\nqopt: error: forged line",
    "huge": "c" * (1 << 20),
    "nul": "conv\x00tail",
    "utf8": "convQZ",  # patched to conv\xff\xfe below
    "escape": "conv\x1b[2J\x1b[31mred",
}[kind]
s = numpy_helper.from_array(np.array(0.05, np.float32), "s")
z = numpy_helper.from_array(np.array(0, np.int8), "z")
w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
nodes = [
    # The Q node too for newline: an error about it quotes the name.
    helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"],
                     name="q" + bad if kind == "newline" else "q"),
    helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq"),
    helper.make_node("Conv", ["xd", "w"], ["y"], name=bad, pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["y"], ["r"], name="relu"),
]
graph = helper.make_graph(nodes, "named",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [s, z, w])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
data = model.SerializeToString()
if kind == "utf8":  # protobuf strings must be UTF-8: patch the bytes after
    data = data.replace(b"convQZ", b"conv\xff\xfe")
with open(out, "wb") as f:
    f.write(data)
