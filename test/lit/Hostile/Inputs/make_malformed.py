"""Writes OUT.onnx, a model malformed in one way (issue 35, item 5):
attr_twice, const_none, const_two, input_undef, softmax_axis, split_num,
split_zero, resize_both, resize_mode, pad_mode, zp_300; and resize_empty,
which is valid (scales=[] beside sizes, as exporters write it); each as
DIR/KIND.onnx.
usage: make_malformed.py DIR"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

KINDS = ["attr_twice", "const_none", "const_two", "input_undef", "softmax_axis", "split_num",
         "split_zero", "resize_both", "resize_empty", "resize_mode", "pad_mode", "zp_300"]


def value(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, list(shape))


def write(kind, out):
    def save(nodes, inputs, outputs, inits=(), opset=13):
        graph = helper.make_graph(nodes, kind, inputs, outputs, list(inits))
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        with open(out, "wb") as f:
            f.write(model.SerializeToString())
    build(kind, save)


def build(kind, save):
    x, y = value("x", (1, 4)), value("y", (1, 4))
    img, up = value("x", (1, 1, 2, 2)), value("y", (1, 1, 4, 4))
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    sizes = numpy_helper.from_array(np.array([1, 1, 4, 4], np.int64), "sizes")
    if kind == "attr_twice":
        n = helper.make_node("Softmax", ["x"], ["y"], axis=1)
        n.attribute.extend([helper.make_attribute("axis", 0)])
        save([n], [x], [y])
    elif kind in ("const_none", "const_two"):
        c = helper.make_node("Constant", [], ["c"])
        if kind == "const_two":
            c.attribute.extend([
                helper.make_attribute("value", numpy_helper.from_array(np.ones((1, 4), np.float32))),
                helper.make_attribute("value_float", 1.0)])
        save([c, helper.make_node("Add", ["x", "c"], ["y"])], [x], [y])
    elif kind == "input_undef":
        save([helper.make_node("Relu", ["x"], ["y"])], [value("x", (1, 4), TensorProto.UNDEFINED)], [y])
    elif kind == "softmax_axis":
        save([helper.make_node("Softmax", ["x"], ["y"], axis=5)], [x], [y])
    elif kind in ("split_num", "split_zero"):
        save([helper.make_node("Split", ["x"], ["a", "b"], axis=1,
                               num_outputs=3 if kind == "split_num" else 0)],
             [x], [value("a", (1, 2)), value("b", (1, 2))], opset=18)
    elif kind == "resize_both":
        save([helper.make_node("Resize", ["x", "", "scales", "sizes"], ["y"])], [img], [up],
             [scales, sizes])
    elif kind == "resize_empty":
        empty = numpy_helper.from_array(np.zeros([0], np.float32), "empty")
        save([helper.make_node("Resize", ["x", "", "empty", "sizes"], ["y"])], [img], [up],
             [empty, sizes])
    elif kind == "resize_mode":
        save([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="bogus")], [img], [up],
             [scales])
    elif kind == "pad_mode":
        pads = numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")
        save([helper.make_node("Pad", ["x", "pads"], ["y"], mode="bogus")], [img], [up], [pads])
    elif kind == "zp_300":
        zp = helper.make_tensor("zp", TensorProto.INT8, [], [300])
        s = numpy_helper.from_array(np.array(0.1, np.float32), "s")
        save([helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"]),
              helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"])], [x], [y], [s, zp])
    else:
        sys.exit("unknown kind " + kind)


for kind in KINDS:
    write(kind, "%s/%s.onnx" % (sys.argv[1], kind))
