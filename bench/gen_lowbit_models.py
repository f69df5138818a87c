#!/usr/bin/python3
"""Writes small ONNX models that use the quantized types newer than INT8
(INT4, UINT4, the four FLOAT8 types and FLOAT4E2M1), each with its fp32
twin, for testing that qopt reads, keeps and writes them.

These are the forms today's large-model quantizers export:

- int4_mlp_block128_qdq.onnx (opset 21): a two-layer MLP, x [1, 256] (one
  token, the decode shape) -> MatMul -> Relu -> MatMul -> y [1, 256]. Both
  weights are INT4 initializers behind DequantizeLinear with block-wise
  scales (axis=0, block_size=128: one float scale per 128 input rows of each
  output column) and no zero point: symmetric round-to-nearest (RTN)
  weight-only int4 for LLMs, as NVIDIA Model Optimizer's INT4 export and
  ONNX Runtime's 4-bit MatMul quantizer (QDQ format) write it.
  int4_mlp_block128_prefill_qdq.onnx is the same with x [128, 256] (prefill).
- int4_mlp_block128_zp_qdq.onnx: the same with UINT4 weights and a UINT4
  zero point of the scale's shape (asymmetric min/max, zero points near 8),
  the asymmetric form AWQ and RTN int4 exports with zero points use.
- int4_per_axis_qdq.onnx (opset 21): one MatMul whose INT4 weight [64, 32]
  has one scale per output column (per-axis, axis=1).
- fp8_e4m3_mlp_qdq.onnx (opset 19): Model Optimizer's FP8 recipe: the
  activation x [4, 64] goes through QuantizeLinear/DequantizeLinear with a
  FLOAT8E4M3FN zero point (scale = amax / 448), the weight is stored as a
  FLOAT8E4M3FN initializer [64, 64] behind DequantizeLinear with a per-tensor
  scale; then MatMul -> Relu.
- fp8_e5m2_qdq.onnx (opset 19): one Q/DQ pair in FLOAT8E5M2 on the input
  (saturate left at its default, 1) feeding an Add with a float constant.
- fp8_e4m3fnuz_qdq.onnx (opset 19): the same in FLOAT8E4M3FNUZ (the AMD
  encoding) with saturate=0 on the QuantizeLinear.
- fp4_e2m1_qdq.onnx (opset 23): a FLOAT4E2M1 weight [32, 16] (packed two to a
  byte, per-tensor scale) behind DequantizeLinear into MatMul with x [2, 32],
  the element type of NVFP4 (ONNX Runtime has no CPU kernel for it).

Each NAME_qdq.onnx has NAME_fp32.onnx beside it: the same graph with the Q/DQ
removed and the dequantized weights as float32 initializers, so the twin
computes what the quantized model approximates. Activation scales assume
inputs in [-1, 1] (amax = 1). Weights are random (numpy, seeded), so every
run writes the same bytes.

Debian's onnx 1.12 has no names for these types, so this script writes the
data type numbers and the packed raw bytes itself, with its own float32 ->
float8/float4 conversion (round to nearest even, saturating to the largest
finite value). onnx.checker of 1.12 is not run: it rejects IR versions past 8
("Your model ir_version is higher than the checker's") and knows no types past 16.

    /usr/bin/python3 bench/gen_lowbit_models.py OUTDIR
"""

import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

FLOAT = 1
FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ = 17, 18, 19, 20
UINT4, INT4, FLOAT4E2M1 = 21, 22, 23

# (exponent bits, mantissa bits, bias, special codes). 'fn': only all-ones
# (S.1111.111) is NaN; 'fnuz': 0x80 is the only NaN, no -0, no inf; 'ieee':
# top exponent is inf/NaN; 'none': every code is a finite number.
MINIFLOATS = {
    FLOAT8E4M3FN: (4, 3, 7, "fn"),
    FLOAT8E4M3FNUZ: (4, 3, 8, "fnuz"),
    FLOAT8E5M2: (5, 2, 15, "ieee"),
    FLOAT8E5M2FNUZ: (5, 2, 16, "fnuz"),
    FLOAT4E2M1: (2, 1, 1, "none"),
}

# IR version each opset first came with: 19 -> IR 9 (float8), 21 -> IR 10
# (int4/uint4), 23 -> IR 11 (float4e2m1).
IR_FOR_OPSET = {19: 9, 21: 10, 23: 11}


# --- float8 / float4 -------------------------------------------------------

