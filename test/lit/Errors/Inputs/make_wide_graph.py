"""Writes a model whose graph (2,000 Relu nodes with long names, about 400 KB)
is much larger than its one 9 KiB weight: with -external-data, its data file
is small and the model file large. argv: output path, weight seed."""
import sys

import numpy as np
from onnx import TensorProto as T, helper as h, numpy_helper as nh

r = np.random.RandomState(int(sys.argv[2]))
nodes = [h.make_node("Conv", ["x", "w"], ["c0"], name="conv", pads=[1, 1, 1, 1])]
prev = "c0"
for i in range(2000):
    out = "relu_with_a_rather_long_name_to_make_the_graph_large_%05d" % i
    nodes.append(h.make_node("Relu", [prev], [out], name="node_" + out))
    prev = out
g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [1, 16, 5, 5])],
                 [h.make_tensor_value_info(prev, T.FLOAT, None)],
                 [nh.from_array(r.randn(16, 16, 3, 3).astype(np.float32), "w")])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
m.ir_version = 7
open(sys.argv[1], "wb").write(m.SerializeToString())
