//===- FloatMath.cpp - The f32 loops: dispatch, the scalar family --------===//
//
// Built with -ffp-contract=off (FloatMathBody.h says why). A softmax row
// the f32 loop declines (a max or sum that is not finite) is computed in
// double, as the reference kernel does.
//
//===----------------------------------------------------------------------===//

#include "qopt/Kernels/FloatMath.h"

#include "FloatMathKernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace qopt {
namespace kernels {
namespace floatmath {
namespace scalar {
#include "FloatMathBody.h"
} // namespace scalar
} // namespace floatmath
} // namespace kernels
} // namespace qopt

using namespace qopt;
using namespace qopt::kernels;

namespace {
const floatmath::Family &familyFor(Isa isa) {
  if (isa == Isa::Avx512Vnni || isa == Isa::Amx)
    return floatmath::avx512Family();
  if (isa == Isa::Avx2 || isa == Isa::AvxVnni)
    return floatmath::avx2Family();
  return floatmath::scalar::kFamily;
}

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

void kernels::erfFloats(Isa isa, const float *x, float *y, int64_t n) {
  familyFor(isa).erf(x, y, n);
}

void kernels::softmaxRows(Isa isa, const float *x, float *y, int64_t rows,
                          int64_t n) {
  auto row = familyFor(isa).softmaxRow;
  for (int64_t r = 0; r < rows; ++r, x += n, y += n)
    if (!row(x, y, n))
      softmaxRowInDouble(x, y, n);
}

void kernels::hardSigmoidFloats(Isa isa, const float *x, float *y, int64_t n,
                                double alpha, double beta) {
  familyFor(isa).hardSigmoid(x, y, n, alpha, beta);
}

void kernels::hardSwishFloats(Isa isa, const float *x, float *y, int64_t n) {
  familyFor(isa).hardSwish(x, y, n);
}

namespace {
/// gemmColumns' loop over rows and panels; sumPanel(i, j0, width, sums)
/// sums row i of a against the panel of columns [j0, j0 + width).
template <typename SumPanel>
void eachPanel(int64_t m, int64_t n, int64_t begin, int64_t end, double alpha,
               const double *betaC, float *y, SumPanel sumPanel) {
  constexpr int64_t kBlock = kGemmPanelColumns;
  double sums[kBlock];
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j0 = begin; j0 < end; j0 += kBlock) {
      // The panel of columns [j0, j0 + width): k rows of width values, of
      // which the first `count` are asked for.
      int64_t width = std::min(kBlock, n - j0);
      int64_t count = std::min(width, end - j0);
      sumPanel(i, j0, width, sums, count);
      for (int64_t j = 0; j < count; ++j) {
        double v = sums[j] * alpha;
        if (betaC)
          v += betaC[j0 + j];
        y[i * n + j0 + j] = float(v);
      }
    }
}
} // namespace

void kernels::gemmColumns(Isa isa, const float *a, int64_t m, int64_t k,
                          const float *b, int64_t n, int64_t begin, int64_t end,
                          double alpha, const double *betaC, float *y) {
  auto sumColumns = familyFor(isa).sumColumns;
  eachPanel(
      m, n, begin, end, alpha, betaC, y,
      [&](int64_t i, int64_t j0, int64_t width, double *sums, int64_t count) {
        sumColumns(a + i * k, k, b + j0 * k, width, sums, count);
      });
}

void kernels::gemmScaledColumns(Isa isa, const float *a, int64_t m, int64_t k,
                                const int8_t *q, const float *scales, int64_t n,
                                int64_t begin, int64_t end, double alpha,
                                const double *betaC, float *y) {
  auto sumScaledColumns = familyFor(isa).sumScaledColumns;
  eachPanel(
      m, n, begin, end, alpha, betaC, y,
      [&](int64_t i, int64_t j0, int64_t width, double *sums, int64_t count) {
        sumScaledColumns(a + i * k, k, q + j0 * k, scales + j0, width, sums,
                         count);
      });
}

void kernels::matmulRows(Isa isa, const float *a, const float *b, int64_t k,
                         int64_t n, int64_t rowBegin, int64_t rowEnd,
                         float *y) {
  if (rowBegin < rowEnd)
    familyFor(isa).matmul(a + rowBegin * k, rowEnd - rowBegin, k, b, n,
                          y + rowBegin * n);
}

float kernels::int8ScaleOf(int64_t count,
                           llvm::function_ref<float(int64_t)> value) {
  auto bitsOf = [](float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    return bits;
  };
  float largest = 0;
  for (int64_t i = 0; i < count; ++i) {
    float v = value(i);
    if (!std::isfinite(v))
      return 0;
    largest = std::max(largest, std::fabs(v));
  }
  // Every value float(q) * s, q = nearbyint(v / s) in [-128, 127] (a -0
  // is not: float(0) * s is +0).
  auto holdsAll = [&](float s) {
    for (int64_t i = 0; i < count; ++i) {
      float v = value(i);
      float q = std::nearbyint(v / s); // int8ValueOf, range checked first
      if (!(q >= -128 && q <= 127) ||
          bitsOf(float(int8ValueOf(v, s)) * s) != bitsOf(v))
        return false;
    }
    return true;
  };
  if (largest == 0) // all zeros: q = 0 (+0 only)
    return holdsAll(1.0f) ? 1.0f : 0.0f;
  for (int top = 128; top >= 1; --top) {
    float guess = largest / float(top);
    float s = std::nextafter(std::nextafter(guess, 0.0f), 0.0f);
    for (int step = 0; step < 5; ++step, s = std::nextafter(s, INFINITY))
      if (std::isnormal(s) && float(top) * s == largest && holdsAll(s))
        return s;
  }
  return 0;
}
