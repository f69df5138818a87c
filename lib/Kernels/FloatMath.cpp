//===- FloatMath.cpp - f32 erf and softmax: dispatch and the scalar family
//-===//
//
// Built with -ffp-contract=off (FloatMathBody.h says why). A softmax row
// the f32 loop declines (a max or sum that is not finite) is computed in
// double, as the reference kernel does.
//
//===----------------------------------------------------------------------===//

#include "qopt/Kernels/FloatMath.h"

#include <cmath>
#include <cstring>

namespace qopt {
namespace rt {
namespace floatmath {
namespace scalar {
#include "FloatMathBody.h"
} // namespace scalar
void avx2Erf(const float *x, float *y, int64_t n);
bool avx2SoftmaxRow(const float *x, float *y, int64_t n);
void avx512Erf(const float *x, float *y, int64_t n);
bool avx512SoftmaxRow(const float *x, float *y, int64_t n);
void avx2HardSigmoid(const float *x, float *y, int64_t n, double alpha,
                     double beta);
void avx512HardSigmoid(const float *x, float *y, int64_t n, double alpha,
                       double beta);
void avx2HardSwish(const float *x, float *y, int64_t n);
void avx512HardSwish(const float *x, float *y, int64_t n);
} // namespace floatmath
} // namespace rt
} // namespace qopt

using namespace qopt;
using namespace qopt::rt;

namespace {
bool hasAvx512(Isa isa) { return isa == Isa::Avx512Vnni || isa == Isa::Amx; }
bool hasAvx2(Isa isa) { return isa == Isa::Avx2 || isa == Isa::AvxVnni; }

/// The reference kernel's arithmetic for one row: double throughout.
void softmaxRowInDouble(const float *x, float *y, int64_t n) {
  double max = -INFINITY;
  for (int64_t i = 0; i < n; ++i)
    max = std::max(max, double(x[i]));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += std::exp(double(x[i]) - max);
  for (int64_t i = 0; i < n; ++i)
    y[i] = float(std::exp(double(x[i]) - max) / sum);
}
} // namespace

void rt::erfFloats(Isa isa, const float *x, float *y, int64_t n) {
  if (hasAvx512(isa))
    return floatmath::avx512Erf(x, y, n);
  if (hasAvx2(isa))
    return floatmath::avx2Erf(x, y, n);
  floatmath::scalar::erfLoop(x, y, n);
}

void rt::softmaxRows(Isa isa, const float *x, float *y, int64_t rows,
                     int64_t n) {
  auto row = hasAvx512(isa) ? floatmath::avx512SoftmaxRow
             : hasAvx2(isa) ? floatmath::avx2SoftmaxRow
                            : floatmath::scalar::softmaxRow;
  for (int64_t r = 0; r < rows; ++r, x += n, y += n)
    if (!row(x, y, n))
      softmaxRowInDouble(x, y, n);
}

void rt::hardSigmoidFloats(Isa isa, const float *x, float *y, int64_t n,
                           double alpha, double beta) {
  if (hasAvx512(isa))
    return floatmath::avx512HardSigmoid(x, y, n, alpha, beta);
  if (hasAvx2(isa))
    return floatmath::avx2HardSigmoid(x, y, n, alpha, beta);
  floatmath::scalar::hardSigmoidLoop(x, y, n, alpha, beta);
}

void rt::hardSwishFloats(Isa isa, const float *x, float *y, int64_t n) {
  if (hasAvx512(isa))
    return floatmath::avx512HardSwish(x, y, n);
  if (hasAvx2(isa))
    return floatmath::avx2HardSwish(x, y, n);
  floatmath::scalar::hardSwishLoop(x, y, n);
}
