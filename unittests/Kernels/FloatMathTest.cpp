//===- FloatMathTest.cpp - f32 erf and softmax on every family ------------===//

#include "qopt/Kernels/FloatMath.h"
#include "qopt/Kernels/ActivationMath.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace qopt;
using namespace qopt::kernels;

namespace {

/// Distance in f32 steps between two finite floats of one sign or zero.
int64_t ulpDistance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0)
    ia = std::numeric_limits<int32_t>::min() - ia;
  if (ib < 0)
    ib = std::numeric_limits<int32_t>::min() - ib;
  return std::abs(int64_t(ia) - int64_t(ib));
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// The reference's Gemm of a [m, k] and b [k, n]: each output a double sum
/// over k in order, a's zeros skipped (so 0 * inf is not taken), times
/// alpha, plus betaC[j], rounded once.
std::vector<float> referenceGemm(const std::vector<float> &a,
                                 const std::vector<float> &b, int64_t m,
                                 int64_t k, int64_t n, double alpha,
                                 const std::vector<double> &betaC) {
  std::vector<float> y(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p)
        if (a[i * k + p] != 0.0f)
          sum += double(a[i * k + p]) * double(b[p * n + j]);
      y[i * n + j] = float(sum * alpha + betaC[j]);
    }
  return y;
}

/// b [k, n] in gemmColumns' panels: columns [j0, j0 + w) as k rows of w
/// values at j0 * k.
template <typename T>
std::vector<T> toPanels(const std::vector<T> &b, int64_t k, int64_t n) {
  std::vector<T> panels(k * n);
  for (int64_t j0 = 0; j0 < n; j0 += kGemmPanelColumns) {
    int64_t w = std::min(kGemmPanelColumns, n - j0);
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < w; ++j)
        panels[j0 * k + p * w + j] = b[p * n + j0 + j];
  }
  return panels;
}

} // namespace

// Every 2^-16 in [-5, 5] (and a few specials): within 2 ulp of the double
// erf rounded to f32, the same bits on every family.
TEST(FloatMath, ErfWithinTwoUlpOnEveryFamily) {
  std::vector<float> x;
  for (int64_t i = -5 * 65536; i <= 5 * 65536; ++i)
    x.push_back(float(i) / 65536.0f);
  for (float v : {1e-30f, -1e-30f, 1e-8f, 7.0f, -30.0f, 1e30f, -0.0f})
    x.push_back(v);
  std::vector<float> first;
  for (Isa isa : getSupportedIsas()) {
    std::vector<float> y(x.size());
    erfFloats(isa, x.data(), y.data(), int64_t(x.size()));
    int64_t worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      float want = float(std::erf(double(x[i])));
      int64_t d = ulpDistance(y[i], want);
      ASSERT_LE(d, 2) << getIsaName(isa).str() << " erf(" << x[i]
                      << ") = " << y[i] << ", want " << want;
      worst = std::max(worst, d);
    }
    if (first.empty())
      first = y;
    EXPECT_TRUE(sameBits(first, y)) << getIsaName(isa).str();
  }
  float specials[] = {std::numeric_limits<float>::infinity(),
                      -std::numeric_limits<float>::infinity(),
                      std::numeric_limits<float>::quiet_NaN()};
  float out[3];
  erfFloats(getSupportedIsas().back(), specials, out, 3);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -1.0f);
  EXPECT_TRUE(std::isnan(out[2]));
}

