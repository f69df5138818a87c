//===- FloatMath.h - f32 vector kernels of float islands --------*- C++ -*-===//
//
// The float ops transformers, ConvNeXt and MobileNetV3 run between their
// int8 units: Erf and Softmax in f32 (the reference interpreter's kernels
// compute in double and stay the reference), HardSigmoid and HardSwish in
// the reference's own double arithmetic (its bits). Vectorized where CPUID
// finds AVX2 or AVX-512, one C++ source for every family built without
// contracting multiplies and adds, so every family gives the same bits.
//
//   erf      x * P(x^2) for |x| <= 0.85; 1 - e^(-x^2 + R(x)) up to 4; +-1
//            beyond.
//            Within 2 f32 ulp of the double erf rounded to f32 (sampled at
//            every 2^-16 in [-5, 5], FloatMathTest).
//   softmax  each row: e^(x - max) (a Cephes-style exp, within 1 ulp of
//            e^ of the f32 difference), the sum in 16 f32 partial sums, each
//            e divided by the sum: within 4 ulp of the double softmax where
//            it is over 1e-3 (below, x - max rounded to f32 costs up to 2^-24
//            of |x - max| relative, 2e-6 at e^-60). A row
//            whose max or sum is not finite (an infinity or NaN in it) is
//            computed in double as the reference does.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_KERNELS_FLOATMATH_H
#define QOPT_KERNELS_FLOATMATH_H

#include "qopt/Kernels/CpuFeatures.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <cstdint>

namespace qopt {
namespace kernels {

/// y[i] = erf(x[i]) for i < n.
void erfFloats(Isa isa, const float *x, float *y, int64_t n);

/// Softmax of `rows` contiguous rows of `n` elements each.
void softmaxRows(Isa isa, const float *x, float *y, int64_t rows, int64_t n);

/// y[i] = HardSigmoid(x[i]) and HardSwish(x[i]) as the reference computes
/// them (ActivationMath.h: in double, rounded once): its bits, vectorized.
void hardSigmoidFloats(Isa isa, const float *x, float *y, int64_t n,
                       double alpha, double beta);
void hardSwishFloats(Isa isa, const float *x, float *y, int64_t n);

/// Columns of b a panel of gemmColumns holds.
constexpr int64_t kGemmPanelColumns = 32;

/// Columns [begin, end) of y = alpha * a b + betaC (begin a multiple of
/// kGemmPanelColumns), as the reference's Gemm computes them (its bits):
/// each output a double sum over k in order, skipping a's zeros (0 * inf is
/// not taken), times alpha, plus betaC[j] (beta * C[j], exact in double;
/// null for none), rounded once to f32. a is [m, k] in rows; b [k, n] in
/// panels: columns [j, j + w) (j a multiple of kGemmPanelColumns, w the
/// panel's width, kGemmPanelColumns but for the last) at b + j * k, k rows
/// of w floats, read from start to end.
void gemmColumns(Isa isa, const float *a, int64_t m, int64_t k, const float *b,
                 int64_t n, int64_t begin, int64_t end, double alpha,
                 const double *betaC, float *y);

/// gemmColumns on b stored as int8 values q (in its panels) and a scale per
/// column: b[p][j] = float(q[p][j]) * scales[j], the f32 product, rebuilt
/// as it is read. The same bits as gemmColumns on those floats, from a
/// quarter of the memory (a weight-only fake-quantized layer's weights,
/// which a dequantize folded to floats; int8ScaleOf finds the scales).
void gemmScaledColumns(Isa isa, const float *a, int64_t m, int64_t k,
                       const int8_t *q, const float *scales, int64_t n,
                       int64_t begin, int64_t end, double alpha,
                       const double *betaC, float *y);

/// Rows [rowBegin, rowEnd) of y = a b for a [m, k] and b [k, n] in rows
/// (y [m, n] too), as a matrix product defines each output: a double sum
/// over k in order of every term (0 * inf is NaN), rounded once to f32.
/// The reference's MatMul sums in double in its own blocked order; the two
/// give the same f32 but where a double sum falls within a few double ulp
/// of the midpoint of two floats (one f32 ulp apart then).
void matmulRows(Isa isa, const float *a, const float *b, int64_t k, int64_t n,
                int64_t rowBegin, int64_t rowEnd, float *y);

/// The scale s with value(i) == float(q) * s bit for bit for an int8 q,
/// for each i < count, or 0 for none (a value not finite, a -0, values
/// that no int8 grid holds exactly). Tried: the scales that put the
/// largest magnitude at |q| = 128, 127, ..., 1, within 2 ulp of its
/// quotient.
float int8ScaleOf(int64_t count, llvm::function_ref<float(int64_t)> value);
/// The int8 q of a value on int8ScaleOf's grid: nearbyint(v / scale).
inline int8_t int8ValueOf(float v, float scale) {
  return int8_t(std::nearbyint(v / scale));
}

} // namespace kernels
} // namespace qopt

#endif // QOPT_KERNELS_FLOATMATH_H
