#!/usr/bin/python3
"""Writes small networks in the low-bit forms today's quantizers export, each
with its fp32 twin, for checking qopt end to end on them (import, round trip,
interpreter against ONNX Runtime, explain under TensorRT 8.6 and 10, plan):

- fp8_vit_block_qdq.onnx (opset 19): a ViT encoder block (17 tokens of 64,
  2 heads) in NVIDIA Model Optimizer's FP8 placement: FLOAT8E4M3FN Q/DQ on
  the input of every MatMul (activations per tensor, scale amax / 448) with
  the weights stored as FLOAT8E4M3FN initializers behind DequantizeLinear,
  Q/DQ on both inputs of the two attention MatMuls (its FP8 MHA), and
  LayerNormalization, Softmax, GELU (the Erf form) and the residual Adds in
  float.
- fp8_cnn_residual_qdq.onnx (opset 19): three 3x3 convs with a residual Add
  and a Gemm head; FP8 Q/DQ on each Conv/Gemm input, FP8 weights, the Add,
  Relus and pooling in float.
- mixed_int8_fp8_head_qdq.onnx (opset 19): an INT8 backbone (int8 Q/DQ on
  activations, per-channel int8 weights, as pytorch-quantization exports)
  whose last conv and Gemm head are FP8, a Relu right before the first FP8
  Q (ONNX Runtime's optimized session drops it and so computes another
  function; its level "disabled" runs the model as written).
- int4_attention_decode_qdq.onnx (opset 21): one decoding step (M = 1) of
  an attention block with a KV cache: the four projections are INT4
  weight-only MatMuls (block 128, symmetric), the attention float.
- fp8_mlp_fp16_qdq.onnx (opset 19): the FP8 MLP with float16 activations
  and scales (x, y and every scale float16), as fp16 deployments export it.
- nvfp4_weight_mlp_qdq.onnx (opset 23): NVFP4 weights (W4A16): FLOAT4E2M1
  codes with one FLOAT8E4M3FN scale per 16 rows of K and column, that scale
  itself dequantized by one float32 scale for the tensor (two levels:
  DequantizeLinear(codes, DequantizeLinear(block scales, global scale),
  axis 0, block_size 16)), as Model Optimizer exports NVFP4 weights.
  ONNX Runtime has no CPU kernel for FLOAT4E2M1: qopt is checked against
  the generator's own numpy decoding (the fp32 twin).

NAME_fp32.onnx beside each is the same graph without the Q/DQ, with the
dequantized weights as float32 initializers (float16 for the fp16 one, so
its inputs and outputs match). Inputs are meant in [-1, 1] (activation
scales assume amax 1, or the range the fp32 twin reaches on such inputs).
Weights are random (numpy, seeded): every run writes the same bytes.

    /usr/bin/python3 bench/gen_lowbit_networks.py OUTDIR
"""

import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_lowbit_models import (FLOAT, FLOAT4E2M1, FLOAT8E4M3FN,  # noqa: E402
                               decode_array, encode_minifloat, float_io,
                               float_tensor, fp8_zero_point, int4_blockwise,
                               int4_tensor, make_model, max_finite,
                               minifloat_per_tensor, minifloat_tensor)

FLOAT16 = 10
E4M3_MAX = 448.0


