#!/usr/bin/python3
"""Generate the small ONNX test models used by qopt's importer tests.

Usage:
    /usr/bin/python3 test/inputs/gen_models.py           # (re)write test/inputs/onnx/**
    /usr/bin/python3 test/inputs/gen_models.py --check   # also run onnx.checker on the good models

Requires the `onnx` (tested with 1.12) and `numpy` Python packages.  Output is
fully deterministic: no randomness is used and running the script twice gives
byte-identical files.

Layout written:
    onnx/good/<name>.onnx          valid models, one importer feature each
    onnx/good/external_data.bin    external weights of good/external_data.onnx
    onnx/bad/<name>.onnx           malformed models, exactly one defect each
    onnx/bad/defects.json          machine-readable description of each defect

Notes on onnx 1.12: it only knows ONNX opsets up to 17 and data types up to
BFLOAT16 (16).  Newer things (opset 19/21 attributes, INT4 = 22) are written
with raw protobuf fields / numeric enum values, which onnx 1.12 serializes
fine.  onnx.helper.make_tensor refuses unknown data types, so such tensors are
built by filling TensorProto fields directly.
"""

import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "onnx")
GOOD = os.path.join(OUT, "good")
BAD = os.path.join(OUT, "bad")

# Data type numbers not known to onnx 1.12's TensorProto enum.
TP_UINT4 = 21
TP_INT4 = 22

IR_FOR_OPSET = {10: 5, 13: 7, 15: 8, 17: 8, 19: 9, 20: 9, 21: 10}


def ir_for(opset):
    if opset in IR_FOR_OPSET:
        return IR_FOR_OPSET[opset]
    if opset >= 21:
        return 10
    if opset >= 19:
        return 9
    if opset >= 15:
        return 8
    return 7


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def vi(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


def arr(name, a):
    """Initializer from a numpy array (stored in raw_data)."""
    return numpy_helper.from_array(np.asarray(a), name)


def f32_scalar(name, v):
    """float32 scalar stored in the typed float_data field (not raw_data)."""
    return helper.make_tensor(name, TensorProto.FLOAT, [], [float(v)])


def make_model(graph, opset=13, ir=None, extra_opsets=(), **kw):
    opsets = [helper.make_opsetid("", opset)] + [
        helper.make_opsetid(d, v) for d, v in extra_opsets
    ]
    m = helper.make_model(graph, opset_imports=opsets, producer_name="gen_models",
                          producer_version="1", **kw)
    m.ir_version = ir if ir is not None else ir_for(opset)
    return m


def w_int8(shape, mod=17, offset=8):
    """Deterministic int8 weights: a ramp wrapped into [-offset, mod-offset)."""
    n = int(np.prod(shape))
    return ((np.arange(n) * 7) % mod - offset).astype(np.int8).reshape(shape)


def qdq_u8_graph(name, scale=0.05, zp=128, scale_tensor=None, zp_tensor=None,
                 shape=(1, 3, 4, 4)):
    """x f32 -> QuantizeLinear -> DequantizeLinear -> y (shared scale/zp)."""
    shape = list(shape)
    inits = [scale_tensor if scale_tensor is not None else f32_scalar("x_scale", scale)]
    if zp_tensor is not None:
        inits.append(zp_tensor)
    elif zp is not None:
        inits.append(helper.make_tensor("x_zero_point", TensorProto.UINT8, [], [zp]))
    qin = ["x", "x_scale"] + (["x_zero_point"] if len(inits) > 1 else [])
    din = ["x_quantized", "x_scale"] + (["x_zero_point"] if len(inits) > 1 else [])
    nodes = [
        helper.make_node("QuantizeLinear", qin, ["x_quantized"], name="x_QuantizeLinear"),
        helper.make_node("DequantizeLinear", din, ["y"], name="x_DequantizeLinear"),
    ]
    return helper.make_graph(nodes, name, [vi("x", TensorProto.FLOAT, shape)],
                             [vi("y", TensorProto.FLOAT, shape)], inits)


# --------------------------------------------------------------------------
# A. good models
# --------------------------------------------------------------------------

GOOD_MODELS = {}   # name -> (builder, description)


def good(desc):
    def deco(fn):
        GOOD_MODELS[fn.__name__] = (fn, desc)
        return fn
    return deco


@good("per-tensor uint8 Q->DQ; scalar scale 0.05 and uint8 zp 128 in typed fields "
      "(float_data/int32_data), shared by Q and DQ")
def q_dq_u8_per_tensor():
    return make_model(qdq_u8_graph("q_dq_u8_per_tensor"))


@good("int8 Q->DQ with scale and zero point of shape [1] (PyTorch-exporter style), "
      "must be treated as per-tensor; zp int8 0")
def q_dq_i8_per_tensor_shape1():
    g = qdq_u8_graph("q_dq_i8_per_tensor_shape1",
                     scale_tensor=arr("x_scale", np.array([0.05], np.float32)),
                     zp_tensor=arr("x_zero_point", np.array([0], np.int8)))
    return make_model(g)


@good("Q->DQ without zero-point input (quantized type defaults to uint8, zp 0)")
def q_dq_no_zp():
    return make_model(qdq_u8_graph("q_dq_no_zp", zp=None))


def _conv_per_axis_graph(name, w_name="w", x_shape=(1, 3, 8, 8)):
    w = w_int8([4, 3, 3, 3])
    inits = [
        f32_scalar("x_scale", 0.02),
        helper.make_tensor("x_zero_point", TensorProto.UINT8, [], [128]),
        arr(w_name, w),
        arr("w_scale", np.array([0.01, 0.02, 0.03, 0.04], np.float32)),
        arr("w_zero_point", np.zeros([4], np.int8)),
        arr("bias", np.array([0.1, -0.2, 0.3, -0.4], np.float32)),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero_point"],
                         ["x_quantized"], name="x_QuantizeLinear"),
        helper.make_node("DequantizeLinear", ["x_quantized", "x_scale", "x_zero_point"],
                         ["x_dequantized"], name="x_DequantizeLinear"),
        helper.make_node("DequantizeLinear", [w_name, "w_scale", "w_zero_point"],
                         ["w_dequantized"], name="w_DequantizeLinear", axis=0),
        helper.make_node("Conv", ["x_dequantized", "w_dequantized", "bias"], ["y"],
                         name="conv", kernel_shape=[3, 3], pads=[0, 0, 0, 0],
                         strides=[1, 1]),
    ]
    out = [1, 4, x_shape[2] - 2, x_shape[3] - 2]
    return helper.make_graph(nodes, name, [vi("x", TensorProto.FLOAT, list(x_shape))],
                             [vi("y", TensorProto.FLOAT, out)], inits)


