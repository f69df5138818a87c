#!/usr/bin/python3
"""Writes an LLM-sized INT4 weight-only MLP block in two forms, for timing
qopt's plan against ONNX Runtime's best case:

- int4_llm_mlp_{decode,prefill}_qdq.onnx (opset 21): x [M, D] -> MatMul W1
  [D, D] -> Relu -> MatMul W2 [D, D] -> y, each weight an INT4 initializer
  behind DequantizeLinear with block-wise scales (axis 0, block 128, no zero
  point): symmetric RTN int4, as NVIDIA Model Optimizer and ONNX Runtime's
  4-bit quantizer write the QDQ form.
- int4_llm_mlp_{decode,prefill}_nbits.onnx: the same weights and scales in
  ONNX Runtime's own com.microsoft.MatMulNBits (bits 4, block_size 128, the
  default zero point 8 for the unsigned codes q + 8), the form ONNX
  Runtime's 4-bit kernels (MLAS SQNBitGemm) run; accuracy_level 0 (float
  compute, what the QDQ form means) and, as *_nbits_acc4.onnx, 4 (the
  activation quantized to int8 per block: faster, and a different function).

decode is M = 1 (one token: reading the weights is the cost), prefill M = 128.
D is 4096 unless --width says otherwise. Random weights (seeded).

    /usr/bin/python3 bench/gen_int4_llm_models.py OUTDIR [--width D]
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_lowbit_models import (float_io, float_tensor, int4_blockwise,  # noqa: E402
                               int4_tensor, make_model)

BLOCK = 128


def nbits_weight(name, q, scale):
    """MatMulNBits' B [N, K / 128, 64] (uint8, two codes a byte along K, low
    nibble first) and scales [N * K / 128] for a [K, N] int4 weight."""
    k, n = q.shape
    codes = (q.T + 8).astype(np.uint8).reshape(n, k // BLOCK, BLOCK)
    packed = codes[:, :, 0::2] | (codes[:, :, 1::2] << 4)
    b = onnx.numpy_helper.from_array(packed.astype(np.uint8), name + "_B")
    s = float_tensor(name + "_scales", scale.T.reshape(-1))
    return b, s


def models(rows, width, seed):
    rng = np.random.default_rng(seed)
    weights = [rng.normal(0, 1 / np.sqrt(width), (width, width)).astype(np.float32)
               for _ in range(2)]
    qdq_inits, qdq_nodes, nb_inits = [], [], []
    for i, w in enumerate(weights, 1):
        q, scale, _, _ = int4_blockwise(w, BLOCK, signed=True)
        qdq_inits += [int4_tensor(f"W{i}_q", q, True), float_tensor(f"W{i}_scale", scale)]
        qdq_nodes.append(helper.make_node(
            "DequantizeLinear", [f"W{i}_q", f"W{i}_scale"], [f"W{i}"],
            name=f"W{i}_DequantizeLinear", axis=0, block_size=BLOCK))
        nb_inits += list(nbits_weight(f"W{i}", q, scale))
    body = [helper.make_node("MatMul", ["x", "W1"], ["h"], name="MatMul_1"),
            helper.make_node("Relu", ["h"], ["h_relu"], name="Relu_1"),
            helper.make_node("MatMul", ["h_relu", "W2"], ["y"], name="MatMul_2")]
    io = ([float_io("x", [rows, width])], [float_io("y", [rows, width])])
    qdq = make_model("int4_llm_mlp", qdq_nodes + body, *io, qdq_inits, 21)

    def nbits(level):
        nodes = []
        for i, (a, out) in enumerate((("x", "h"), ("h_relu", "y")), 1):
            nodes.append(helper.make_node(
                "MatMulNBits", [a, f"W{i}_B", f"W{i}_scales"], [out],
                name=f"MatMulNBits_{i}", domain="com.microsoft", K=width, N=width,
                bits=4, block_size=BLOCK, accuracy_level=level))
            if i == 1:
                nodes.append(body[1])
        graph = helper.make_graph(nodes, "int4_llm_mlp_nbits", *io, nb_inits)
        m = helper.make_model(graph, producer_name="qopt gen_int4_llm_models.py",
                              opset_imports=[helper.make_opsetid("", 21),
                                             helper.make_opsetid("com.microsoft", 1)])
        m.ir_version = qdq.ir_version
        return m

    return qdq, nbits(0), nbits(4)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--width", type=int, default=4096)
    args = ap.parse_args()
    if args.width % BLOCK:
        sys.exit(f"--width must be a multiple of {BLOCK}")
    os.makedirs(args.outdir, exist_ok=True)
    for shape, rows in (("decode", 1), ("prefill", 128)):
        qdq, acc0, acc4 = models(rows, args.width, seed=11)
        for suffix, m in (("_qdq", qdq), ("_nbits", acc0), ("_nbits_acc4", acc4)):
            path = os.path.join(args.outdir, f"int4_llm_mlp_{shape}{suffix}.onnx")
            onnx.save(m, path)
            print(f"{path}  {os.path.getsize(path) / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
