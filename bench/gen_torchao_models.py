#!/usr/bin/python3
"""Exports networks quantized by PyTorch's own quantization (torch.ao), as
its users write them, each with its fp32 twin.

Static PTQ in eager mode (torchvision's quantizable models: fuse_model,
prepare, calibrate, convert) and in FX mode (prepare_fx/convert_fx), both
with the 'x86' qconfig, and an eager QAT net (prepare_qat/convert) with
residual Adds and a Concat. Exported by torch.onnx.export at opset 13, not
cleaned afterwards: every activation is QuantizeLinear -> Cast(to=UINT8) ->
DequantizeLinear, uint8 with zero points anywhere in 0..255, weights are
per-channel int8 Constants, biases int32 behind a DequantizeLinear whose
zero point is ConstantOfShape -> Cast.

The fp32 twin (NAME_fp32.onnx beside NAME_qat.onnx, the zoo's convention)
is the float network the quantized one was made from, with the same
weights (eager: after fuse_model, so BatchNorm is folded as in the
quantized one). Random weights (seeded); calibration on synthetic images.

    /usr/bin/python3 bench/gen_torchao_models.py OUTDIR [--size PX] [NAME ...]

NAME (default: all): torchao_eager_resnet18, torchao_eager_mobilenet_v2,
torchao_eager_mobilenet_v3_large, torchao_fx_resnet18, torchao_fx_mobilenet_v2,
torchao_fx_mobilenet_v3_large, torchao_qat_residual_concat. --size sets the
input's height and width (default 224). Needs Debian's python3-torch and
python3-torchvision (torch 1.13).
"""

import argparse
import copy
import os
import sys
import warnings

import torch
import torch.nn as nn
from torch.ao import quantization as tq
from torch.ao.quantization import quantize_fx
from torchvision.models import quantization as qmodels

warnings.filterwarnings("ignore")

TORCHVISION = {
    "resnet18": lambda: qmodels.resnet18(weights=None, quantize=False),
    "mobilenet_v2": lambda: qmodels.mobilenet_v2(weights=None, quantize=False),
    "mobilenet_v3_large": lambda: qmodels.mobilenet_v3_large(weights=None,
                                                             quantize=False),
}