// Rows of every length up to 70 (the 16-lane blocks and their tails):
// within 4 ulp of the double softmax (over 1e-3; 4e-6 relative below), the same
// bits on every family; a row with an infinity or NaN is the double kernel's.
TEST(FloatMath, SoftmaxRowsOnEveryFamily) {
  for (int64_t n = 1; n <= 70; ++n) {
    int64_t rows = 5;
    std::vector<float> x(rows * n);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float(int64_t(i * 2654435761u % 20001) - 10000) * 0.003f;
    if (n > 3) {
      x[1 * n + 2] = std::numeric_limits<float>::infinity();
      x[3 * n + 1] = std::numeric_limits<float>::quiet_NaN();
    }
    std::vector<float> first;
    for (Isa isa : getSupportedIsas()) {
      std::vector<float> y(x.size());
      softmaxRows(isa, x.data(), y.data(), rows, n);
      for (int64_t r = 0; r < rows; ++r) {
        const float *xr = x.data() + r * n;
        double max = -INFINITY;
        for (int64_t i = 0; i < n; ++i)
          max = std::max(max, double(xr[i]));
        double sum = 0;
        for (int64_t i = 0; i < n; ++i)
          sum += std::exp(double(xr[i]) - max);
        for (int64_t i = 0; i < n; ++i) {
          float want = float(std::exp(double(xr[i]) - max) / sum);
          float got = y[r * n + i];
          if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got)) << "row " << r << " of " << n;
            continue;
          }
          if (want < 1e-3f) {
            // x - max rounded to f32: relative 2^-24 of |x - max| (< 64).
            EXPECT_LE(std::abs(double(got) - double(want)),
                      4e-6 * double(want) + 1e-37)
                << getIsaName(isa).str() << " row " << r << " of " << n;
            continue;
          }
          EXPECT_LE(ulpDistance(got, want), 4)
              << getIsaName(isa).str() << " row " << r << " of " << n
              << " element " << i << ": " << got << ", want " << want;
        }
      }
      if (first.empty())
        first = y;
      EXPECT_EQ(std::memcmp(first.data(), y.data(), y.size() * 4), 0)
          << getIsaName(isa).str() << " rows of " << n;
    }
  }
}

// HardSigmoid (MobileNetV3's alpha 1/6, and ONNX's default 0.2, 0.5) and
// HardSwish: the reference's bits (ActivationMath.h, double rounded once)
// on every family, across the clamps, odd lengths and NaN.
TEST(FloatMath, HardSigmoidAndHardSwishAreTheReferences) {
  std::vector<float> x;
  for (int i = -4000; i <= 4000; ++i)
    x.push_back(float(i) * 0.00173f);
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  x.push_back(std::numeric_limits<float>::infinity());
  x.push_back(-std::numeric_limits<float>::infinity());
  x.push_back(1e-40f);
  for (Isa isa : getSupportedIsas()) {
    for (auto [alpha, beta] : {std::pair<double, double>{double(1.0f / 6), 0.5},
                               std::pair<double, double>{double(0.2f), 0.5}}) {
      std::vector<float> y(x.size());
      hardSigmoidFloats(isa, x.data(), y.data(), int64_t(x.size()), alpha,
                        beta);
      for (size_t i = 0; i < x.size(); ++i) {
        float want = float(act::hardSigmoid(double(x[i]), alpha, beta));
        ASSERT_TRUE(std::memcmp(&want, &y[i], 4) == 0 ||
                    (std::isnan(want) && std::isnan(y[i])))
            << getIsaName(isa).str() << " hard sigmoid " << x[i];
      }
    }
    std::vector<float> y(x.size());
    hardSwishFloats(isa, x.data(), y.data(), int64_t(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      float want = float(act::hardSwish(double(x[i])));
      ASSERT_TRUE(std::memcmp(&want, &y[i], 4) == 0 ||
                  (std::isnan(want) && std::isnan(y[i])))
          << getIsaName(isa).str() << " hard swish " << x[i];
    }
  }
}

// gemmColumns against the reference's sum (double, in order, a's zeros
// skipped so 0 * inf is not taken, times alpha, plus beta * C, one
// rounding), b in panels of kGemmPanelColumns: 70 columns (two whole
// panels and one of 6), on every family, called for the whole row and for
// [32, 40) alone, which must leave every other column as it was.
TEST(FloatMath, GemmColumnsAreTheReferences) {
  const int64_t m = 3, k = 37, n = 70;
  std::vector<float> a(m * k), b(k * n);
  for (int64_t i = 0; i < m * k; ++i)
    a[i] = i % 5 == 0 ? 0.0f : float(std::sin(double(i))) * 3.0f;
  for (int64_t i = 0; i < k * n; ++i)
    b[i] = float(std::cos(double(i) * 0.7)) / 7.0f;
  b[5 * n + 33] = std::numeric_limits<float>::infinity(); // times a's zero
  a[0 * k + 5] = 0.0f;
  double alpha = 0.75;
  std::vector<double> betaC(n);
  for (int64_t j = 0; j < n; ++j)
    betaC[j] = 0.5 * double(j % 9);
  std::vector<float> want = referenceGemm(a, b, m, k, n, alpha, betaC);
  std::vector<float> panels = toPanels(b, k, n);
  for (Isa isa : getSupportedIsas()) {
    std::vector<float> y(m * n, -1.0f);
    gemmColumns(isa, a.data(), m, k, panels.data(), n, 0, n, alpha,
                betaC.data(), y.data());
    EXPECT_TRUE(sameBits(y, want)) << getIsaName(isa).str();
    std::vector<float> part(m * n, -1.0f);
    gemmColumns(isa, a.data(), m, k, panels.data(), n, 32, 40, alpha,
                betaC.data(), part.data());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float expected = j >= 32 && j < 40 ? want[i * n + j] : -1.0f;
        ASSERT_EQ(part[i * n + j], expected)
            << getIsaName(isa).str() << " row " << i << " column " << j;
      }
  }
}

