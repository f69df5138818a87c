//===- Int4DotGemm.h - 4-bit weights by int8-quantized rows -----*- C++ -*-===//
//
// The faster, lossy form of the weight-only 4-bit GEMM (qopt/Kernels/
// Int4Gemm.h), the arithmetic of ONNX Runtime's MatMulNBits at
// accuracy_level 4: each row of x is quantized to int8 per segment of K
// (symmetric: scale sx = amax / 127, round to nearest even), multiplied by
// the 4-bit codes in integers (AVX-512 VNNI's vpdpbusd, 64 products an
// instruction), and each segment's integer sums become float once:
//
//   y = fma(fma(-z', float(sum xq), float(sum xq * u)), s * sx, y)
//
// per segment in K order, u the code as unsigned (int4: q + 8) and z' its
// zero point (int4: z + 8). A segment is 128 rows of K, or the weight's
// block where the block is not a multiple of 128. Deterministic (the same
// bits on every ISA, thread count and row count), but not the
// DequantizeLinear's function: x is rounded to 8 bits, a relative error
// near 2^-9 of each segment's largest |x|. A NaN or infinity in a segment
// of x makes its row's results NaN.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_KERNELS_INT4DOTGEMM_H
#define QOPT_KERNELS_INT4DOTGEMM_H

#include "qopt/Kernels/CpuFeatures.h"
#include "qopt/Kernels/Int4Weights.h"

namespace qopt {
namespace kernels {

/// Bytes `rows` rows of x take quantized.
size_t int4DotGemmRowsBytes(const Int4DotWeights &w, int64_t rows);

/// Rounds `rows` rows of x (k floats each) to int8 per segment into
/// `quantizedRows` (int4DotGemmRowsBytes, 64-byte aligned): once for all
/// the panels a call or many calls then multiply.
void int4DotGemmQuantizeRows(const float *x, int64_t rows,
                             const Int4DotWeights &w, void *quantizedRows);

/// y[r][j] for r < rows and the columns of panels [panelBegin, panelEnd);
/// y rows of n floats. AVX-512 VNNI (and AMX) machines run the integer
/// kernel, others its scalar form.
void int4DotGemm(Isa isa, const void *quantizedRows, int64_t rows,
                 const Int4DotWeights &w, int64_t panelBegin, int64_t panelEnd,
                 float *y);

} // namespace kernels
} // namespace qopt

#endif // QOPT_KERNELS_INT4DOTGEMM_H