class Builder:
    """Nodes and initializers of a quantized graph and of its fp32 twin."""

    def __init__(self, seed, float_kind=FLOAT):
        self.rng = np.random.default_rng(seed)
        self.q_nodes, self.f_nodes = [], []
        self.q_inits, self.f_inits = [], []
        self.float_kind = float_kind
        self.np_float = np.float16 if float_kind == FLOAT16 else np.float32

    def tensor(self, name, array):
        return numpy_helper.from_array(np.asarray(array, dtype=self.np_float), name)

    def both(self, op, inputs, outputs, **attrs):
        """A node both graphs have."""
        name = outputs[0] + "_" + op
        self.q_nodes.append(helper.make_node(op, inputs, outputs, name=name, **attrs))
        self.f_nodes.append(helper.make_node(op, inputs, outputs, name=name, **attrs))

    def constant(self, name, array):
        self.q_inits.append(self.tensor(name, array))
        self.f_inits.append(self.tensor(name, array))
        return name

    def fp8_qdq(self, x, amax=1.0):
        """Q/DQ in E4M3FN on activation x (per tensor); the twin reads x."""
        scale = self.tensor(x + "_scale", np.array(amax / E4M3_MAX))
        self.q_inits += [scale, fp8_zero_point(x + "_zp", FLOAT8E4M3FN)]
        self.q_nodes += [
            helper.make_node("QuantizeLinear", [x, x + "_scale", x + "_zp"], [x + "_q"],
                             name=x + "_QuantizeLinear"),
            helper.make_node("DequantizeLinear", [x + "_q", x + "_scale", x + "_zp"],
                             [x + "_dq"], name=x + "_DequantizeLinear")]
        return x + "_dq", x

    def int8_qdq(self, x, amax=1.0):
        """Symmetric int8 Q/DQ (zero point 0), as pytorch-quantization writes."""
        self.q_inits += [self.tensor(x + "_scale", np.array(amax / 127)),
                         numpy_helper.from_array(np.array(0, dtype=np.int8), x + "_zp")]
        self.q_nodes += [
            helper.make_node("QuantizeLinear", [x, x + "_scale", x + "_zp"], [x + "_q"],
                             name=x + "_QuantizeLinear"),
            helper.make_node("DequantizeLinear", [x + "_q", x + "_scale", x + "_zp"],
                             [x + "_dq"], name=x + "_DequantizeLinear")]
        return x + "_dq", x

    def fp8_weight(self, name, w):
        """An E4M3FN weight (per tensor) behind DequantizeLinear."""
        codes, scale, deq = minifloat_per_tensor(w.astype(np.float32), FLOAT8E4M3FN)
        self.q_inits += [minifloat_tensor(name + "_fp8", codes, FLOAT8E4M3FN),
                         self.tensor(name + "_scale", np.array(scale)),
                         fp8_zero_point(name + "_zp", FLOAT8E4M3FN)]
        self.q_nodes.append(helper.make_node(
            "DequantizeLinear", [name + "_fp8", name + "_scale", name + "_zp"], [name],
            name=name + "_DequantizeLinear"))
        self.f_inits.append(self.tensor(name, deq))
        return name

    def int8_weight(self, name, w):
        """Per-output-channel symmetric int8 (axis 0), as for conv weights."""
        amax = np.abs(w.reshape(w.shape[0], -1)).max(axis=1)
        scale = (amax / 127).astype(np.float32)
        shape = (-1,) + (1,) * (w.ndim - 1)
        q = np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8)
        self.q_inits += [numpy_helper.from_array(q, name + "_q"),
                         float_tensor(name + "_scale", scale),
                         numpy_helper.from_array(np.zeros(w.shape[0], np.int8), name + "_zp")]
        self.q_nodes.append(helper.make_node(
            "DequantizeLinear", [name + "_q", name + "_scale", name + "_zp"], [name],
            name=name + "_DequantizeLinear", axis=0))
        self.f_inits.append(float_tensor(name, q.astype(np.float32) * scale.reshape(shape)))
        return name

    def int4_weight(self, name, w):
        q, scale, _, deq = int4_blockwise(w.astype(np.float32), 128, True)
        self.q_inits += [int4_tensor(name + "_q", q, True), float_tensor(name + "_scale", scale)]
        self.q_nodes.append(helper.make_node(
            "DequantizeLinear", [name + "_q", name + "_scale"], [name],
            name=name + "_DequantizeLinear", axis=0, block_size=128))
        self.f_inits.append(float_tensor(name, deq))
        return name

    def shape(self, name, dims):
        """An int64 shape constant in both graphs."""
        for inits in (self.q_inits, self.f_inits):
            inits.append(numpy_helper.from_array(np.array(dims, np.int64), name))
        return name

    def quantized(self, op, q_inputs, f_inputs, outputs, **attrs):
        """A node whose inputs differ: Q/DQ outputs in one graph, plain in the twin."""
        name = outputs[0] + "_" + op
        self.q_nodes.append(helper.make_node(op, q_inputs, outputs, name=name, **attrs))
        self.f_nodes.append(helper.make_node(op, f_inputs, outputs, name=name, **attrs))

    def fp8_matmul(self, x, w, out, amax=1.0, bias=None):
        xq, xf = self.fp8_qdq(x, amax)
        wname = self.fp8_weight(out + "_W", w)
        mm = out if bias is None else out + "_mm"
        self.quantized("MatMul", [xq, wname], [xf, wname], [mm])
        if bias is not None:
            self.both("Add", [mm, self.constant(out + "_b", bias)], [out])
        return out

    def models(self, name, inputs, outputs, opset):
        return (make_model(name, self.q_nodes, inputs, outputs, self.q_inits, opset),
                make_model(name + "_fp32", self.f_nodes, inputs, outputs, self.f_inits, opset))


