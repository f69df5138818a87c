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

#include <cstdint>

namespace qopt {
namespace rt {

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

} // namespace rt
} // namespace qopt

#endif // QOPT_KERNELS_FLOATMATH_H