def images(count, size, seed):
    """Smooth image-like batches, ImageNet-normalised (as the zoo's inputs)."""
    g = torch.Generator().manual_seed(seed)
    for _ in range(count):
        x = torch.rand(2, 3, size // 8, size // 8, generator=g)
        x = nn.functional.interpolate(x, size=(size, size), mode="bilinear",
                                      align_corners=False)
        mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
        std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
        yield (x - mean) / std


def settle_batchnorm(model, size):
    """Random BN statistics that keep activations in range (as trained
    networks have), from a few batches in training mode."""
    model.train()
    with torch.no_grad():
        for x in images(4, size, seed=1):
            model(x)
    model.eval()


def export(model, path, size):
    x = torch.zeros(1, 3, size, size)
    torch.onnx.export(model, x, path, opset_version=13, input_names=["input"],
                      output_names=["output"], do_constant_folding=True)


def eager_ptq(arch, size):
    torch.manual_seed(0)
    model = TORCHVISION[arch]()
    settle_batchnorm(model, size)
    model.fuse_model()
    twin = copy.deepcopy(model)
    model.qconfig = tq.get_default_qconfig("x86")
    tq.prepare(model, inplace=True)
    with torch.no_grad():
        for x in images(4, size, seed=2):
            model(x)
    tq.convert(model, inplace=True)
    return model, twin


def fx_ptq(arch, size):
    torch.manual_seed(0)
    model = TORCHVISION[arch]()
    settle_batchnorm(model, size)
    twin = copy.deepcopy(model)
    example = (torch.zeros(1, 3, size, size),)
    prepared = quantize_fx.prepare_fx(
        model, tq.get_default_qconfig_mapping("x86"), example)
    with torch.no_grad():
        for x in images(4, size, seed=2):
            prepared(x)
    return quantize_fx.convert_fx(prepared), twin


class ResidualConcatNet(nn.Module):
    """Conv-BN-ReLU stem, two residual blocks (Adds through FloatFunctional),
    a Concat of two branches, pooling and a Linear head."""

    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.dequant = tq.DeQuantStub()

        def cbr(cin, cout, stride=1, relu=True):
            layers = [nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                      nn.BatchNorm2d(cout)]
            if relu:
                layers.append(nn.ReLU())
            return nn.Sequential(*layers)

        self.stem = cbr(3, 32, stride=2)
        self.block1 = nn.ModuleList([cbr(32, 32), cbr(32, 32, relu=False)])
        self.block2 = nn.ModuleList([cbr(32, 32), cbr(32, 32, relu=False)])
        self.add1 = nn.quantized.FloatFunctional()
        self.add2 = nn.quantized.FloatFunctional()
        self.relu1 = nn.ReLU()
        self.relu2 = nn.ReLU()
        self.left = cbr(32, 48, stride=2)
        self.right = cbr(32, 16, stride=2)
        self.cat = nn.quantized.FloatFunctional()
        self.mix = cbr(64, 64)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.stem(self.quant(x))
        y = self.block1[1](self.block1[0](x))
        x = self.relu1(self.add1.add(y, x))
        y = self.block2[1](self.block2[0](x))
        x = self.relu2(self.add2.add(y, x))
        x = self.cat.cat([self.left(x), self.right(x)], dim=1)
        x = self.pool(self.mix(x)).flatten(1)
        return self.dequant(self.fc(x))

    def fuse(self):
        def fuse_cbr(seq):
            names = ["0", "1", "2"] if len(seq) == 3 else ["0", "1"]
            tq.fuse_modules_qat(seq, [names], inplace=True)

        for seq in [self.stem, *self.block1, *self.block2, self.left,
                    self.right, self.mix]:
            fuse_cbr(seq)


def qat_residual_concat(size):
    torch.manual_seed(0)
    model = ResidualConcatNet()
    settle_batchnorm(model, size)
    model.train()
    model.fuse()
    model.qconfig = tq.get_default_qat_qconfig("x86")
    tq.prepare_qat(model, inplace=True)
    # Observers and fake quantization see data in training mode; BN
    # statistics are frozen and no optimizer step runs, so the twin's
    # weights are the quantized net's.
    model.apply(torch.nn.intrinsic.qat.freeze_bn_stats)
    with torch.no_grad():
        for x in images(4, size, seed=2):
            model(x)
    model.eval()
    twin = copy.deepcopy(model)
    twin.apply(tq.disable_fake_quant)
    twin.apply(tq.disable_observer)
    twin = FloatTwin(twin)
    tq.convert(model, inplace=True)
    return model, twin


class FloatTwin(nn.Module):
    """The QAT net with fake quantization off, as a plain float module (the
    exporter would still write the disabled FakeQuantize nodes)."""

    def __init__(self, qat):
        super().__init__()
        self.qat = qat
        for m in self.qat.modules():
            for name, child in list(m.named_children()):
                if isinstance(child, tq.FakeQuantizeBase):
                    setattr(m, name, nn.Identity())
            if hasattr(m, "weight_fake_quant"):
                m.weight_fake_quant = nn.Identity()
            if hasattr(m, "activation_post_process"):
                m.activation_post_process = nn.Identity()

    def forward(self, x):
        return self.qat(x)


def make(name, size):
    kind, _, arch = name.partition("_")[2].partition("_")
    if name == "torchao_qat_residual_concat":
        return qat_residual_concat(size)
    if kind == "eager":
        return eager_ptq(arch, size)
    if kind == "fx":
        return fx_ptq(arch, size)
    raise KeyError(name)


NAMES = [f"torchao_{k}_{a}" for k in ("eager", "fx") for a in TORCHVISION] + [
    "torchao_qat_residual_concat"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("names", nargs="*", default=NAMES)
    ap.add_argument("--size", type=int, default=224)
    args = ap.parse_intermixed_args()
    os.makedirs(args.outdir, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    for name in args.names:
        if name not in NAMES:
            sys.exit(f"gen_torchao_models: unknown model '{name}' "
                     f"(known: {', '.join(NAMES)})")
        quantized, twin = make(name, args.size)
        export(quantized, os.path.join(args.outdir, f"{name}_qat.onnx"),
               args.size)
        export(twin, os.path.join(args.outdir, f"{name}_fp32.onnx"),
               args.size)
        print(f"wrote {name}_qat.onnx and {name}_fp32.onnx", flush=True)


if __name__ == "__main__":
    main()