def gelu(b, x, out):
    """x * 0.5 * (1 + erf(x / sqrt 2)), as torch.onnx writes it at opset < 20."""
    b.both("Div", [x, b.constant(out + "_sqrt2", np.array(np.sqrt(2.0)))], [out + "_d"])
    b.both("Erf", [out + "_d"], [out + "_e"])
    b.both("Add", [out + "_e", b.constant(out + "_one", np.array(1.0))], [out + "_p"])
    b.both("Mul", [x, out + "_p"], [out + "_m"])
    b.both("Mul", [out + "_m", b.constant(out + "_half", np.array(0.5))], [out])
    return out


def layer_norm(b, x, out, dim):
    b.both("LayerNormalization", [x, b.constant(out + "_g", np.ones(dim)),
                                  b.constant(out + "_beta", np.zeros(dim))], [out], axis=-1)
    return out


def vit_block():
    tokens, dim, heads = 17, 64, 2
    head = dim // heads
    b = Builder(seed=11)
    r = b.rng

    def weight(k, n):
        return r.normal(0, 1 / np.sqrt(k), (k, n))

    ln1 = layer_norm(b, "x", "ln1", dim)
    # The three projections read one Q/DQ of the normalized tokens.
    xq, xf = b.fp8_qdq(ln1, amax=4.0)
    for p in ("q", "k", "v"):
        w = b.fp8_weight(p + "_W", weight(dim, dim))
        b.quantized("MatMul", [xq, w], [xf, w], [p + "_mm"])
        b.both("Add", [p + "_mm", b.constant(p + "_b", r.normal(0, 0.02, dim))], [p + "_lin"])
        b.both("Reshape", [p + "_lin", b.shape(p + "_shape", [1, tokens, heads, head])],
               [p + "_heads"])
    b.both("Transpose", ["q_heads"], ["q_t"], perm=[0, 2, 1, 3])
    b.both("Transpose", ["k_heads"], ["k_t"], perm=[0, 2, 3, 1])
    b.both("Transpose", ["v_heads"], ["v_t"], perm=[0, 2, 1, 3])
    # FP8 MHA: Q/DQ on both inputs of both attention MatMuls.
    qq, qf = b.fp8_qdq("q_t", amax=4.0)
    kq, kf = b.fp8_qdq("k_t", amax=4.0)
    b.quantized("MatMul", [qq, kq], [qf, kf], ["scores"])
    b.both("Mul", ["scores", b.constant("inv_sqrt_d", np.array(1 / np.sqrt(head)))],
           ["scores_scaled"])
    b.both("Softmax", ["scores_scaled"], ["probs"], axis=-1)
    pq, pf = b.fp8_qdq("probs", amax=1.0)
    vq, vf = b.fp8_qdq("v_t", amax=4.0)
    b.quantized("MatMul", [pq, vq], [pf, vf], ["context"])
    b.both("Transpose", ["context"], ["context_t"], perm=[0, 2, 1, 3])
    b.both("Reshape", ["context_t", b.shape("merge_shape", [1, tokens, dim])], ["context_m"])
    attn = b.fp8_matmul("context_m", weight(dim, dim), "attn_out", amax=4.0,
                        bias=r.normal(0, 0.02, dim))
    b.both("Add", ["x", attn], ["res1"])
    ln2 = layer_norm(b, "res1", "ln2", dim)
    fc1 = b.fp8_matmul(ln2, weight(dim, 2 * dim), "fc1", amax=4.0,
                       bias=r.normal(0, 0.02, 2 * dim))
    act = gelu(b, fc1, "gelu")
    fc2 = b.fp8_matmul(act, weight(2 * dim, dim), "fc2", amax=4.0,
                       bias=r.normal(0, 0.02, dim))
    b.both("Add", ["res1", fc2], ["y"])
    io = ([float_io("x", [1, tokens, dim])], [float_io("y", [1, tokens, dim])])
    return b.models("fp8_vit_block", *io, 19)


