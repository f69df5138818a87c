//===- Int4GemmTest.cpp - Weight-only 4-bit GEMM against its contract -----===//

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

/// The contract, from the unpacked codes: fma over k in order from 0 of x
/// and float(q - z) * s.
std::vector<float> expected(const std::vector<float> &x, const Case &c,
                            const std::vector<int8_t> &q,
                            const std::vector<float> &s,
                            const std::vector<int64_t> &z) {
  std::vector<float> y(size_t(c.rows * c.n));
  for (int64_t r = 0; r < c.rows; ++r)
    for (int64_t j = 0; j < c.n; ++j) {
      float acc = 0.0f;
      for (int64_t p = 0; p < c.k; ++p) {
        size_t g = size_t((p / c.block) * c.n + j);
        float w = float(int32_t(q[size_t(p * c.n + j)]) -
                        int32_t(c.zeros ? z[g] : 0)) *
                  s[g];
        acc = std::fma(x[size_t(r * c.k + p)], w, acc);
      }
      y[size_t(r * c.n + j)] = acc;
    }
  return y;
}

bool sameBits(float a, float b) {
  return std::memcmp(&a, &b, sizeof(float)) == 0;
}

} // namespace

TEST(Int4GemmTest, EveryIsaGivesTheContractsBits) {
  const Case cases[] = {
      {1, 256, 64, 128, true, false}, // decode, two panels
      {2, 129, 45, 129, true, false}, // odd K, one block; a ragged panel
      {3, 64, 32, 16, false, true},   // u4 with zero points
      {7, 130, 70, 10, true, true},   // tiles of 6 and a remainder
      {13, 96, 33, 32, false, false}, // u4, zero point 0
  };
  std::mt19937 rng(7);
  for (const Case &c : cases) {
    int64_t blocks = (c.k + c.block - 1) / c.block;
    std::vector<int8_t> q(size_t(c.k * c.n));
    std::uniform_int_distribution<int> code(c.isSigned ? -8 : 0,
                                            c.isSigned ? 7 : 15);
    for (int8_t &v : q)
      v = int8_t(code(rng));
    std::vector<float> s(size_t(blocks * c.n));
    std::vector<int64_t> z(size_t(blocks * c.n));
    std::uniform_real_distribution<float> scale(0.001f, 0.1f), value(-2, 2);
    std::uniform_int_distribution<int> zero(0, 15);
    for (size_t i = 0; i < s.size(); ++i) {
      s[i] = scale(rng);
      z[i] = zero(rng);
    }
    std::vector<float> x(size_t(c.rows * c.k));
    for (float &v : x)
      v = value(rng);
    Int4Weights w = Int4Weights::pack(q.data(), c.k, c.n, c.block, c.isSigned,
                                      s.data(), c.zeros ? z.data() : nullptr);
    std::vector<float> want = expected(x, c, q, s, z);
    for (Isa isa : getSupportedIsas()) {
      std::vector<float> y(size_t(c.rows * c.n), NAN);
      std::vector<float> scratch(
          int4GemmScratchBytes(w, c.rows) / sizeof(float) + 1);
      // Two calls over the panels, as two tiles would make them.
      int64_t half = w.numPanels() / 2;
      int4Gemm(isa, x.data(), c.rows, w, 0, half, y.data(), scratch.data());
      int4Gemm(isa, x.data(), c.rows, w, half, w.numPanels(), y.data(),
               scratch.data());
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_TRUE(sameBits(y[i], want[i]))
            << getIsaName(isa).str() << " rows " << c.rows << " k " << c.k
            << " n " << c.n << " at " << i << ": " << y[i] << " vs " << want[i];
    }
  }
}
