"""A model whose If node's then-branch has an initializer with external data
(subgraph-external-data.test).

usage: make_subgraph_external.py OUT.onnx LOCATION [--data FILE]

y = If(c) then (x + w) else (x - w2), w a [4] float initializer of the
then-branch stored externally at LOCATION (relative to the model or not, as
given), w2 inline. With --data, the four floats 1.5, -2, 0.25, 8 are written
to FILE.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

out, location = sys.argv[1], sys.argv[2]
values = np.array([1.5, -2.0, 0.25, 8.0], np.float32)
if "--data" in sys.argv:
    with open(sys.argv[sys.argv.index("--data") + 1], "wb") as f:
        f.write(values.tobytes())

w = onnx.TensorProto()
w.name = "w"
w.data_type = T.FLOAT
w.dims.extend([4])
w.data_location = T.EXTERNAL
for k, v in (("location", location), ("offset", "0"), ("length", "16")):
    e = w.external_data.add()
    e.key, e.value = k, v
then_graph = h.make_graph([h.make_node("Add", ["x", "w"], ["t"], name="then_add")], "then_branch",
                          [], [h.make_tensor_value_info("t", T.FLOAT, [4])], [w])
else_graph = h.make_graph([h.make_node("Sub", ["x", "w2"], ["e"], name="else_sub")], "else_branch",
                          [], [h.make_tensor_value_info("e", T.FLOAT, [4])],
                          [nh.from_array(values, "w2")])
graph = h.make_graph([h.make_node("If", ["c"], ["y"], name="branch", then_branch=then_graph,
                                  else_branch=else_graph)],
                     "subgraph_external",
                     [h.make_tensor_value_info("c", T.BOOL, []),
                      h.make_tensor_value_info("x", T.FLOAT, [4])],
                     [h.make_tensor_value_info("y", T.FLOAT, [4])])
model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
model.ir_version = 7
onnx.save(model, out)