def conv(b, x, w, out, quantize, pads=1, amax=1.0):
    xq, xf = quantize(x, amax)
    name = out + "_W"
    wname = b.fp8_weight(name, w) if quantize == b.fp8_qdq else b.int8_weight(name, w)
    bias = b.constant(out + "_b", b.rng.normal(0, 0.02, w.shape[0]))
    b.quantized("Conv", [xq, wname, bias], [xf, wname, bias], [out],
                pads=[pads] * 4, kernel_shape=list(w.shape[2:]))
    return out


def conv_weight(b, cout, cin, k=3):
    return b.rng.normal(0, np.sqrt(2 / (cin * k * k)), (cout, cin, k, k))


def fp8_head(b, x):
    """GlobalAveragePool -> Flatten -> FP8 Q/DQ -> Gemm (FP8 weight) -> y."""
    b.both("GlobalAveragePool", [x], ["pool"])
    b.both("Flatten", ["pool"], ["flat"])
    fq, ff = b.fp8_qdq("flat", amax=3.0)
    w = b.fp8_weight("fc_W", b.rng.normal(0, 0.25, (10, 16)))
    bias = b.constant("fc_b", b.rng.normal(0, 0.02, 10))
    b.quantized("Gemm", [fq, w, bias], [ff, w, bias], ["y"], transB=1)


def cnn_residual():
    b = Builder(seed=12)
    c1 = conv(b, "x", conv_weight(b, 16, 8), "conv1", b.fp8_qdq)
    b.both("Relu", [c1], ["relu1"])
    c2 = conv(b, "relu1", conv_weight(b, 16, 16), "conv2", b.fp8_qdq, amax=3.0)
    b.both("Relu", [c2], ["relu2"])
    c3 = conv(b, "relu2", conv_weight(b, 16, 16), "conv3", b.fp8_qdq, amax=3.0)
    b.both("Add", [c3, "relu1"], ["res"])
    b.both("Relu", ["res"], ["relu3"])
    fp8_head(b, "relu3")
    io = ([float_io("x", [1, 8, 16, 16])], [float_io("y", [1, 10])])
    return b.models("fp8_cnn_residual", *io, 19)


def mixed_head():
    b = Builder(seed=13)
    c1 = conv(b, "x", conv_weight(b, 16, 8), "conv1", b.int8_qdq)
    b.both("Relu", [c1], ["relu1"])
    c2 = conv(b, "relu1", conv_weight(b, 16, 16), "conv2", b.int8_qdq, amax=3.0)
    b.both("Relu", [c2], ["relu2"])
    # The head is FP8; the Relu stays right before its Q.
    c3 = conv(b, "relu2", conv_weight(b, 16, 16), "conv3", b.fp8_qdq, amax=3.0)
    fp8_head(b, c3)
    io = ([float_io("x", [1, 8, 16, 16])], [float_io("y", [1, 10])])
    return b.models("mixed_int8_fp8_head", *io, 19)


def attention_decode():
    dim, heads, past = 256, 4, 16
    head = dim // heads
    b = Builder(seed=14)
    r = b.rng

    for p in ("q", "k", "v"):
        w = b.int4_weight(p + "_W", r.normal(0, 1 / 16, (dim, dim)))
        b.both("MatMul", ["x", w], [p + "_lin"])
        b.both("Reshape", [p + "_lin", b.shape(p + "_shape", [heads, 1, head])], [p + "_new"])
    b.both("Concat", ["past_k", "k_new"], ["keys"], axis=1)
    b.both("Concat", ["past_v", "v_new"], ["values"], axis=1)
    b.both("Transpose", ["keys"], ["keys_t"], perm=[0, 2, 1])
    b.both("MatMul", ["q_new", "keys_t"], ["scores"])
    b.both("Mul", ["scores", b.constant("inv_sqrt_d", np.array(1 / np.sqrt(head)))],
           ["scores_scaled"])
    b.both("Softmax", ["scores_scaled"], ["probs"], axis=-1)
    b.both("MatMul", ["probs", "values"], ["context"])
    b.both("Reshape", ["context", b.shape("merge_shape", [1, dim])], ["context_m"])
    w = b.int4_weight("o_W", r.normal(0, 1 / 16, (dim, dim)))
    b.both("MatMul", ["context_m", w], ["y"])
    io = ([float_io("x", [1, dim]), float_io("past_k", [heads, past, head]),
           float_io("past_v", [heads, past, head])],
          [float_io("y", [1, dim]), float_io("keys", [heads, past + 1, head]),
           float_io("values", [heads, past + 1, head])])
    return b.models("int4_attention_decode", *io, 21)