def decode_minifloat(code, dtype):
    """The value of one code of a float8/float4 type (NaN and inf too)."""
    ebits, mbits, bias, kind = MINIFLOATS[dtype]
    width = 1 + ebits + mbits
    sign = -1.0 if code >> (width - 1) & 1 else 1.0
    exp = code >> mbits & ((1 << ebits) - 1)
    man = code & ((1 << mbits) - 1)
    magnitude = code & ((1 << (width - 1)) - 1)
    if kind == "fnuz" and code == 1 << (width - 1):
        return float("nan")
    if kind == "fn" and magnitude == (1 << (width - 1)) - 1:
        return float("nan")
    if kind == "ieee" and exp == (1 << ebits) - 1:
        return sign * float("inf") if man == 0 else float("nan")
    if exp == 0:
        return sign * man / (1 << mbits) * 2.0 ** (1 - bias)
    return sign * (1 + man / (1 << mbits)) * 2.0 ** (exp - bias)


def finite_magnitudes(dtype):
    """The non-negative finite values of a type, by code 0, 1, 2, ... (the
    positive codes are in increasing order, so the index is the code)."""
    ebits, mbits, _, _ = MINIFLOATS[dtype]
    values = []
    for code in range(1 << (ebits + mbits)):
        v = decode_minifloat(code, dtype)
        if not np.isfinite(v):
            break
        values.append(v)
    return np.array(values)


def max_finite(dtype):
    return finite_magnitudes(dtype)[-1]


def encode_minifloat(array, dtype):
    """float32 -> codes (uint8, one per element): round to nearest, ties to
    the even code (= even mantissa), values past the largest finite value
    saturate to it. Computed in float64 from the float32 values, so no
    double rounding."""
    ebits, mbits, _, kind = MINIFLOATS[dtype]
    sign_bit = 1 << (ebits + mbits)
    table = finite_magnitudes(dtype)
    flat = np.asarray(array, dtype=np.float32).astype(np.float64).ravel()
    if not np.all(np.isfinite(flat)):
        raise ValueError("encode_minifloat: NaN or inf in the input")
    codes = np.zeros(flat.size, dtype=np.uint8)
    for i, x in enumerate(flat):
        a = abs(x)
        hi = int(np.searchsorted(table, a))  # first value >= a
        if hi >= len(table):
            code = len(table) - 1  # saturate
        elif hi == 0 or table[hi] == a:
            code = hi
        else:
            lo = hi - 1
            below, above = a - table[lo], table[hi] - a
            code = lo if below < above or (below == above and lo % 2 == 0) else hi
        if np.signbit(x) and not (kind == "fnuz" and code == 0):  # fnuz has no -0
            code |= sign_bit
        codes[i] = code
    return codes.reshape(np.shape(array))


def decode_array(codes, dtype):
    codes_in_type = 16 if dtype == FLOAT4E2M1 else 256
    lut = np.array([decode_minifloat(c, dtype) for c in range(codes_in_type)], dtype=np.float32)
    return lut[np.asarray(codes, dtype=np.int64)]


# --- tensors ---------------------------------------------------------------

def pack_nibbles(codes):
    """4-bit codes (0..15) in row-major order, two to a byte: element 2k in
    the low nibble, 2k+1 in the high one; an odd count leaves the last high
    nibble 0."""
    flat = np.asarray(codes, dtype=np.uint8).ravel() & 0x0F
    if flat.size % 2:
        flat = np.append(flat, np.uint8(0))
    return (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8).tobytes()


def raw_tensor(name, data_type, shape, raw):
    t = onnx.TensorProto()
    t.name = name
    t.data_type = data_type
    t.dims.extend(shape)
    t.raw_data = bytes(raw)
    return t


def int4_tensor(name, values, signed):
    """INT4 (-8..7) or UINT4 (0..15) values as a packed initializer."""
    v = np.asarray(values, dtype=np.int64)
    lo, hi = (-8, 7) if signed else (0, 15)
    assert v.min() >= lo and v.max() <= hi, name
    return raw_tensor(name, INT4 if signed else UINT4, v.shape, pack_nibbles(v & 0x0F))


def minifloat_tensor(name, codes, dtype):
    """Float8 codes one byte each, FLOAT4E2M1 codes packed two to a byte."""
    codes = np.asarray(codes, dtype=np.uint8)
    raw = pack_nibbles(codes) if dtype == FLOAT4E2M1 else codes.tobytes()
    return raw_tensor(name, dtype, codes.shape, raw)


