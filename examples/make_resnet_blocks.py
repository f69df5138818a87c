#!/usr/bin/python3
"""Writes a small QAT ResNet (a stem, three basic blocks, a classifier) as
pytorch-quantization exports it, nothing cleaned: QuantizeLinear and
DequantizeLinear before every Conv and Gemm input and on their float
weights (per output channel), BatchNormalization left after each Conv, the
skip path of each residual Add in float, and an exporter Identity between a
weight's DequantizeLinear and its Conv. The quick start and the Python
example run on it.

usage: /usr/bin/python3 examples/make_resnet_blocks.py OUT.onnx [--seed N]
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0
        self.used = set()

    def name(self, base):
        """`base`, as torch names it; made unique should a base repeat."""
        self.count += 1
        return base if base not in self.used else "%s_%d" % (base, self.count)

    def const(self, base, value):
        n = self.name(base)
        self.used.add(n)
        self.inits.append(numpy_helper.from_array(np.asarray(value), n))
        return n

    def node(self, op, inputs, base, **attrs):
        out, name = self.name("/" + base + "_output_0"), self.name("/" + base)
        self.used.update((out, name))
        self.nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out

    def fake_quant(self, x, scale, base, axis=None):
        """QuantizeLinear -> DequantizeLinear, int8 symmetric."""
        s = self.const(base + "_scale", np.asarray(scale, np.float32))
        z = self.const(base + "_zp", np.zeros(np.shape(scale), np.int8))
        extra = {} if axis is None else {"axis": axis}
        q = self.node("QuantizeLinear", [x, s, z], base + "/QuantizeLinear", **extra)
        return self.node("DequantizeLinear", [q, s, z], base + "/DequantizeLinear", **extra)

    def conv(self, x, cin, cout, k, stride, base, act_scale, identity=False):
        x = self.fake_quant(x, np.float32(act_scale), base + "/input_quantizer")
        w = (self.rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32)
        amax = np.abs(w).reshape(cout, -1).max(axis=1)
        wq = self.fake_quant(self.const(base + ".weight", w), (amax / 127).astype(np.float32),
                             base + "/weight_quantizer", axis=0)
        if identity:
            wq = self.node("Identity", [wq], base + "/Identity")
        y = self.node("Conv", [x, wq], base + "/Conv", kernel_shape=[k, k], strides=[stride, stride],
                      pads=[k // 2] * 4)
        gamma = (1 + 0.1 * self.rng.standard_normal(cout)).astype(np.float32)
        beta = (0.1 * self.rng.standard_normal(cout)).astype(np.float32)
        mean = (0.1 * self.rng.standard_normal(cout)).astype(np.float32)
        var = (1 + 0.1 * np.abs(self.rng.standard_normal(cout))).astype(np.float32)
        return self.node("BatchNormalization",
                         [y] + [self.const(base + "." + n, v) for n, v in
                                (("gamma", gamma), ("beta", beta), ("mean", mean), ("var", var))],
                         base + "/BatchNormalization", epsilon=1e-5)

    def block(self, x, cin, cout, stride, base):
        h = self.node("Relu", [self.conv(x, cin, cout, 3, stride, base + "/conv1", 0.05)], base + "/relu1")
        h = self.conv(h, cout, cout, 3, 1, base + "/conv2", 0.03, identity=True)
        skip = x if stride == 1 and cin == cout else \
            self.conv(x, cin, cout, 1, stride, base + "/downsample", 0.05)
        return self.node("Relu", [self.node("Add", [h, skip], base + "/Add")], base + "/relu2")


def build(seed):
    b = Builder(seed)
    x = b.node("Relu", [b.conv("input", 3, 16, 3, 2, "stem", 2.5 / 127)], "stem/relu")
    x = b.block(x, 16, 16, 1, "layer1.0")
    x = b.block(x, 16, 16, 1, "layer1.1")
    x = b.block(x, 16, 32, 2, "layer2.0")
    x = b.node("GlobalAveragePool", [x], "avgpool")
    x = b.node("Flatten", [x], "flatten", axis=1)
    x = b.fake_quant(x, np.float32(0.02), "fc/input_quantizer")
    w = (b.rng.standard_normal((10, 32)) * 0.2).astype(np.float32)
    wq = b.fake_quant(b.const("fc.weight", w), (np.abs(w).max(axis=1) / 127).astype(np.float32),
                      "fc/weight_quantizer", axis=0)
    bias = b.const("fc.bias", (0.01 * b.rng.standard_normal(10)).astype(np.float32))
    out = b.node("Gemm", [x, wq, bias], "fc/Gemm", transB=1)
    b.nodes[-1].output[0] = "logits"
    del out
    graph = helper.make_graph(
        b.nodes, "resnet_blocks_qat",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 64, 64])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], b.inits)
    model = helper.make_model(graph, producer_name="pytorch-quantization-style (qopt example)",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    onnx.save(build(args.seed), args.out)


if __name__ == "__main__":
    main()