@good("int8 weight [4,3,3,3] -> per-axis DQ (axis=0, scales [4], int8 zp zeros [4]) "
      "-> Conv; activation through u8 Q/DQ; float bias")
def dq_weight_per_axis():
    return make_model(_conv_per_axis_graph("dq_weight_per_axis"))


@good("per-axis DQ with negative axis=-1 on an int8 [2,3] initializer (scale [3], zp [3])")
def dq_per_axis_negative_axis():
    inits = [
        arr("w", np.array([[-3, 0, 5], [7, -128, 127]], np.int8)),
        arr("w_scale", np.array([0.5, 0.25, 0.125], np.float32)),
        arr("w_zero_point", np.array([0, 1, -1], np.int8)),
    ]
    nodes = [
        helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zero_point"],
                         ["w_dequantized"], name="w_DequantizeLinear", axis=-1),
        helper.make_node("Add", ["x", "w_dequantized"], ["y"], name="add"),
    ]
    g = helper.make_graph(nodes, "dq_per_axis_negative_axis",
                          [vi("x", TensorProto.FLOAT, [2, 3])],
                          [vi("y", TensorProto.FLOAT, [2, 3])], inits)
    return make_model(g)


@good("opset 19 Q with attribute saturate=1 (u8 Q/DQ)")
def q_dq_opset19_saturate():
    g = qdq_u8_graph("q_dq_opset19_saturate")
    helper_attr = helper.make_attribute("saturate", 1)
    g.node[0].attribute.append(helper_attr)
    return make_model(g, opset=19)


@good("opset 21 Q/DQ with int16 zero point (scale 0.001, zp -5)")
def q_dq_int16():
    g = qdq_u8_graph("q_dq_int16", scale=0.001,
                     zp_tensor=arr("x_zero_point", np.array(-5, np.int16)))
    return make_model(g, opset=21)


@good("opset 21 Q/DQ with uint16 zero point 32767 (scale 0.001)")
def q_dq_uint16():
    g = qdq_u8_graph("q_dq_uint16", scale=0.001,
                     zp_tensor=arr("x_zero_point", np.array(32767, np.uint16)))
    return make_model(g, opset=21)


@good("opset 19 Q/DQ on float16 input/output with a float16 scale (u8 zp)")
def q_dq_f16_scale():
    g = qdq_u8_graph("q_dq_f16_scale",
                     scale_tensor=arr("x_scale", np.array(0.05, np.float16)),
                     zp_tensor=arr("x_zero_point", np.array(128, np.uint8)))
    g.input[0].type.tensor_type.elem_type = TensorProto.FLOAT16
    g.output[0].type.tensor_type.elem_type = TensorProto.FLOAT16
    return make_model(g, opset=19)


@good("opset 21 Q without zero point but output_dtype=INT8 attribute; DQ without zp")
def q_dq_output_dtype():
    g = qdq_u8_graph("q_dq_output_dtype", zp=None)
    g.node[0].attribute.append(helper.make_attribute("output_dtype", TensorProto.INT8))
    return make_model(g, opset=21)


