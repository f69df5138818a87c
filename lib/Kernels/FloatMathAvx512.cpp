//===- FloatMathAvx512.cpp - f32 erf and softmax, the Avx512 family
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
namespace avx512 {
#include "FloatMathBody.h"
} // namespace avx512

void avx512Erf(const float *x, float *y, int64_t n) {
  avx512::erfLoop(x, y, n);
}
bool avx512SoftmaxRow(const float *x, float *y, int64_t n) {
  return avx512::softmaxRow(x, y, n);
}
void avx512HardSigmoid(const float *x, float *y, int64_t n, double alpha,
                       double beta) {
  avx512::hardSigmoidLoop(x, y, n, alpha, beta);
}
void avx512HardSwish(const float *x, float *y, int64_t n) {
  avx512::hardSwishLoop(x, y, n);
}
} // namespace floatmath
} // namespace rt
} // namespace qopt