// matmulRows: each output the double sum of every term in k order, rounded
// once (a zero of a times an infinity of b is NaN, unlike Gemm's), the
// same bits on every family; rows in blocks of 4 and 2 and one, columns in
// blocks of 16 and the rest; a range of rows writes those rows alone.
TEST(FloatMath, MatMulRowsAreTheDoubleSums) {
  const int64_t m = 7, k = 29, n = 37;
  std::vector<float> a(m * k), b(k * n);
  for (int64_t i = 0; i < m * k; ++i)
    a[i] = i % 7 == 0 ? 0.0f : float(std::sin(double(i))) * 3.0f;
  for (int64_t i = 0; i < k * n; ++i)
    b[i] = float(std::cos(double(i) * 0.7)) / 7.0f;
  a[2 * k + 3] = 0.0f;
  b[3 * n + 20] = std::numeric_limits<float>::infinity();
  std::vector<float> want(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += double(a[i * k + p]) * double(b[p * n + j]);
      want[i * n + j] = float(sum);
    }
  ASSERT_TRUE(std::isnan(want[2 * n + 20]));
  for (Isa isa : getSupportedIsas()) {
    std::vector<float> y(m * n, -1.0f);
    matmulRows(isa, a.data(), b.data(), k, n, 0, m, y.data());
    for (int64_t e = 0; e < m * n; ++e)
      ASSERT_TRUE(std::isnan(want[e]) ? std::isnan(y[e]) : y[e] == want[e])
          << getIsaName(isa).str() << " element " << e;
    std::vector<float> part(m * n, -1.0f);
    matmulRows(isa, a.data(), b.data(), k, n, 3, 6, part.data());
    for (int64_t e = 0; e < m * n; ++e)
      if (e / n < 3 || e / n >= 6)
        ASSERT_EQ(part[e], -1.0f) << getIsaName(isa).str() << " " << e;
      else if (!std::isnan(want[e]))
        ASSERT_EQ(part[e], want[e]) << getIsaName(isa).str() << " " << e;
  }
}

