#!/usr/bin/python3
"""Exports torchvision networks with Q/DQ the way pytorch-quantization's
automatic patching places them, for benchmarks beyond the shared zoo.

Every nn.Conv2d and nn.Linear gets a per-tensor symmetric int8 input
quantizer (max-calibrated on synthetic images) and a per-output-channel
symmetric int8 weight quantizer; nothing else is quantized. BatchNorm stays
after the convs (the exporter cannot fold it into a DQ output). Random
weights (seeded), BN statistics from synthetic images. Exported with
torch.onnx.export at opset 13, not cleaned afterwards.

    /usr/bin/python3 bench/gen_qat_models.py OUTDIR [NAME ...]

NAME: resnet50, mobilenet_v2, resnext50_32x4d, regnet_x_400mf (default:
all). Needs Debian's python3-torch and python3-torchvision.
"""

import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

MODELS = {
    "resnet50": lambda: torchvision.models.resnet50(),
    "mobilenet_v2": lambda: torchvision.models.mobilenet_v2(),
    "resnext50_32x4d": lambda: torchvision.models.resnext50_32x4d(),
    "regnet_x_400mf": lambda: torchvision.models.regnet_x_400mf(),
}


class InputQuantizer(nn.Module):
    """Per-tensor symmetric int8; records max |x| while calibrating."""

    def __init__(self):
        super().__init__()
        self.calibrating = True
        self.register_buffer("amax", torch.tensor(0.0))

    def forward(self, x):
        if self.calibrating:
            self.amax = torch.maximum(self.amax, x.detach().abs().max())
            return x
        scale = float(max(self.amax.item(), 1e-8) / 127.0)
        return torch.fake_quantize_per_tensor_affine(x, scale, 0, -128, 127)


class WeightQuantizer(nn.Module):
    """Per-output-channel symmetric int8, its max calibrated once (a
    constant in the export, as pytorch-quantization's amax buffer)."""

    def __init__(self, w):
        super().__init__()
        amax = w.detach().abs().flatten(1).max(dim=1).values.clamp(min=1e-8)
        self.register_buffer("scale", (amax / 127.0).float())
        self.register_buffer("zero", torch.zeros(w.shape[0], dtype=torch.int32))

    def forward(self, w):
        return torch.fake_quantize_per_channel_affine(w, self.scale, self.zero,
                                                      0, -128, 127)


class Quantized(nn.Module):
    """An nn.Conv2d or nn.Linear with its input and weight quantizers."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer
        self.input_quantizer = InputQuantizer()
        self.weight_quantizer = WeightQuantizer(layer.weight)

    def forward(self, x):
        l = self.layer
        x = self.input_quantizer(x)
        w = self.weight_quantizer(l.weight)
        if isinstance(l, nn.Conv2d):
            return F.conv2d(x, w, l.bias, l.stride, l.padding, l.dilation,
                            l.groups)
        return F.linear(x, w, l.bias)


def patch(module):
    for name, child in module.named_children():
        if isinstance(child, (nn.Conv2d, nn.Linear)):
            setattr(module, name, Quantized(child))
        else:
            patch(child)


def images(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 3, 224, 224, generator=g)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    return (x - mean) / std


def export(name, outdir):
    torch.manual_seed(0)
    model = MODELS[name]()
    # BN statistics from synthetic images, then frozen.
    model.train()
    with torch.no_grad():
        for i in range(4):
            model(images(8, i))
    model.eval()
    fp32 = os.path.join(outdir, name + "_fp32.onnx")
    torch.onnx.export(model, images(1, 100), fp32, opset_version=13,
                      input_names=["input"], output_names=["output"])
    patch(model)
    with torch.no_grad():
        for i in range(2):
            model(images(4, 10 + i))
    for m in model.modules():
        if isinstance(m, InputQuantizer):
            m.calibrating = False
    qat = os.path.join(outdir, name + "_qat.onnx")
    torch.onnx.export(model, images(1, 100), qat, opset_version=13,
                      input_names=["input"], output_names=["output"])
    print(qat)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for name in sys.argv[2:] or list(MODELS):
        export(name, outdir)


if __name__ == "__main__":
    main()
