#!/usr/bin/python3
"""Writes dynamically quantized models the way ONNX Runtime's
quantize_dynamic writes them, with their fp32 twins.

torch 1.13 cannot export quantized::linear_dynamic, and ONNX Runtime's
Python quantizer is not installable here (no PyPI), so the float networks
come from torch.onnx.export (opset 13) and the quantization follows what
quantize_dynamic writes (QuantType.QInt8 weights, per tensor, symmetric):
every MatMul whose B is a float initializer becomes

    DynamicQuantizeLinear(A) -> (a_q u8, a_scale, a_zero_point)
    MatMulInteger(a_q, B_q i8, a_zero_point, B_zero_point) -> int32
    Cast(to=FLOAT)
    Mul(a_scale, B_scale) -> scale product; Mul(Cast, product)

(the exporter's bias Add stays after it). With --form=msft the same
MatMuls become ONNX Runtime's fused com.microsoft operators instead:
DynamicQuantizeMatMul(A, B_q, B_scale, B_zero_point) for the MLP and
DynamicQuantizeLinear + MatMulIntegerToFloat for the encoder.
Weights: scale 2 max|B| / 255, zero point 0, values rounded and clipped to
[-128, 127] (quantize_dynamic's symmetric int8).

    /usr/bin/python3 bench/gen_dynamic_models.py OUTDIR [--form=integer|msft]

Writes OUTDIR/dynamic_mlp_qat.onnx (3 Linear layers on 64 tokens of 256),
OUTDIR/dynamic_encoder_qat.onnx (2 transformer encoder layers, d_model 128,
4 heads, 32 tokens) and their _fp32 twins; with --form=msft the names carry
_msft. Needs Debian's python3-torch.
"""

import argparse
import os
import tempfile
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

warnings.filterwarnings("ignore")


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(256, 512)
        self.fc2 = nn.Linear(512, 512)
        self.fc3 = nn.Linear(512, 64)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class EncoderLayer(nn.Module):
    """Attention and feed-forward written out (the exporter cannot take
    nn.TransformerEncoderLayer's fused fast path)."""

    def __init__(self, d=128, heads=4, ff=512):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.out = nn.Linear(d, d)
        self.norm1 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, ff)
        self.ff2 = nn.Linear(ff, d)
        self.norm2 = nn.LayerNorm(d)

    def forward(self, x):
        b, t, d = x.shape
        hd = d // self.heads

        def split(y):
            return y.reshape(b, t, self.heads, hd).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        att = torch.softmax(q @ k.transpose(-1, -2) / hd ** 0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = self.norm1(x + self.out(y))
        return self.norm2(x + self.ff2(torch.nn.functional.gelu(self.ff1(x))))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([EncoderLayer(), EncoderLayer()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def export(model, shape, path):
    torch.onnx.export(model.eval(), torch.zeros(*shape), path, opset_version=13,
                      input_names=["input"], output_names=["output"],
                      do_constant_folding=True)


def quantize_weight(w):
    absmax = float(np.abs(w).max()) or 1.0
    scale = np.float32(2.0 * absmax / 255.0)
    return np.clip(np.round(w / scale), -128, 127).astype(np.int8), scale


def quantize_dynamic(model, form):
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    nodes = []
    new_inits = []
    for n in g.node:
        if n.op_type != "MatMul" or n.input[1] not in inits:
            nodes.append(n)
            continue
        a, b = n.input[0], n.input[1]
        w = nh.to_array(inits[b])
        if w.ndim != 2:
            nodes.append(n)
            continue
        q, scale = quantize_weight(w)
        base = n.name or n.output[0]
        bq, bs, bz = b + "_quantized", b + "_scale", b + "_zero_point"
        new_inits += [nh.from_array(q, bq), nh.from_array(np.array(scale, np.float32), bs),
                      nh.from_array(np.array(0, np.int8), bz)]
        y = n.output[0]
        if form == "msft" and model.graph.name == "mlp":
            nodes.append(h.make_node("DynamicQuantizeMatMul", [a, bq, bs, bz], [y],
                                     name=base + "_DynamicQuantizeMatMul",
                                     domain="com.microsoft"))
            continue
        aq, ascale, azp = a + "_quantized", a + "_scale", a + "_zero_point"
        if not any(m.output and m.output[0] == aq for m in nodes):
            nodes.append(h.make_node("DynamicQuantizeLinear", [a], [aq, ascale, azp],
                                     name=a + "_QuantizeLinear"))
        if form == "msft":
            nodes.append(h.make_node("MatMulIntegerToFloat", [aq, bq, ascale, bs, azp, bz], [y],
                                     name=base + "_MatMulIntegerToFloat",
                                     domain="com.microsoft"))
            continue
        nodes.append(h.make_node("MatMulInteger", [aq, bq, azp, bz], [y + "_int32"],
                                 name=base + "_MatMulInteger"))
        nodes.append(h.make_node("Mul", [ascale, bs], [y + "_scales"],
                                 name=base + "_scales_mul"))
        nodes.append(h.make_node("Cast", [y + "_int32"], [y + "_float"], to=T.FLOAT,
                                 name=base + "_output_cast"))
        nodes.append(h.make_node("Mul", [y + "_float", y + "_scales"], [y],
                                 name=base + "_output_scale_mul"))
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(new_inits)
    used = {i for n in g.node for i in n.input}
    for init in list(g.initializer):
        if init.name not in used:
            g.initializer.remove(init)
    del g.value_info[:]
    if form == "msft":
        model.opset_import.append(h.make_opsetid("com.microsoft", 1))
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--form", choices=["integer", "msft"], default="integer")
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    torch.manual_seed(0)
    suffix = "_msft" if args.form == "msft" else ""
    for name, model, shape in [("mlp", Mlp(), (1, 64, 256)),
                               ("encoder", Encoder(), (1, 32, 128))]:
        with tempfile.TemporaryDirectory() as tmp:
            fp32 = os.path.join(tmp, "fp32.onnx")
            export(model, shape, fp32)
            m = onnx.load(fp32)
            m.graph.name = name
            onnx.save(m, os.path.join(args.outdir, f"dynamic_{name}{suffix}_fp32.onnx"))
            q = onnx.load(fp32)
            q.graph.name = name
            q = quantize_dynamic(q, args.form)
            onnx.checker.check_model(q)
            onnx.save(q, os.path.join(args.outdir, f"dynamic_{name}{suffix}_qat.onnx"))
        print(f"wrote dynamic_{name}{suffix}_qat.onnx and its fp32 twin", flush=True)


if __name__ == "__main__":
    main()