def float_tensor(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


# --- quantizers (round to nearest even, as QuantizeLinear) ------------------

def int4_blockwise(w, block, signed):
    """Blocks of `block` rows along axis 0 per column. Signed: symmetric,
    scale = amax / 7, no zero point. Unsigned: min/max, zero point 0..15.
    Returns (q, scale, zero_point or None, dequantized float32)."""
    rows, cols = w.shape
    wb = w.reshape(rows // block, block, cols)
    if signed:
        scale = (np.abs(wb).max(axis=1) / 7).astype(np.float32)
        zp = None
        q = np.clip(np.round(wb / scale[:, None, :]), -8, 7)
        deq = q * scale[:, None, :]
    else:
        lo = np.minimum(wb.min(axis=1), 0)
        hi = np.maximum(wb.max(axis=1), 0)
        scale = ((hi - lo) / 15).astype(np.float32)
        zp = np.clip(np.round(-lo / scale), 0, 15).astype(np.int64)
        q = np.clip(np.round(wb / scale[:, None, :]) + zp[:, None, :], 0, 15)
        deq = (q - zp[:, None, :]).astype(np.float32) * scale[:, None, :]
    return (q.astype(np.int64).reshape(rows, cols), scale, zp,
            deq.astype(np.float32).reshape(rows, cols))


def int4_per_column(w):
    scale = (np.abs(w).max(axis=0) / 7).astype(np.float32)
    q = np.clip(np.round(w / scale), -8, 7).astype(np.int64)
    return q, scale, (q.astype(np.float32) * scale).astype(np.float32)


def minifloat_per_tensor(w, dtype):
    """Per-tensor scale amax / max_finite; returns (codes, scale, deq)."""
    scale = np.float32(np.abs(w).max() / max_finite(dtype))
    codes = encode_minifloat((w / scale).astype(np.float32), dtype)
    return codes, scale, (decode_array(codes, dtype) * scale).astype(np.float32)


# --- graphs ----------------------------------------------------------------

def make_model(name, nodes, inputs, outputs, initializers, opset):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    model = helper.make_model(graph, producer_name="qopt gen_lowbit_models.py",
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = IR_FOR_OPSET[opset]
    return model


def float_io(name, shape):
    return helper.make_tensor_value_info(name, FLOAT, shape)


def mlp_pair(name, x_rows, zero_point, seed):
    """int4_mlp_block128*: x [M, 256] -> 256x512 -> Relu -> 512x256."""
    rng = np.random.default_rng(seed)
    w1 = rng.normal(0, 1 / 16, (256, 512)).astype(np.float32)
    w2 = rng.normal(0, 1 / np.sqrt(512), (512, 256)).astype(np.float32)
    signed = not zero_point
    q_inits, f_inits, q_nodes = [], [], []
    weights = {}
    for wname, w in (("W1", w1), ("W2", w2)):
        q, scale, zp, deq = int4_blockwise(w, 128, signed)
        q_inits += [int4_tensor(wname + "_q", q, signed), float_tensor(wname + "_scale", scale)]
        dq_inputs = [wname + "_q", wname + "_scale"]
        if zp is not None:
            q_inits.append(int4_tensor(wname + "_zero_point", zp, signed=False))
            dq_inputs.append(wname + "_zero_point")
        q_nodes.append(helper.make_node("DequantizeLinear", dq_inputs, [wname],
                                        name=wname + "_DequantizeLinear", axis=0, block_size=128))
        f_inits.append(float_tensor(wname, deq))
        weights[wname] = deq
    body = [helper.make_node("MatMul", ["x", "W1"], ["h"], name="MatMul_1"),
            helper.make_node("Relu", ["h"], ["h_relu"], name="Relu_1"),
            helper.make_node("MatMul", ["h_relu", "W2"], ["y"], name="MatMul_2")]
    io = ([float_io("x", [x_rows, 256])], [float_io("y", [x_rows, 256])])
    return (make_model(name, q_nodes + body, *io, q_inits, 21),
            make_model(name + "_fp32", body, *io, f_inits, 21))


def int4_per_axis_pair(seed):
    rng = np.random.default_rng(seed)
    w = rng.normal(0, 1 / 8, (64, 32)).astype(np.float32)
    q, scale, deq = int4_per_column(w)
    dq = helper.make_node("DequantizeLinear", ["W_q", "W_scale"], ["W"],
                          name="W_DequantizeLinear", axis=1)
    mm = helper.make_node("MatMul", ["x", "W"], ["y"], name="MatMul")
    io = ([float_io("x", [4, 64])], [float_io("y", [4, 32])])
    return (make_model("int4_per_axis", [dq, mm], *io,
                       [int4_tensor("W_q", q, True), float_tensor("W_scale", scale)], 21),
            make_model("int4_per_axis_fp32", [mm], *io, [float_tensor("W", deq)], 21))


def fp8_zero_point(name, dtype):
    return raw_tensor(name, dtype, [], b"\x00")  # +0 in every float8 type


def fp8_mlp_pair(seed):
    """ModelOpt FP8: Q/DQ on the activation, fp8 weight behind DQ, MatMul, Relu."""
    rng = np.random.default_rng(seed)
    w = rng.normal(0, 1 / 8, (64, 64)).astype(np.float32)
    codes, w_scale, deq = minifloat_per_tensor(w, FLOAT8E4M3FN)
    x_scale = np.float32(1.0 / 448)  # amax 1 / 448
    q_inits = [float_tensor("x_scale", x_scale), fp8_zero_point("x_zero_point", FLOAT8E4M3FN),
               minifloat_tensor("W_fp8", codes, FLOAT8E4M3FN), float_tensor("W_scale", w_scale),
               fp8_zero_point("W_zero_point", FLOAT8E4M3FN)]
    q_nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero_point"], ["x_q"],
                         name="x_QuantizeLinear"),
        helper.make_node("DequantizeLinear", ["x_q", "x_scale", "x_zero_point"], ["x_dq"],
                         name="x_DequantizeLinear"),
        helper.make_node("DequantizeLinear", ["W_fp8", "W_scale", "W_zero_point"], ["W"],
                         name="W_DequantizeLinear"),
        helper.make_node("MatMul", ["x_dq", "W"], ["h"], name="MatMul"),
    ]
    relu = helper.make_node("Relu", ["h"], ["y"], name="Relu")
    float_matmul = helper.make_node("MatMul", ["x", "W"], ["h"], name="MatMul")
    io = ([float_io("x", [4, 64])], [float_io("y", [4, 64])])
    return (make_model("fp8_e4m3_mlp", q_nodes + [relu], *io, q_inits, 19),
            make_model("fp8_e4m3_mlp_fp32", [float_matmul, relu], *io,
                       [float_tensor("W", deq)], 19))


def fp8_add_pair(name, dtype, saturate, seed):
    """One float8 Q/DQ pair on the input feeding Add(., constant)."""
    rng = np.random.default_rng(seed)
    bias = rng.normal(0, 1, (64,)).astype(np.float32)
    scale = np.float32(1.0 / max_finite(dtype))  # amax 1
    q_attrs = {} if saturate is None else {"saturate": saturate}
    q_nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero_point"], ["x_q"],
                         name="x_QuantizeLinear", **q_attrs),
        helper.make_node("DequantizeLinear", ["x_q", "x_scale", "x_zero_point"], ["x_dq"],
                         name="x_DequantizeLinear"),
        helper.make_node("Add", ["x_dq", "bias"], ["y"], name="Add"),
    ]
    add = helper.make_node("Add", ["x", "bias"], ["y"], name="Add")
    io = ([float_io("x", [4, 64])], [float_io("y", [4, 64])])
    return (make_model(name, q_nodes, *io, [float_tensor("x_scale", scale),
                                            fp8_zero_point("x_zero_point", dtype),
                                            float_tensor("bias", bias)], 19),
            make_model(name + "_fp32", [add], *io, [float_tensor("bias", bias)], 19))


