"""Prints how many nodes of q.quantize, q.dequantize, onnx.Unsqueeze and
onnx.Transpose a .qir file has, on one line: "q.quantize=N ..."."""
import re
import sys

OPS = ["q.quantize", "q.dequantize", "onnx.Unsqueeze", "onnx.Transpose"]
text = open(sys.argv[1]).read()
counts = {op: len(re.findall(r"= " + re.escape(op) + r"\(", text)) for op in OPS}
print(" ".join(f"{op}={n}" for op, n in counts.items()))
