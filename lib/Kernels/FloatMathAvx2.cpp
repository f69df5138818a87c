//===- FloatMathAvx2.cpp - f32 erf and softmax, the Avx2 family
//-------------===//
//
// FloatMathBody.h's loops built for this family (and called only where
// CPUID finds it), with -ffp-contract=off.
//
//===----------------------------------------------------------------------===//

#include <cstdint>

namespace qopt {
namespace rt {
namespace floatmath {
namespace avx2 {
#include "FloatMathBody.h"
} // namespace avx2

void avx2Erf(const float *x, float *y, int64_t n) { avx2::erfLoop(x, y, n); }
bool avx2SoftmaxRow(const float *x, float *y, int64_t n) {
  return avx2::softmaxRow(x, y, n);
}
void avx2HardSigmoid(const float *x, float *y, int64_t n, double alpha,
                     double beta) {
  avx2::hardSigmoidLoop(x, y, n, alpha, beta);
}
void avx2HardSwish(const float *x, float *y, int64_t n) {
  avx2::hardSwishLoop(x, y, n);
}
} // namespace floatmath
} // namespace rt
} // namespace qopt
