//===- Int4DotGemmTest.cpp - int4 x int8 GEMM against its contract --------===//

#include "qopt/Kernels/Int4DotGemm.h"
#include "qopt/Kernels/Int4Gemm.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <random>

using namespace qopt;
using namespace qopt::kernels;

namespace {

struct Case {
  int64_t rows, k, n, block;
  bool isSigned, zeros;
};

struct Weight {
  std::vector<int8_t> q;
  std::vector<float> s;
  std::vector<int64_t> z;
};

Weight randomWeight(const Case &c, std::mt19937 &rng) {
  int64_t blocks = (c.k + c.block - 1) / c.block;
  Weight w;
  w.q.resize(size_t(c.k * c.n));
  std::uniform_int_distribution<int> code(c.isSigned ? -8 : 0,
                                          c.isSigned ? 7 : 15);
  for (int8_t &v : w.q)
    v = int8_t(code(rng));
  w.s.resize(size_t(blocks * c.n));
  w.z.assign(size_t(blocks * c.n), 0);
  std::uniform_real_distribution<float> scale(0.001f, 0.1f);
  std::uniform_int_distribution<int> zero(c.isSigned ? -8 : 0,
                                          c.isSigned ? 7 : 15);
  for (size_t i = 0; i < w.s.size(); ++i) {
    w.s[i] = scale(rng);
    if (c.zeros)
      w.z[i] = zero(rng);
  }
  return w;
}

/// The contract from the unpacked codes: x rounded to int8 per segment of
/// 128 (or the block), integer sums, then the two fmas per segment.
std::vector<float> expected(const std::vector<float> &x, const Case &c,
                            const Weight &w, int64_t segment) {
  std::vector<float> y(size_t(c.rows * c.n));
  for (int64_t r = 0; r < c.rows; ++r) {
    const float *row = x.data() + r * c.k;
    for (int64_t j = 0; j < c.n; ++j) {
      float acc = 0.0f;
      for (int64_t begin = 0; begin < c.k; begin += segment) {
        int64_t end = std::min(c.k, begin + segment);
        float amax = 0.0f;
        bool finite = true;
        for (int64_t p = begin; p < end; ++p) {
          finite &= std::isfinite(row[p]);
          amax = std::max(amax, std::fabs(row[p]));
        }
        int32_t dot = 0, sum = 0;
        float sx = !finite ? NAN : amax / 127.0f;
        if (finite && amax > 0)
          for (int64_t p = begin; p < end; ++p) {
            int32_t xq = int32_t(std::nearbyint(row[p] * (127.0f / amax)));
            int32_t u = w.q[size_t(p * c.n + j)] + (c.isSigned ? 8 : 0);
            dot += xq * u;
            sum += xq;
          }
        size_t g = size_t((begin / c.block) * c.n + j);
        float zero = float(w.z[g] + (c.isSigned ? 8 : 0));
        float integral = std::fma(-zero, float(sum), float(dot));
        acc = std::fma(integral, w.s[g] * sx, acc);
      }
      y[size_t(r * c.n + j)] = acc;
    }
  }
  return y;
}

bool sameBits(float a, float b) {
  return std::memcmp(&a, &b, sizeof(float)) == 0;
}

} // namespace