@good("Constant node (value tensor) feeding Add, and a Constant node giving Reshape's shape")
def constant_node():
    nodes = [
        helper.make_node("Constant", [], ["add_constant"], name="add_constant_node",
                         value=arr("add_constant_value",
                                   np.array([[1.0, 2.0, 3.0]], np.float32))),
        helper.make_node("Add", ["x", "add_constant"], ["x_plus_c"], name="add"),
        helper.make_node("Constant", [], ["reshape_shape"], name="reshape_shape_node",
                         value=arr("reshape_shape_value", np.array([3, 2], np.int64))),
        helper.make_node("Reshape", ["x_plus_c", "reshape_shape"], ["y"], name="reshape"),
    ]
    g = helper.make_graph(nodes, "constant_node", [vi("x", TensorProto.FLOAT, [2, 3])],
                          [vi("y", TensorProto.FLOAT, [3, 2])])
    return make_model(g)


@good("3-node chain Q -> DQ -> Relu listed in reverse order in graph.node "
      "(importer must topologically sort; onnx.checker rejects unsorted graphs)")
def unsorted_nodes():
    g = qdq_u8_graph("unsorted_nodes")
    g.node[1].output[0] = "x_dequantized"
    g.node.append(helper.make_node("Relu", ["x_dequantized"], ["y"], name="relu"))
    nodes = list(g.node)[::-1]
    del g.node[:]
    g.node.extend(nodes)
    return make_model(g)


@good("custom op MyOp (domain com.example, opset import com.example:1) between Q and DQ "
      "(x -> Q -> MyOp -> DQ), with int/float/string/ints/floats/strings/tensor attributes")
def custom_domain_op():
    g = qdq_u8_graph("custom_domain_op")
    g.node[0].output[0] = "x_quantized"
    g.node[1].input[0] = "my_op_out"
    myop = helper.make_node(
        "MyOp", ["x_quantized"], ["my_op_out"], name="my_op", domain="com.example",
        int_attr=42,
        float_attr=0.5,
        string_attr="hello",
        ints_attr=[1, 2, 3],
        floats_attr=[0.25, -1.5],
        strings_attr=["a", "bc"],
        tensor_attr=arr("my_op_tensor", np.array([1, 2, 3, 4], np.int32)),
    )
    g.node.insert(1, myop)
    return make_model(g, extra_opsets=[("com.example", 1)])


@good("all initializers stored as external data in external_data.bin (next to the model); "
      "the int8 weight feeds a per-axis DQ -> Conv")
def external_data():
    return make_model(_conv_per_axis_graph("external_data"))


@good("metadata_props {author, license}, doc_string, producer_name gen_models, "
      "value_info for the intermediate x_quantized, symbolic batch dim N on input/value_info/output")
def value_info_and_metadata():
    shape = ["N", 3, 4, 4]
    g = qdq_u8_graph("value_info_and_metadata", shape=shape)
    g.value_info.append(vi("x_quantized", TensorProto.UINT8, shape))
    g.doc_string = "Q/DQ graph with a symbolic batch dimension"
    m = make_model(g, doc_string="Test model carrying metadata and value_info")
    helper.set_model_props(m, {"author": "qopt-test", "license": "MIT"})
    return m


@good("Conv with int32 bias initializer -> DQ (scale = s_x*s_w in float32, no zp), "
      "int8 per-tensor weights, u8 activation")
