//===- Int8ConvTest.cpp - int8 conv against a direct loop, every family ---===//

#include "Int8ConvCases.h"
#include "TestedIsas.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace qopt;
using namespace qopt::kernels;
using namespace qopt::kernels::convtest;

namespace {

/// sum over the taps inside the input of (x - zx) * (w - zw[o]): padding is
/// real 0; `zw` is per output channel, per tensor or empty (0).
std::vector<int64_t> directConv(const Int8ConvShape &s,
                                const std::vector<uint8_t> &x,
                                const std::vector<int8_t> &w, int32_t zx,
                                const std::vector<int32_t> &zw = {}) {
  int64_t oh = s.outH(), ow = s.outW(), gin = s.inC / s.groups,
          gout = s.outC / s.groups;
  std::vector<int64_t> y(s.batch * oh * ow * s.outC, 0);
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t h = 0; h < oh; ++h)
      for (int64_t v = 0; v < ow; ++v)
        for (int64_t o = 0; o < s.outC; ++o) {
          int64_t g = o / gout, sum = 0;
          for (int64_t ci = 0; ci < gin; ++ci)
            for (int64_t ky = 0; ky < s.kernelH; ++ky)
              for (int64_t kx = 0; kx < s.kernelW; ++kx) {
                int64_t ih = h * s.strideH - s.padTop + ky * s.dilationH;
                int64_t iw = v * s.strideW - s.padLeft + kx * s.dilationW;
                // Between the input's pixels lie zero points (real 0).
                if (ih < 0 || iw < 0 || ih % s.inputDilationH ||
                    iw % s.inputDilationW)
                  continue;
                ih /= s.inputDilationH;
                iw /= s.inputDilationW;
                if (ih >= s.inH || iw >= s.inW)
                  continue;
                int64_t xv =
                    x[((n * s.inH + ih) * s.inW + iw) * s.inC + g * gin + ci];
                int64_t wv =
                    w[((o * gin + ci) * s.kernelH + ky) * s.kernelW + kx];
                int64_t wz = zw.empty() ? 0 : zw[zw.size() > 1 ? o : 0];
                sum += (xv - zx) * (wv - wz);
              }
          y[((n * oh + h) * ow + v) * s.outC + o] = sum;
        }
  return y;
}

/// Each family's conv of every case shape equals the direct loop, computed
/// in two calls as two threads would split the rows. With `weightZeros`,
/// the weights have zero points: per channel on even cases, per tensor on
/// odd ones, including both ends of the s8 range.
void expectEveryFamilyMatchesADirectLoop(bool weightZeros) {
  std::mt19937 rng(weightZeros ? 5 : 7);
  std::uniform_int_distribution<int> byte(0, 255);
  for (Isa isa : getTestedIsas()) {
    for (const Case &c : kCases) {
      const Int8ConvShape &s = c.shape;
      auto operands = randomOperands(s, rng);
      const std::vector<uint8_t> &x = operands.first;
      const std::vector<int8_t> &w = operands.second;
      Int8Epilogue e;
      e.scale = {1.0f};
      e.inputZero = c.inputZero;
      bool perChannel = (&c - kCases) % 2 == 0;
      for (int64_t o = 0; weightZeros && o < (perChannel ? s.outC : 1); ++o)
        e.weightZero.push_back(o == 0 ? -128 : o == 1 ? 127 : byte(rng) - 128);
      Int8Conv conv(isa, s, w.data(), e);
      std::vector<float> y(s.batch * s.outH() * s.outW() * s.outC, -1e9f);
      runInTwoCalls(conv, x.data(), y.data());
      std::vector<int64_t> want =
          directConv(s, x, w, c.inputZero, e.weightZero);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(int64_t(y[i]), want[i]) << getIsaName(isa).str() << " case "
                                          << (&c - kCases) << " element " << i;
    }
  }
}

TEST(Int8Conv, EveryFamilyMatchesADirectLoop) {
  expectEveryFamilyMatchesADirectLoop(false);
}

TEST(Int8Conv, WeightZeroPointsMatchADirectLoop) {
  // Asymmetric weights (u8 weights re-encoded as s8, zero point - 128).
  expectEveryFamilyMatchesADirectLoop(true);
}

TEST(Int8Conv, WeightZeroPointsAreChecked) {
  auto refuses = [](const Int8ConvShape &s, const Int8Epilogue &e) {
    return llvm::errorToBool(Int8Conv::checkParams(s, e));
  };
  Int8ConvShape s = shapeOf(1, 4, 4, 2, 3, 1, 1, 0, 1, 1);
  Int8Epilogue e;
  e.scale = {1.0f};
  e.weightZero = {1, 2}; // for 2 of 3 channels
  EXPECT_TRUE(refuses(s, e));
  e.weightZero = {128}; // not s8
  EXPECT_TRUE(refuses(s, e));
  e.weightZero = {-128, 0, 127};
  EXPECT_FALSE(refuses(s, e));
  // 3x3 over 2048 channels: 18432 taps per output, more than s32 sums of
  // the zero point terms allow; symmetric weights have no such limit.
  Int8ConvShape deep = shapeOf(1, 3, 3, 2048, 1, 3, 1, 1, 1, 1);
  e.weightZero = {};
  EXPECT_FALSE(refuses(deep, e));
  e.weightZero = {3};
  EXPECT_TRUE(refuses(deep, e));
}

} // namespace

