"""Models ONNX's checker refuses that qopt took (checker-refusals.test):

usage: make_checker_refusals.py OUTDIR
  autopad.onnx     Conv with auto_pad SAME_UPPER and pads
  resize.onnx      Resize with sizes [1, 3, -4, 8]
  rawfloat.onnx    an initializer with raw_data and float_data
  upsample.onnx    opset-7 Upsample with scales [1, 1, 0.5, 0.5]
  upsample9.onnx   opset-9 Upsample with a constant scales input below 1
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

out = sys.argv[1]
x = h.make_tensor_value_info("x", T.FLOAT, [1, 3, 8, 8])


def save(name, nodes, outputs, inits=(), opset=13):
    g = h.make_graph(nodes, name, [x], outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 7
    onnx.save(m, os.path.join(out, name + ".onnx"))


w = nh.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
save("autopad", [h.make_node("Conv", ["x", "w"], ["y"], name="conv", auto_pad="SAME_UPPER",
                             pads=[1, 1, 1, 1])],
     [h.make_tensor_value_info("y", T.FLOAT, None)], [w])
save("resize", [h.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="resize")],
     [h.make_tensor_value_info("y", T.FLOAT, None)],
     [nh.from_array(np.array([1, 3, -4, 8], np.int64), "sizes")])
b = nh.from_array(np.ones(4, np.float32), "b")
b.float_data.extend([1.0, 2.0, 3.0, 4.0])
save("rawfloat", [h.make_node("Conv", ["x", "w", "b"], ["y"], name="conv")],
     [h.make_tensor_value_info("y", T.FLOAT, None)], [w, b])
save("upsample", [h.make_node("Upsample", ["x"], ["y"], name="up", scales=[1.0, 1.0, 0.5, 0.5])],
     [h.make_tensor_value_info("y", T.FLOAT, None)], opset=7)
save("upsample9", [h.make_node("Upsample", ["x", "scales"], ["y"], name="up9")],
     [h.make_tensor_value_info("y", T.FLOAT, None)],
     [nh.from_array(np.array([1, 1, 0.5, 2], np.float32), "scales")], opset=9)
