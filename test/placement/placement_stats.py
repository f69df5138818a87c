#!/usr/bin/env python3
"""Counts what decides whether a TensorRT-style backend fuses a Q/DQ model
into INT8 units, on an ONNX file:

  requantize-pairs     DequantizeLinear -> QuantizeLinear with different
                       scale or zero point, directly or through data
                       movement (a requantize "Scale" layer)
  concat-grids         Concats whose inputs and output are not on one grid
                       (a float input counts as another grid); an int8
                       Concat (after Q/DQ were moved through it) has one
                       grid by construction
  float-residual-adds  Adds of two activations with no input from a
                       DequantizeLinear, or whose other input is neither
                       from a DequantizeLinear nor a weighted op's branch
                       (Conv -> activation -> Add fuses into one unit; a
                       float skip input breaks it)
  weight-dq-indirect   Conv/ConvTranspose/Gemm/MatMul whose weight is not a
                       DequantizeLinear of an initializer feeding it directly
  convs, concats, residual-adds, dq, q  totals

Usage: placement_stats.py model.onnx [--expect key=value ...]
Prints "key: value" lines; with --expect, exits 1 naming each mismatch.
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper

WEIGHTED = {"Conv", "ConvTranspose", "Gemm", "MatMul"}
# Ops that move int8 values unchanged (the grid of their input 0).
MOVEMENT = {"Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze",
            "Slice", "Split", "Gather", "Identity", "Expand", "Tile",
            "MaxPool", "Resize", "Pad", "DepthToSpace", "SpaceToDepth",
            "Concat"}
# Ops a conv unit fuses after the weighted op (SiLU is Sigmoid * Mul).
ACTIVATIONS = {"Relu", "Clip", "LeakyRelu", "Sigmoid", "Mul", "HardSigmoid",
               "HardSwish", "Tanh", "Elu", "Selu"}


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    model = onnx.load(argv[1])
    expects = {}
    rest = argv[2:]
    while rest:
        if rest[0] != "--expect" or len(rest) < 2 or "=" not in rest[1]:
            print("usage: placement_stats.py model.onnx [--expect key=value]",
                  file=sys.stderr)
            return 2
        k, v = rest[1].split("=", 1)
        expects[k] = int(v)
        rest = rest[2:]

    g = model.graph
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    consts = dict(inits)
    producer = {}
    for n in g.node:
        for o in n.output:
            producer[o] = n
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    consts[n.output[0]] = numpy_helper.to_array(a.t)

    def params(n):
        s = consts.get(n.input[1])
        z = consts.get(n.input[2]) if len(n.input) > 2 and n.input[2] else None
        if s is None:
            return None
        zz = None if z is None else (z.dtype.str, np.asarray(z).ravel().tolist())
        return (np.asarray(s, np.float32).ravel().tolist(), zz)

    def is_const(name):
        if name in consts:
            return True
        p = producer.get(name)
        return p is not None and p.op_type == "DequantizeLinear" and \
            p.input[0] in consts

    users = {}
    for n in g.node:
        for i in n.input:
            users.setdefault(i, []).append(n)

    def grid(name, depth=0):
        """The grid a tensor is on: a DQ's, or an int8 tensor's (from its
        Q, through data movement); "float" otherwise."""
        p = producer.get(name)
        if p is None or depth > 16:
            return "float"
        if p.op_type in ("DequantizeLinear", "QuantizeLinear"):
            return params(p)
        if p.op_type in MOVEMENT:
            return grid(p.input[0], depth + 1)
        return "float"

    def is_dq(name):
        p = producer.get(name)
        return p is not None and p.op_type == "DequantizeLinear"

    def is_branch(name, depth=0):
        p = producer.get(name)
        if p is None or depth > 4:
            return False
        if p.op_type in WEIGHTED:
            return True
        return p.op_type in ACTIVATIONS and any(
            is_branch(i, depth + 1) for i in p.input if i)

    stats = dict.fromkeys(
        ["requantize-pairs", "concat-grids", "float-residual-adds",
         "weight-dq-indirect", "convs", "concats", "residual-adds", "dq",
         "q"], 0)
    for n in g.node:
        if n.op_type == "DequantizeLinear":
            stats["dq"] += 1
        elif n.op_type == "QuantizeLinear":
            stats["q"] += 1
            p = producer.get(n.input[0])
            while p is not None and p.op_type in MOVEMENT and \
                    p.op_type != "Concat":
                p = producer.get(p.input[0])
            if p is not None and p.op_type == "DequantizeLinear" and \
                    params(p) != params(n):
                stats["requantize-pairs"] += 1
        elif n.op_type in WEIGHTED:
            stats["convs"] += 1
            w = producer.get(n.input[1])
            if w is None or w.op_type != "DequantizeLinear" or \
                    w.input[0] not in consts:
                stats["weight-dq-indirect"] += 1
        elif n.op_type == "Concat":
            stats["concats"] += 1
            grids = [grid(i) for i in n.input]
            grids += [params(u) for u in users.get(n.output[0], [])
                      if u.op_type in ("QuantizeLinear", "DequantizeLinear")]
            if "float" in grids or any(x != grids[0] for x in grids):
                stats["concat-grids"] += 1
        elif n.op_type == "Add" and not any(is_const(i) for i in n.input):
            stats["residual-adds"] += 1
            from_dq = [is_dq(i) for i in n.input]
            if not any(from_dq) or not all(
                    d or is_branch(i) for d, i in zip(from_dq, n.input)):
                stats["float-residual-adds"] += 1
    for k, v in stats.items():
        print(f"{k}: {v}")
    bad = [f"{k} is {stats.get(k)}, expected {v}" for k, v in expects.items()
           if stats.get(k) != v]
    for b in bad:
        print(f"placement_stats.py: {argv[1]}: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
