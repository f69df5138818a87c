//===- Int4Gemm.h - Weight-only 4-bit GEMM ----------------------*- C++ -*-===//
//
// y = x w for f32 rows x [rows, K] and a constant 4-bit weight w [K, N] on a
// block-wise grid (ONNX's DequantizeLinear with axis 0 and block_size B:
// one scale, and a zero point or none, per B rows of each column; per-axis
// and per-tensor are B = K). The form LLM weight-only quantizers (RTN, AWQ,
// NVIDIA Model Optimizer's INT4) export.
//
// Every output is the chain acc = fma(x[r][k], w[k][j], acc) over k in
// order from acc = 0, with w[k][j] = float(q - z) * s in f32 (what the
// DequantizeLinear computes): the same bits on every ISA, thread count and
// row count. The codes stay 4-bit in memory (two a byte), so one token
// (decode) reads half a byte per multiply-add.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_KERNELS_INT4GEMM_H
#define QOPT_KERNELS_INT4GEMM_H

#include "qopt/Kernels/CpuFeatures.h"
#include "qopt/Kernels/Int4Weights.h"

namespace qopt {
namespace kernels {

/// f32 scratch a call with `rows` rows needs (one panel's weights as f32
/// when rows are many enough to reuse them).
size_t int4GemmScratchBytes(const Int4Weights &w, int64_t rows);

/// y[r][j] for r < rows and the columns of panels [panelBegin, panelEnd);
/// x and y rows of k and n floats.
void int4Gemm(Isa isa, const float *x, int64_t rows, const Int4Weights &w,
              int64_t panelBegin, int64_t panelEnd, float *y, float *scratch);

} // namespace kernels
} // namespace qopt

#endif // QOPT_KERNELS_INT4GEMM_H
