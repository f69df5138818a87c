"""Float Gemms by constant weights, for the plan's Gemm loop (gemm-float.test).

usage: make_float_gemm.py OUT.onnx

  g1  Relu(x) [3, 300] x B [300, 260] (transB 0), C [260], alpha 0.5,
      beta 2: three tiles of columns, a block boundary at 256, zeros in A
      (Relu) against a B holding inf and -inf (0 * inf is not taken)
  g2  x2 [1, 64] x B^T ([50, 64], transB 1), C one value
  g3  x2 [1, 64] x B [64, 7], no C
  g4  x [3, 300] x B [300, 5], C [1, 5]
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

rng = np.random.default_rng(7)
b1 = rng.standard_normal((300, 260)).astype(np.float32)
b1[17, 3] = np.inf
b1[42, 200] = -np.inf
inits = [
    nh.from_array(b1, "b1"),
    nh.from_array(rng.standard_normal(260).astype(np.float32), "c1"),
    nh.from_array(rng.standard_normal((50, 64)).astype(np.float32), "b2"),
    nh.from_array(np.array([0.25], np.float32), "c2"),
    nh.from_array(rng.standard_normal((64, 7)).astype(np.float32), "b3"),
    nh.from_array(rng.standard_normal((300, 5)).astype(np.float32), "b4"),
    nh.from_array(rng.standard_normal((1, 5)).astype(np.float32), "c4"),
]
nodes = [
    h.make_node("Relu", ["x"], ["r"]),
    h.make_node("Gemm", ["r", "b1", "c1"], ["g1"], alpha=0.5, beta=2.0),
    h.make_node("Gemm", ["x2", "b2", "c2"], ["g2"], transB=1),
    h.make_node("Gemm", ["x2", "b3"], ["g3"]),
    h.make_node("Gemm", ["x", "b4", "c4"], ["g4"], name="g4"),
]
graph = h.make_graph(
    nodes, "g",
    [h.make_tensor_value_info("x", T.FLOAT, [3, 300]),
     h.make_tensor_value_info("x2", T.FLOAT, [1, 64])],
    [h.make_tensor_value_info(n, T.FLOAT, None) for n in ["g1", "g2", "g3", "g4"]],
    inits)
onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]),
          sys.argv[1])