// gemmScaledColumns on int8 values and a scale per column gives the bits
// of the reference's sum over the floats they stand for (float(q) * s,
// rounded once), zeros of a included: 70 columns, scales of every size,
// values at both ends of int8, a row of a with a NaN, every family.
TEST(FloatMath, GemmScaledColumnsAreTheReferences) {
  const int64_t m = 3, k = 29, n = 70;
  std::vector<float> a(m * k), scales(n), b(k * n);
  std::vector<int8_t> q(k * n);
  for (int64_t i = 0; i < m * k; ++i)
    a[i] = i % 4 == 0 ? 0.0f : float(std::sin(double(i))) * 3.0f;
  a[2 * k + 7] = std::numeric_limits<float>::quiet_NaN();
  for (int64_t j = 0; j < n; ++j)
    scales[j] = float(std::ldexp(1.0 + 0.37 * double(j % 11), -(int(j) % 13)));
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) {
      int v = (p == 0   ? -128
               : p == 1 ? 127
                        : int((p * 31 + j * 17) % 255) - 127);
      q[p * n + j] = int8_t(v);
      b[p * n + j] = float(v) * scales[j];
    }
  std::vector<double> betaC(n);
  for (int64_t j = 0; j < n; ++j)
    betaC[j] = double(j);
  std::vector<float> want = referenceGemm(a, b, m, k, n, 0.5, betaC);
  std::vector<int8_t> panels = toPanels(q, k, n);
  for (Isa isa : getSupportedIsas()) {
    std::vector<float> y(m * n, -1.0f);
    gemmScaledColumns(isa, a.data(), m, k, panels.data(), scales.data(), n, 0,
                      n, 0.5, betaC.data(), y.data());
    // Row 2 is NaN; the others the reference's bits.
    for (int64_t i = 0; i < m * n; ++i)
      if (i / n == 2)
        ASSERT_TRUE(std::isnan(y[i])) << getIsaName(isa).str() << " " << i;
      else
        ASSERT_EQ(y[i], want[i]) << getIsaName(isa).str() << " " << i;
  }
}

// int8ScaleOf finds a scale that gives back every value (dequantized int8
// values, per column and across a tensor whose largest |q| is below 127),
// and none for values off every int8 grid, a -0, a NaN or an infinity.
TEST(FloatMath, Int8ScaleOfFindsTheGridOrNone) {
  auto scaleOf = [](const std::vector<float> &v) {
    return int8ScaleOf(int64_t(v.size()), [&](int64_t i) { return v[i]; });
  };
  auto rebuilds = [](const std::vector<float> &v, float s) {
    for (float x : v) {
      float q = std::nearbyint(x / s);
      float back = float(int32_t(q)) * s;
      if (std::memcmp(&back, &x, sizeof(float)) != 0)
        return false;
    }
    return true;
  };
  for (float scale : {0.0123f, 1.0f / 127, 3.7e-5f, 0.5f, 1e-30f}) {
    for (int top : {127, 128, 90, 1}) {
      std::vector<float> v;
      for (int i = -top; i <= std::min(top, 127); i += 3)
        v.push_back(float(i) * scale);
      v.push_back(float(-top) * scale);
      float s = scaleOf(v);
      ASSERT_NE(s, 0.0f) << scale << " " << top;
      EXPECT_TRUE(rebuilds(v, s)) << scale << " " << top;
    }
  }
  EXPECT_EQ(scaleOf({0.0f, 0.0f}), 1.0f);
  EXPECT_EQ(scaleOf({0.1f, 0.3f, 0.7f, 0.11f}),
            0.0f); // no int8 grid holds them
  EXPECT_EQ(scaleOf({0.5f, -0.0f, 1.0f}), 0.0f);
  EXPECT_EQ(scaleOf({0.5f, std::numeric_limits<float>::quiet_NaN()}), 0.0f);
  EXPECT_EQ(scaleOf({0.5f, std::numeric_limits<float>::infinity()}), 0.0f);
  EXPECT_EQ(scaleOf({1.0f, 300.0f}), 0.0f); // 300 steps apart
}