TEST(Int4DotGemmTest, EveryIsaGivesTheContractsBits) {
  const Case cases[] = {
      {1, 256, 64, 128, true, false}, // decode, two panels
      {2, 131, 45, 131, true, false}, // one block, K not a multiple of 4
      {3, 64, 32, 16, false, true},   // u4 with zero points, small blocks
      {7, 384, 70, 384, true, true},  // tiles of 6; segments of 128
      {13, 96, 33, 32, false, false}, // u4, zero point 0
      {2, 300, 17, 100, true, true},  // blocks of 100, K past the last one
  };
  std::mt19937 rng(11);
  for (const Case &c : cases) {
    Weight weight = randomWeight(c, rng);
    std::vector<float> x(size_t(c.rows * c.k));
    std::uniform_real_distribution<float> value(-2, 2);
    for (float &v : x)
      v = value(rng);
    if (c.rows > 1)
      x[size_t(c.k + 3)] = NAN; // row 1's first segment: its results NaN
    Int4Weights f =
        Int4Weights::pack(weight.q.data(), c.k, c.n, c.block, c.isSigned,
                          weight.s.data(), c.zeros ? weight.z.data() : nullptr);
    ASSERT_TRUE(Int4DotWeights::canPack(f));
    Int4DotWeights w = Int4DotWeights::pack(f);
    int64_t segment = c.block >= c.k || c.block % 128 == 0 ? 128 : c.block;
    ASSERT_EQ(w.segment, segment);
    // The plan file stores the f32 form: unpacking gives it back.
    Int4Weights back = w.unpack();
    EXPECT_EQ(back.codes, f.codes);
    EXPECT_EQ(back.scales, f.scales);
    EXPECT_EQ(back.zeros, f.zeros);
    EXPECT_EQ(back.hasZeros, f.hasZeros);

    std::vector<float> want = expected(x, c, weight, segment);
    for (Isa isa : getSupportedIsas()) {
      std::vector<float> y(size_t(c.rows * c.n), 12345.0f);
      std::vector<uint8_t> rows(int4DotGemmRowsBytes(w, c.rows) + 64);
      void *aligned = rows.data() + (64 - uintptr_t(rows.data()) % 64);
      int4DotGemmQuantizeRows(x.data(), c.rows, w, aligned);
      int64_t half = w.numPanels() / 2;
      int4DotGemm(isa, aligned, c.rows, w, 0, half, y.data());
      int4DotGemm(isa, aligned, c.rows, w, half, w.numPanels(), y.data());
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_TRUE(sameBits(y[i], want[i]))
            << getIsaName(isa).str() << " rows " << c.rows << " k " << c.k
            << " n " << c.n << " at " << i << ": " << y[i] << " vs " << want[i];
      if (c.rows > 1) {
        EXPECT_TRUE(std::isnan(y[size_t(c.n)]));
      }
    }
  }
}

TEST(Int4DotGemmTest, CloseToTheDequantizedProduct) {
  // The cost of rounding x to 8 bits: each output within 1% of the sum of
  // |x w| (a bound the f32 kernel meets with 1e-6).
  Case c{4, 1024, 96, 128, true, false};
  std::mt19937 rng(3);
  Weight weight = randomWeight(c, rng);
  std::vector<float> x(size_t(c.rows * c.k));
  std::normal_distribution<float> value(0, 1);
  for (float &v : x)
    v = value(rng);
  Int4Weights f = Int4Weights::pack(weight.q.data(), c.k, c.n, c.block,
                                    c.isSigned, weight.s.data(), nullptr);
  Int4DotWeights w = Int4DotWeights::pack(f);
  std::vector<float> exact(size_t(c.rows * c.n)), y(exact.size());
  std::vector<float> scratch(int4GemmScratchBytes(f, c.rows) / 4 + 16);
  int4Gemm(Isa::Scalar, x.data(), c.rows, f, 0, f.numPanels(), exact.data(),
           scratch.data());
  std::vector<float> rows(int4DotGemmRowsBytes(w, c.rows) / 4 + 1);
  int4DotGemmQuantizeRows(x.data(), c.rows, w, rows.data());
  int4DotGemm(getSupportedIsas().back(), rows.data(), c.rows, w, 0,
              w.numPanels(), y.data());
  for (int64_t r = 0; r < c.rows; ++r)
    for (int64_t j = 0; j < c.n; ++j) {
      double magnitude = 0;
      for (int64_t p = 0; p < c.k; ++p)
        magnitude +=
            std::fabs(x[size_t(r * c.k + p)] * weight.q[size_t(p * c.n + j)] *
                      weight.s[size_t((p / 128) * c.n + j)]);
      size_t i = size_t(r * c.n + j);
      EXPECT_LT(std::fabs(y[i] - exact[i]), 0.01 * magnitude) << i;
    }
}
