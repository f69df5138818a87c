//===- FloatMathKernels.h - One family's f32 loops -------------*- C++ -*-===//
//
// Private to lib/Kernels. Each family's file (scalar in FloatMath.cpp, AVX2,
// AVX-512) builds FloatMathBody.h's loops inside a namespace of its own and
// hands them to FloatMath.cpp's dispatch as one table.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_FLOATMATHKERNELS_H
#define QOPT_LIB_KERNELS_FLOATMATHKERNELS_H

#include <cstdint>

namespace qopt {
namespace kernels {
namespace floatmath {

struct Family {
  void (*erf)(const float *x, float *y, int64_t n);
  /// False (the row unspecified) when the row's max or sum is not finite.
  bool (*softmaxRow)(const float *x, float *y, int64_t n);
  void (*hardSigmoid)(const float *x, float *y, int64_t n, double alpha,
                      double beta);
  void (*hardSwish)(const float *x, float *y, int64_t n);
  /// s[j] = sum over p < k, in order, of a[p] * double(b[p * ldb + j]) for
  /// j < width (at most 32), terms with a[p] == 0 left out (the product of
  /// two floats is exact in double: one rounding per term, fused or not).
  void (*sumColumns)(const float *a, int64_t k, const float *b, int64_t ldb,
                     double *s, int64_t width);
  /// y = a b for a [rows, k] and b [k, n] in rows: each output the sum
  /// over p < k, in order, of every a[i][p] * double(b[p][j]) (a's zeros
  /// too: 0 * inf is NaN), rounded once to f32.
  void (*matmul)(const float *a, int64_t rows, int64_t k, const float *b,
                 int64_t n, float *y);
  /// sumColumns of b's values float(q[p * ldb + j]) * scale[j], each
  /// rounded to f32 as the multiply rounds it.
  void (*sumScaledColumns)(const float *a, int64_t k, const int8_t *q,
                           const float *scale, int64_t ldb, double *s,
                           int64_t width);
};

const Family &avx2Family();
const Family &avx512Family();

} // namespace floatmath
} // namespace kernels
} // namespace qopt

#endif // QOPT_LIB_KERNELS_FLOATMATHKERNELS_H