def bias_int32_dq():
    s_x = np.float32(0.02)
    s_w = np.float32(0.005)
    s_b = np.float32(s_x * s_w)
    inits = [
        f32_scalar("x_scale", s_x),
        helper.make_tensor("x_zero_point", TensorProto.UINT8, [], [128]),
        arr("w", w_int8([4, 3, 3, 3])),
        arr("w_scale", np.array(s_w, np.float32)),
        arr("w_zero_point", np.array(0, np.int8)),
        arr("bias_quantized", np.array([1000, -2000, 3000, -4000], np.int32)),
        arr("bias_scale", np.array(s_b, np.float32)),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero_point"],
                         ["x_quantized"], name="x_QuantizeLinear"),
        helper.make_node("DequantizeLinear", ["x_quantized", "x_scale", "x_zero_point"],
                         ["x_dequantized"], name="x_DequantizeLinear"),
        helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zero_point"],
                         ["w_dequantized"], name="w_DequantizeLinear"),
        helper.make_node("DequantizeLinear", ["bias_quantized", "bias_scale"],
                         ["bias_dequantized"], name="bias_DequantizeLinear"),
        helper.make_node("Conv", ["x_dequantized", "w_dequantized", "bias_dequantized"],
                         ["y"], name="conv", kernel_shape=[3, 3]),
    ]
    g = helper.make_graph(nodes, "bias_int32_dq", [vi("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [vi("y", TensorProto.FLOAT, [1, 4, 6, 6])], inits)
    return make_model(g)


@good("one uint8 initializer (shared_weight) feeding two DQ nodes with different scales")
def shared_initializer():
    inits = [
        arr("shared_weight", np.array([[0, 64, 128], [192, 255, 1]], np.uint8)),
        f32_scalar("scale_a", 0.1),
        f32_scalar("scale_b", 0.2),
    ]
    nodes = [
        helper.make_node("DequantizeLinear", ["shared_weight", "scale_a"], ["weight_a"],
                         name="shared_weight_DequantizeLinear_a"),
        helper.make_node("DequantizeLinear", ["shared_weight", "scale_b"], ["weight_b"],
                         name="shared_weight_DequantizeLinear_b"),
        helper.make_node("Add", ["x", "weight_a"], ["x_plus_a"], name="add"),
        helper.make_node("Mul", ["x_plus_a", "weight_b"], ["y"], name="mul"),
    ]
    g = helper.make_graph(nodes, "shared_initializer", [vi("x", TensorProto.FLOAT, [2, 3])],
                          [vi("y", TensorProto.FLOAT, [2, 3])], inits)
    return make_model(g)


@good("Resize (opset 13) with inputs (X, \"\", scales): empty-string optional input in the middle")
def optional_input_missing():
    inits = [arr("resize_scales", np.array([1.0, 1.0, 2.0, 2.0], np.float32))]
    nodes = [helper.make_node("Resize", ["x", "", "resize_scales"], ["y"], name="resize",
                              mode="nearest")]
    g = helper.make_graph(nodes, "optional_input_missing",
                          [vi("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                          [vi("y", TensorProto.FLOAT, [1, 3, 8, 8])], inits)
    return make_model(g)


@good("Q whose uint8 output is directly a graph output (no DQ)")
def q_graph_output():
    inits = [f32_scalar("x_scale", 0.05),
             helper.make_tensor("x_zero_point", TensorProto.UINT8, [], [128])]
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero_point"],
                              ["y_quantized"], name="x_QuantizeLinear")]
    g = helper.make_graph(nodes, "q_graph_output", [vi("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                          [vi("y_quantized", TensorProto.UINT8, [1, 3, 4, 4])], inits)
    return make_model(g)


@good("uint8 graph input -> DQ -> Relu -> Q -> uint8 graph output")
def dq_graph_input_u8():
    inits = [f32_scalar("x_scale", 0.05),
             helper.make_tensor("x_zero_point", TensorProto.UINT8, [], [128]),
             f32_scalar("y_scale", 0.025),
             helper.make_tensor("y_zero_point", TensorProto.UINT8, [], [0])]
    nodes = [
        helper.make_node("DequantizeLinear", ["x_quantized", "x_scale", "x_zero_point"],
                         ["x_dequantized"], name="x_DequantizeLinear"),
        helper.make_node("Relu", ["x_dequantized"], ["relu_out"], name="relu"),
        helper.make_node("QuantizeLinear", ["relu_out", "y_scale", "y_zero_point"],
                         ["y_quantized"], name="y_QuantizeLinear"),
    ]
    g = helper.make_graph(nodes, "dq_graph_input_u8",
                          [vi("x_quantized", TensorProto.UINT8, [1, 3, 4, 4])],
                          [vi("y_quantized", TensorProto.UINT8, [1, 3, 4, 4])], inits)
    return make_model(g)


@good("tensor and node names containing '/', ':' and '.' (e.g. model/conv1:0, conv.1/weight)")
def names_with_specials():
    x, xs, xz = "model/input:0", "model/input/scale:0", "model/input/zero_point:0"
    w, ws = "model/conv1/weight:0", "model/conv1/weight/scale:0"
    inits = [
        f32_scalar(xs, 0.02),
        helper.make_tensor(xz, TensorProto.UINT8, [], [128]),
        arr(w, w_int8([2, 3, 1, 1])),
        arr(ws, np.array(0.01, np.float32)),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", [x, xs, xz], ["model/input/quantized:0"],
                         name="model/input/QuantizeLinear.0"),
        helper.make_node("DequantizeLinear", ["model/input/quantized:0", xs, xz],
                         ["model/input/dequantized:0"], name="model/input/DequantizeLinear.0"),
        helper.make_node("DequantizeLinear", [w, ws], ["model/conv1/weight/dequantized:0"],
                         name="conv.1/weight"),
        helper.make_node("Conv", ["model/input/dequantized:0",
                                  "model/conv1/weight/dequantized:0"],
                         ["model/conv1:0"], name="model/conv.1", kernel_shape=[1, 1]),
    ]
    g = helper.make_graph(nodes, "names_with_specials",
                          [vi(x, TensorProto.FLOAT, [1, 3, 4, 4])],
                          [vi("model/conv1:0", TensorProto.FLOAT, [1, 2, 4, 4])], inits)
    return make_model(g)


@good("If whose branches read outer values by name (then: r = Relu(x), else: x); "
      "no producer_name (IR 8, opset 13)")
def if_subgraph_capture():
    then_g = helper.make_graph([helper.make_node("Identity", ["r"], ["t_out"])], "then", [],
                               [vi("t_out", TensorProto.FLOAT, [1])])
    else_g = helper.make_graph([helper.make_node("Identity", ["x"], ["e_out"])], "else", [],
                               [vi("e_out", TensorProto.FLOAT, [1])])
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g),
    ]
    g = helper.make_graph(nodes, "g", [vi("cond", TensorProto.BOOL, []),
                                       vi("x", TensorProto.FLOAT, [1])],
                          [vi("y", TensorProto.FLOAT, [1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


# Opset-dependent spellings: older opsets write some operands as attributes.
# The importer turns them into constant operands, the exporter back into
# attributes for the model's opset.

@good("opset 10 Pad with pads and value as attributes (mode constant, value 1.5): "
      "x [1,2,2,2] -> y [1,2,4,4]")
def pad_opset10_value():
    nodes = [helper.make_node("Pad", ["x"], ["y"], name="pad", mode="constant",
                              pads=[0, 0, 1, 1, 0, 0, 1, 1], value=1.5)]
    g = helper.make_graph(nodes, "pad_opset10_value",
                          [vi("x", TensorProto.FLOAT, [1, 2, 2, 2])],
                          [vi("y", TensorProto.FLOAT, [1, 2, 4, 4])])
    return make_model(g, opset=10)


@good("opset 12 Squeeze with axes as an attribute (axes [0, 2]): x [1,3,1,2] -> y [3,2]")
def squeeze_opset12_axes():
    nodes = [helper.make_node("Squeeze", ["x"], ["y"], name="squeeze", axes=[0, 2])]
    g = helper.make_graph(nodes, "squeeze_opset12_axes",
                          [vi("x", TensorProto.FLOAT, [1, 3, 1, 2])],
                          [vi("y", TensorProto.FLOAT, [3, 2])])
    return make_model(g, opset=12)


# --------------------------------------------------------------------------
# B. bad models: exactly one defect each
# --------------------------------------------------------------------------

BAD_MODELS = {}   # name -> (builder, description, node, tensor)


def bad(desc, node=None, tensor=None):
    def deco(fn):
        BAD_MODELS[fn.__name__] = (fn, desc, node, tensor)
        return fn
    return deco


# Coarse class of each defect, recorded in defects.json as "category":
#   parse        file is not a parseable ModelProto
#   model        model-level fields (ir_version / opset_import) wrong
#   graph        graph structure (dangling/duplicate names, cycles, empty)
#   tensor       an initializer's encoding is invalid
#   qdq          Q/DQ semantic error (scale, zero point, axis, types)
#   arity        wrong number of node inputs
#   unsupported  valid ONNX (ONNX Runtime runs it) that qopt does not support
#   shape        operand shapes that do not fit the op (found by shape inference)
BAD_CATEGORY = {
    "truncated": "parse", "not_onnx": "parse",
    "empty_file": "model", "opset_too_new": "model",
    "cycle": "graph", "missing_initializer": "graph", "duplicate_value_name": "graph",
    "output_not_produced": "graph", "empty_graph": "graph",
    "unknown_tensor_type": "tensor", "raw_data_size_mismatch": "tensor",
    "dq_too_many_inputs": "arity", "q_too_few_inputs": "arity",
    "conv_weight_rank": "shape", "concat_shape_mismatch": "shape",
    "matmul_inner_dim_mismatch": "shape", "reshape_element_count": "shape",
}


def _base_bytes():
    return q_dq_u8_per_tensor().SerializeToString()


@bad("file is the first half of a valid model's bytes (q_dq_u8_per_tensor); protobuf parse fails")
def truncated():
    b = _base_bytes()
    return b[: len(b) // 2]


@bad("file is plain text, not a protobuf")
def not_onnx():
    return b"This is not an ONNX model.\nJust some plain text, 12345 !@#$%\n"


@bad("zero-byte file (parses as an empty ModelProto: no ir_version, no opset, no graph)")
def empty_file():
    return b""


def _qdq_with_scale(name, value):
    return make_model(qdq_u8_graph(name, scale=value))


@bad("Q/DQ scale is 0.0", node="x_QuantizeLinear", tensor="x_scale")
def scale_zero():
    return _qdq_with_scale("scale_zero", 0.0)


@bad("Q/DQ scale is negative (-0.05)", node="x_QuantizeLinear", tensor="x_scale")
def scale_negative():
    return _qdq_with_scale("scale_negative", -0.05)


@bad("Q/DQ scale is NaN", node="x_QuantizeLinear", tensor="x_scale")
def scale_nan():
    return _qdq_with_scale("scale_nan", float("nan"))


@bad("Q/DQ scale is +Inf", node="x_QuantizeLinear", tensor="x_scale")
def scale_inf():
    return _qdq_with_scale("scale_inf", float("inf"))


@bad("zero point is float32 instead of an integer type", node="x_QuantizeLinear",
     tensor="x_zero_point")
def zp_wrong_type():
    g = qdq_u8_graph("zp_wrong_type",
                     zp_tensor=helper.make_tensor("x_zero_point", TensorProto.FLOAT, [], [128.0]))
    return make_model(g)


def _weight_dq_graph(name, w, scale, zp=None, attrs=None, x_shape=(2, 3)):
    """initializer w -> DequantizeLinear (w_DequantizeLinear) -> Add(x, .) -> y."""
    inits = [w, scale] + ([zp] if zp is not None else [])
    dq = helper.make_node("DequantizeLinear", [i.name for i in inits], ["w_dequantized"],
                          name="w_DequantizeLinear", **(attrs or {}))
    add = helper.make_node("Add", ["x", "w_dequantized"], ["y"], name="add")
    return helper.make_graph([dq, add], name, [vi("x", TensorProto.FLOAT, list(x_shape))],
                             [vi("y", TensorProto.FLOAT, list(x_shape))], inits)


@bad("DQ input x is int8 but its zero point is uint8", node="w_DequantizeLinear",
     tensor="w_zero_point")
def dq_x_zp_type_mismatch():
    g = _weight_dq_graph("dq_x_zp_type_mismatch",
                         arr("w", np.array([[1, -2, 3], [-4, 5, -6]], np.int8)),
                         f32_scalar("w_scale", 0.1),
                         arr("w_zero_point", np.array(0, np.uint8)))
    return make_model(g)


@bad("per-axis DQ with axis=1: x has 3 channels on that axis but scale has 4 elements",
     node="w_DequantizeLinear", tensor="w_scale")
def per_axis_size_mismatch():
    g = _weight_dq_graph("per_axis_size_mismatch",
                         arr("w", np.array([[1, -2, 3], [-4, 5, -6]], np.int8)),
                         arr("w_scale", np.array([0.1, 0.2, 0.3, 0.4], np.float32)),
                         attrs={"axis": 1})
    return make_model(g)


@bad("per-axis DQ with axis=5 on a rank-2 tensor", node="w_DequantizeLinear", tensor="w")
def axis_out_of_range():
    g = _weight_dq_graph("axis_out_of_range",
                         arr("w", np.array([[1, -2, 3], [-4, 5, -6]], np.int8)),
                         arr("w_scale", np.array([0.1, 0.2, 0.3], np.float32)),
                         attrs={"axis": 5})
    return make_model(g)


@bad("initializer with data_type 99 (not a TensorProto.DataType)", node="w_DequantizeLinear",
     tensor="w")
def unknown_tensor_type():
    w = TensorProto()
    w.name = "w"
    w.data_type = 99          # helper.make_tensor refuses this
    w.dims.extend([2, 3])
    w.raw_data = bytes(range(6))
    g = _weight_dq_graph("unknown_tensor_type", w, f32_scalar("w_scale", 0.1))
    return make_model(g)


@bad("DQ input 'w' is produced by no node and is neither a graph input nor an initializer",
     node="w_DequantizeLinear", tensor="w")
def missing_initializer():
    g = _weight_dq_graph("missing_initializer",
                         arr("w", np.zeros([2, 3], np.int8)), f32_scalar("w_scale", 0.1))
    del g.initializer[0]      # drop "w", keep the reference
    return make_model(g)


@bad("two nodes feed each other (cycle_add -> cycle_relu -> cycle_add)", node="cycle_add",
     tensor="y")
def cycle():
    nodes = [
        helper.make_node("Add", ["x", "y"], ["cycle_sum"], name="cycle_add"),
        helper.make_node("Relu", ["cycle_sum"], ["y"], name="cycle_relu"),
    ]
    g = helper.make_graph(nodes, "cycle", [vi("x", TensorProto.FLOAT, [2, 3])],
                          [vi("y", TensorProto.FLOAT, [2, 3])])
    return make_model(g)


@bad("default-domain opset import is 99 (newer than any ONNX release)")
def opset_too_new():
    return make_model(qdq_u8_graph("opset_too_new"), opset=99, ir=10)


@bad("two nodes (x_DequantizeLinear and relu) produce the same output name 'y'",
     node="relu", tensor="y")
def duplicate_value_name():
    g = qdq_u8_graph("duplicate_value_name")
    g.node.append(helper.make_node("Relu", ["x"], ["y"], name="relu"))
    return make_model(g)


@good("opset 21 INT4 (data_type 22) weight initializer [2, 3] -> DQ, packed two "
      "values a byte, low nibble first")
def int4_weight():
    w = TensorProto()
    w.name = "w"
    w.data_type = TP_INT4     # unknown to onnx 1.12
    w.dims.extend([2, 3])
    # 6 int4 values [1,-2,3,-4,5,-6], packed two per byte, low nibble first.
    vals = [1, -2, 3, -4, 5, -6]
    nib = [v & 0xF for v in vals]
    w.raw_data = bytes(nib[i] | (nib[i + 1] << 4) for i in range(0, 6, 2))
    g = _weight_dq_graph("int4_weight", w, f32_scalar("w_scale", 0.1))
    return make_model(g, opset=21)


@good("opset 21 blocked quantization: Q and DQ with block_size=2, axis=1 and a "
      "2-D scale [2,2] for x [2,4]")
def blocked_quant():
    inits = [arr("x_scale", np.array([[0.1, 0.2], [0.3, 0.4]], np.float32))]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale"], ["x_quantized"],
                         name="x_QuantizeLinear", axis=1, block_size=2),
        helper.make_node("DequantizeLinear", ["x_quantized", "x_scale"], ["y"],
                         name="x_DequantizeLinear", axis=1, block_size=2),
    ]
    g = helper.make_graph(nodes, "blocked_quant", [vi("x", TensorProto.FLOAT, [2, 4])],
                          [vi("y", TensorProto.FLOAT, [2, 4])], inits)
    return make_model(g, opset=21)


@bad("float initializer with dims [4] (16 bytes expected) but only 8 bytes of raw_data",
     node="add_bias", tensor="bias")
def raw_data_size_mismatch():
    g = qdq_u8_graph("raw_data_size_mismatch", shape=[4])
    g.node[1].output[0] = "x_dequantized"
    g.node.append(helper.make_node("Add", ["x_dequantized", "bias"], ["y"], name="add_bias"))
    b = TensorProto()
    b.name = "bias"
    b.data_type = TensorProto.FLOAT
    b.dims.extend([4])
    b.raw_data = np.array([1.0, 2.0], np.float32).tobytes()
    g.initializer.append(b)
    return make_model(g)


@bad("QuantizeLinear input x is int32 (must be float/float16)", node="x_QuantizeLinear",
     tensor="x")
def q_int32_input():
    g = qdq_u8_graph("q_int32_input")
    g.input[0].type.tensor_type.elem_type = TensorProto.INT32
    return make_model(g)


@bad("DequantizeLinear with 4 inputs (max is 3)", node="x_DequantizeLinear")
def dq_too_many_inputs():
    g = qdq_u8_graph("dq_too_many_inputs")
    g.initializer.append(f32_scalar("extra_input", 1.0))
    g.node[1].input.append("extra_input")
    return make_model(g)


@bad("QuantizeLinear with only the x input (scale missing)", node="x_QuantizeLinear")
def q_too_few_inputs():
    g = qdq_u8_graph("q_too_few_inputs", zp=None)
    del g.node[0].input[1:]
    return make_model(g)


@bad("graph output 'y_missing' is produced by no node (the other output y is fine)",
     tensor="y_missing")
def output_not_produced():
    g = qdq_u8_graph("output_not_produced")
    g.output.append(vi("y_missing", TensorProto.FLOAT, [1, 3, 4, 4]))
    return make_model(g)


@bad("graph has no nodes, no inputs and no outputs")
def empty_graph():
    g = helper.make_graph([], "empty_graph", [], [])
    return make_model(g)


@bad("Q/DQ scale is int32 instead of float", node="x_QuantizeLinear", tensor="x_scale")
def scale_not_float():
    g = qdq_u8_graph("scale_not_float",
                     scale_tensor=helper.make_tensor("x_scale", TensorProto.INT32, [], [1]))
    return make_model(g)


@bad("Q without zero point (so output is UINT8) whose graph output is declared INT8",
     node="x_QuantizeLinear", tensor="y_quantized")
def q_output_type_mismatch():
    inits = [f32_scalar("x_scale", 0.05)]
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_scale"], ["y_quantized"],
                              name="x_QuantizeLinear")]
    g = helper.make_graph(nodes, "q_output_type_mismatch",
                          [vi("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                          [vi("y_quantized", TensorProto.INT8, [1, 3, 4, 4])], inits)
    return make_model(g)


# Shape mismatches: each model has exactly one node whose operand shapes do
# not fit (graph outputs carry no shape, so only the node is wrong).

@bad("Conv of a 4-D input [1,3,8,8] with a rank-3 weight [4,3,3]", node="conv", tensor="w")
def conv_weight_rank():
    inits = [arr("w", np.ones([4, 3, 3], np.float32))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="conv")]
    g = helper.make_graph(nodes, "conv_weight_rank", [vi("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [vi("y", TensorProto.FLOAT, None)], inits)
    return make_model(g)


@bad("Concat on axis 1 of [1,2,4] and [1,3,5]: dimension 2 differs (4 vs 5)", node="concat",
     tensor="b")
def concat_shape_mismatch():
    nodes = [helper.make_node("Concat", ["a", "b"], ["y"], name="concat", axis=1)]
    g = helper.make_graph(nodes, "concat_shape_mismatch",
                          [vi("a", TensorProto.FLOAT, [1, 2, 4]),
                           vi("b", TensorProto.FLOAT, [1, 3, 5])],
                          [vi("y", TensorProto.FLOAT, None)])
    return make_model(g)


@bad("MatMul of [2,3] and a [4,5] initializer: inner dimensions 3 and 4 differ",
     node="matmul", tensor="b")
def matmul_inner_dim_mismatch():
    inits = [arr("b", np.ones([4, 5], np.float32))]
    nodes = [helper.make_node("MatMul", ["a", "b"], ["y"], name="matmul")]
    g = helper.make_graph(nodes, "matmul_inner_dim_mismatch",
                          [vi("a", TensorProto.FLOAT, [2, 3])],
                          [vi("y", TensorProto.FLOAT, None)], inits)
    return make_model(g)


@bad("Reshape of [2,3] (6 elements) to the constant shape [4,2] (8 elements)",
     node="reshape", tensor="reshape_shape")
def reshape_element_count():
    inits = [arr("reshape_shape", np.array([4, 2], np.int64))]
    nodes = [helper.make_node("Reshape", ["x", "reshape_shape"], ["y"], name="reshape")]
    g = helper.make_graph(nodes, "reshape_element_count",
                          [vi("x", TensorProto.FLOAT, [2, 3])],
                          [vi("y", TensorProto.FLOAT, None)], inits)
    return make_model(g)


# --------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------

def _write_bytes(path, data):
    with open(path, "wb") as f:
        f.write(data)


def write_all():
    os.makedirs(GOOD, exist_ok=True)
    os.makedirs(BAD, exist_ok=True)
    for d in (GOOD, BAD):
        for f in os.listdir(d):
            if f.endswith((".onnx", ".bin", ".json")):
                os.remove(os.path.join(d, f))

    for name, (fn, _) in GOOD_MODELS.items():
        m = fn()
        path = os.path.join(GOOD, name + ".onnx")
        if name == "external_data":
            onnx.save(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                      location="external_data.bin", size_threshold=0)
        else:
            _write_bytes(path, m.SerializeToString())

    defects = {}
    for name, (fn, desc, node, tensor) in BAD_MODELS.items():
        m = fn()
        data = m if isinstance(m, bytes) else m.SerializeToString()
        _write_bytes(os.path.join(BAD, name + ".onnx"), data)
        defects[name] = {"file": name + ".onnx", "description": desc,
                         "category": BAD_CATEGORY.get(name, "qdq"),
                         "node": node, "tensor": tensor}
    with open(os.path.join(BAD, "defects.json"), "w") as f:
        json.dump(defects, f, indent=2, sort_keys=True)
        f.write("\n")


def check_good():
    """onnx.checker on every good model; returns list of (name, status, detail)."""
    max_opset = onnx.defs.onnx_opset_version()
    results = []
    for name in GOOD_MODELS:
        path = os.path.join(GOOD, name + ".onnx")
        m = onnx.load(path, load_external_data=False)
        opset = max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
        if opset > max_opset:
            results.append((name, "SKIP", "opset %d > onnx %s max %d"
                            % (opset, onnx.__version__, max_opset)))
            continue
        try:
            onnx.checker.check_model(path)   # path form resolves external data
            results.append((name, "OK", ""))
        except Exception as e:  # noqa: BLE001
            results.append((name, "FAIL", str(e).splitlines()[0]))
    return results


def check_defect_names():
    """Every node/tensor named in defects.json must occur in its bad model."""
    problems = []
    for name, (fn, _, node, tensor) in BAD_MODELS.items():
        m = fn()
        if isinstance(m, bytes):
            if node or tensor:
                problems.append("%s: names given for a non-model file" % name)
            continue
        g = m.graph
        nodes = {n.name for n in g.node}
        tensors = ({i.name for i in g.initializer} | {v.name for v in g.input}
                   | {v.name for v in g.output} | {v.name for v in g.value_info}
                   | {t for n in g.node for t in list(n.input) + list(n.output)})
        if node is not None and node not in nodes:
            problems.append("%s: node %r not in model" % (name, node))
        if tensor is not None and tensor not in tensors:
            problems.append("%s: tensor %r not in model" % (name, tensor))
    return problems


def main():
    write_all()
    print("wrote %d good and %d bad models under %s"
          % (len(GOOD_MODELS), len(BAD_MODELS), os.path.relpath(OUT)))
    if "--check" in sys.argv[1:]:
        for name, status, detail in check_good():
            print("checker %-4s %s %s" % (status, name, detail))
        problems = check_defect_names()
        for p in problems:
            print("defects.json: " + p)
        print("defects.json names: %s" % ("OK" if not problems else "FAIL"))


if __name__ == "__main__":
    main()
