"""Writes OUT.onnx: x [1, N, 2, 2] split into N one-channel leaves, a Relu
on each, then Concats joining pairs level by level back to N channels: N
tensors alive at once for the arena placement.
usage: make_concat_tree.py OUT.onnx N (N a power of two)"""
import sys

import onnx
from onnx import TensorProto, helper

out, n = sys.argv[1], int(sys.argv[2])
nodes = [helper.make_node("Split", ["x"], ["l%d" % i for i in range(n)], axis=1, name="split")]
level = []
for i in range(n):
    nodes.append(helper.make_node("Relu", ["l%d" % i], ["r%d" % i], name="relu%d" % i))
    level.append("r%d" % i)
k = 0
while len(level) > 1:
    joined = []
    for i in range(0, len(level), 2):
        name = "c%d" % k
        k += 1
        nodes.append(helper.make_node("Concat", level[i:i + 2], [name], axis=1, name=name))
        joined.append(name)
    level = joined
graph = helper.make_graph(nodes, "tree",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n, 2, 2])],
                          [helper.make_tensor_value_info(level[0], TensorProto.FLOAT, [1, n, 2, 2])])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), out)