TEST(Int8Conv, TilesGiveTheBytesOfOneCall) {
  // Layers with few rows are split along their channels too. Every tile
  // computed alone, last first, and all tiles in one call give the bytes
  // of one run() over every row, with every part of the epilogue that
  // works per channel (scales, biases, weight zero points, a residual, an
  // output table), on every family.
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> byte(0, 255);
  const Int8ConvShape shapes[] = {
      shapeOf(1, 7, 7, 64, 256, 3, 1, 1, 1, 1),  // 1 row group, 4 blocks
      shapeOf(1, 5, 5, 32, 200, 1, 1, 0, 1, 1),  // 13 panels: 5, 5 and 3
      shapeOf(2, 4, 3, 8, 130, 3, 2, 1, 1, 1),   // batch 2, a partial panel
      shapeOf(1, 14, 56, 16, 32, 3, 1, 1, 1, 1), // row groups of 3 and 4
      shapeOf(1, 7, 7, 64, 64, 3, 1, 1, 1, 8),   // 8 groups: 4 blocks of 2
      shapeOf(1, 14, 14, 48, 48, 3, 2, 1, 1, 3), // 3 groups: 3 blocks
      shapeOf(1, 7, 7, 40, 56, 1, 1, 0, 1, 8),   // pointwise, 8 groups of 7
      // Depthwise (no weight zero points): channel blocks of 80, 80 and 40
      // (a tail of 8 past the 16-lane vectors); 128 in two blocks of 64
      // through the 5x5 stride-2 interior and edges.
      shapeOf(1, 7, 7, 200, 200, 3, 1, 1, 1, 200),
      shapeOf(1, 13, 13, 128, 128, 5, 2, 2, 1, 128),
  };
  std::vector<uint8_t> table(256);
  for (uint8_t &v : table)
    v = uint8_t(byte(rng));
  for (const Int8ConvShape &s : shapes) {
    auto operands = randomOperands(s, rng);
    int64_t outElements = s.batch * s.outH() * s.outW() * s.outC;
    std::vector<uint8_t> residual(outElements);
    for (uint8_t &v : residual)
      v = uint8_t(byte(rng));
    Int8Epilogue e;
    bool depthwise = s.groups == s.inC && s.inC == s.outC;
    for (int64_t c = 0; c < s.outC; ++c) {
      e.scale.push_back(std::ldexp(1.0f + c % 7, -12));
      e.bias.push_back(float(c % 5) - 2);
      if (!depthwise) // the depthwise kernels take none
        e.weightZero.push_back(c % 9 - 4);
    }
    e.inputZero = 100;
    e.activation = Activation::Relu;
    e.hasResidual = true;
    e.residualScale = 0.25f;
    e.residualZero = 128;
    e.outputScale = 0.5f;
    e.outputZero = 20;
    e.outputTable = table;
    for (Isa isa : getTestedIsas()) {
      Int8Conv conv(isa, s, operands.second.data(), e);
      // Channel blocks (the first three and the grouped ones: one row
      // group each), row groups (the fourth) or both.
      EXPECT_GT(conv.getNumTiles(), 1) << s.outC << " channels";
      std::vector<char> scratch(conv.getScratchBytes() + 64);
      void *aligned = reinterpret_cast<void *>(
          (reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t(63));
      const uint8_t *x = operands.first.data();
      std::vector<uint8_t> whole(outElements), alone(outElements),
          together(outElements);
      conv.run(x, residual.data(), whole.data(), 0, conv.getNumRows(), aligned);
      for (int64_t t = conv.getNumTiles() - 1; t >= 0; --t)
        conv.runTiles(x, residual.data(), alone.data(), t, t + 1, aligned);
      conv.runTiles(x, residual.data(), together.data(), 0, conv.getNumTiles(),
                    aligned);
      EXPECT_EQ(alone, whole) << getIsaName(isa).str() << " " << s.outC;
      EXPECT_EQ(together, whole) << getIsaName(isa).str() << " " << s.outC;
      // Two calls split at every tile, as TBB may split the range (also
      // inside a row group's blocks).
      for (int64_t t = 1; t < conv.getNumTiles(); ++t) {
        std::vector<uint8_t> split(outElements);
        conv.runTiles(x, residual.data(), split.data(), 0, t, aligned);
        conv.runTiles(x, residual.data(), split.data(), t, conv.getNumTiles(),
                      aligned);
        EXPECT_EQ(split, whole) << getIsaName(isa).str() << " split at " << t;
      }
    }
  }
}

TEST(Int8Conv, WeightZeroPointTermsAtTheDepthLimitStayInS32) {
  // 16384 taps at the ends of every range: sum (x - zx) * (w - zw) reaches
  // -255 * 255 * 16384 through s32 intermediates (UBSan watches them).
  Int8ConvShape s = shapeOf(1, 1, 1, 16384, 1, 1, 1, 0, 1, 1);
  struct Extreme {
    uint8_t x;
    int8_t w;
    int32_t zx, zw;
    float want;
  };
  const Extreme extremes[] = {
      {255, -128, 0, 127, -255.0f * 255.0f * 16384.0f},
      {0, -128, 255, -128, 0.0f},
      {0, 127, 255, -128, -255.0f * 255.0f * 16384.0f},
  };
  for (const Extreme &c : extremes) {
    std::vector<uint8_t> x(16384, c.x);
    std::vector<int8_t> w(16384, c.w);
    Int8Epilogue e;
    e.scale = {1.0f};
    e.inputZero = c.zx;
    e.weightZero = {c.zw};
    for (Isa isa : getTestedIsas()) {
      Int8Conv conv(isa, s, w.data(), e);
      float y = 0;
      runInTwoCalls(conv, x.data(), &y);
      EXPECT_EQ(y, c.want) << getIsaName(isa).str();
    }
  }
}