def mlp_fp16():
    b = Builder(seed=15, float_kind=FLOAT16)
    h = b.fp8_matmul("x", b.rng.normal(0, 1 / 8, (64, 64)), "h")
    b.both("Relu", [h], ["y"])
    io = ([helper.make_tensor_value_info("x", FLOAT16, [4, 64])],
          [helper.make_tensor_value_info("y", FLOAT16, [4, 64])])
    return b.models("fp8_mlp_fp16", *io, 19)


def nvfp4_weight(b, name, w, block=16):
    """Two-level NVFP4: E2M1 codes, an E4M3 scale per `block` rows of K and
    column, a float32 scale for those scales."""
    k, n = w.shape
    wb = w.reshape(k // block, block, n)
    amax = np.abs(wb).max(axis=1)                        # [k / block, n]
    block_scale = amax / max_finite(FLOAT4E2M1)          # what each block needs
    global_scale = np.float32(block_scale.max() / E4M3_MAX)
    scale_codes = encode_minifloat((block_scale / global_scale).astype(np.float32),
                                   FLOAT8E4M3FN)
    scales = (decode_array(scale_codes, FLOAT8E4M3FN) * global_scale).astype(np.float32)
    codes = encode_minifloat((wb / scales[:, None, :]).astype(np.float32), FLOAT4E2M1)
    deq = (decode_array(codes, FLOAT4E2M1) * scales[:, None, :]).astype(np.float32)
    b.q_inits += [minifloat_tensor(name + "_fp4", codes.reshape(k, n), FLOAT4E2M1),
                  minifloat_tensor(name + "_block_scale", scale_codes, FLOAT8E4M3FN),
                  float_tensor(name + "_global_scale", global_scale)]
    b.q_nodes += [
        helper.make_node("DequantizeLinear", [name + "_block_scale", name + "_global_scale"],
                         [name + "_scale"], name=name + "_scale_DequantizeLinear"),
        helper.make_node("DequantizeLinear", [name + "_fp4", name + "_scale"], [name],
                         name=name + "_DequantizeLinear", axis=0, block_size=block)]
    b.f_inits.append(float_tensor(name, deq.reshape(k, n)))
    return name


def nvfp4_mlp():
    b = Builder(seed=16)
    w1 = nvfp4_weight(b, "W1", b.rng.normal(0, 1 / 8, (64, 128)))
    b.both("MatMul", ["x", w1], ["h"])
    b.both("Relu", ["h"], ["h_relu"])
    w2 = nvfp4_weight(b, "W2", b.rng.normal(0, 1 / 11, (128, 64)))
    b.both("MatMul", ["h_relu", w2], ["y"])
    io = ([float_io("x", [4, 64])], [float_io("y", [4, 64])])
    return b.models("nvfp4_weight_mlp", *io, 23)


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        sys.exit("usage: gen_lowbit_networks.py OUTDIR")
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    for quantized, twin in (vit_block(), cnn_residual(), mixed_head(), attention_decode(),
                            mlp_fp16(), nvfp4_mlp()):
        for model, stem in ((quantized, quantized.graph.name + "_qdq"),
                            (twin, twin.graph.name)):
            path = os.path.join(outdir, stem + ".onnx")
            onnx.save(model, path)  # no onnx.checker: 1.12 rejects IR 9+ and types 17-23
            print(f"{path}  opset {model.opset_import[0].version}, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main(sys.argv)