def fp4_pair(seed):
    rng = np.random.default_rng(seed)
    w = rng.normal(0, 1 / 6, (32, 16)).astype(np.float32)
    codes, scale, deq = minifloat_per_tensor(w, FLOAT4E2M1)
    dq = helper.make_node("DequantizeLinear", ["W_fp4", "W_scale"], ["W"],
                          name="W_DequantizeLinear")
    mm = helper.make_node("MatMul", ["x", "W"], ["y"], name="MatMul")
    io = ([float_io("x", [2, 32])], [float_io("y", [2, 16])])
    inits = [minifloat_tensor("W_fp4", codes, FLOAT4E2M1), float_tensor("W_scale", scale)]
    return (make_model("fp4_e2m1", [dq, mm], *io, inits, 23),
            make_model("fp4_e2m1_fp32", [mm], *io, [float_tensor("W", deq)], 23))


def all_models():
    """(file stem without _qdq, quantized model, fp32 twin)."""
    yield ("int4_mlp_block128",) + mlp_pair("int4_mlp_block128", 1, False, seed=1)
    yield ("int4_mlp_block128_prefill",) + mlp_pair("int4_mlp_block128_prefill", 128, False, seed=1)
    yield ("int4_mlp_block128_zp",) + mlp_pair("int4_mlp_block128_zp", 1, True, seed=2)
    yield ("int4_per_axis",) + int4_per_axis_pair(seed=3)
    yield ("fp8_e4m3_mlp",) + fp8_mlp_pair(seed=4)
    yield ("fp8_e5m2",) + fp8_add_pair("fp8_e5m2", FLOAT8E5M2, None, seed=5)
    yield ("fp8_e4m3fnuz",) + fp8_add_pair("fp8_e4m3fnuz", FLOAT8E4M3FNUZ, 0, seed=6)
    yield ("fp4_e2m1",) + fp4_pair(seed=7)


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        sys.exit("usage: gen_lowbit_models.py OUTDIR")
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    for stem, quantized, twin in all_models():
        for suffix, model in (("_qdq", quantized), ("_fp32", twin)):
            path = os.path.join(outdir, stem + suffix + ".onnx")
            onnx.save(model, path)  # no onnx.checker: 1.12 rejects IR 9+ and types 17-23
            print(f"{path}  opset {model.opset_import[0].version}, IR {model.ir_version}, "
                  f"{os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main(sys.argv)
