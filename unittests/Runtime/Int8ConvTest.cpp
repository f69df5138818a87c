//===- Int8ConvTest.cpp - int8 conv against a direct loop, every family ---===//

#include "qopt/Kernels/Int8Conv.h"
#include "TestedIsas.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace qopt;
using namespace qopt::rt;

namespace {

struct Case {
  Int8ConvShape shape;
  int32_t inputZero;
};

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

Int8ConvShape shapeOf(int64_t batch, int64_t inH, int64_t inW, int64_t inC,
                      int64_t outC, int64_t k, int64_t stride, int64_t pad,
                      int64_t dilation, int64_t groups,
                      int64_t inputDilation = 1) {
  Int8ConvShape s;
  s.batch = batch;
  s.inH = inH;
  s.inW = inW;
  s.inC = inC;
  s.outC = outC;
  s.kernelH = s.kernelW = k;
  s.strideH = s.strideW = stride;
  s.padTop = s.padLeft = pad;
  s.padBottom = s.padRight = pad;
  s.dilationH = s.dilationW = dilation;
  s.groups = groups;
  s.inputDilationH = s.inputDilationW = inputDilation;
  return s;
}

const Case kCases[] = {
    {shapeOf(1, 5, 5, 3, 4, 3, 1, 1, 1, 1), 128}, // 3x3, pad 1
    {shapeOf(2, 7, 6, 8, 17, 1, 1, 0, 1, 1), 3},  // pointwise, batch 2
    {shapeOf(1, 9, 9, 5, 33, 3, 2, 1, 1, 1), 0},  // stride 2
    {shapeOf(1, 8, 8, 6, 6, 3, 1, 2, 2, 1), 200}, // dilation 2
    {shapeOf(1, 6, 7, 8, 12, 3, 1, 1, 1, 4), 17}, // 4 groups
    {shapeOf(1, 6, 6, 7, 7, 3, 1, 1, 1, 7), 128}, // depthwise
    // depthwise over whole vectors of channels and a tail: stride 2 and
    // batch 2; 5x5 dilated; a channel multiplier of 2 (grouped, not the
    // depthwise path)
    {shapeOf(2, 9, 8, 40, 40, 3, 2, 1, 1, 40), 100},
    {shapeOf(1, 7, 7, 35, 35, 5, 1, 2, 2, 35), 7},
    {shapeOf(1, 6, 5, 24, 48, 3, 1, 1, 1, 24), 128},
    // depthwise channels a 16-lane vector leaves 8 of (the 8-lane block),
    // and 8 and 5 of (then one at a time): ShuffleNet's 24, stride 2
    {shapeOf(1, 7, 6, 24, 24, 3, 2, 1, 1, 24), 30},
    {shapeOf(1, 5, 6, 29, 29, 3, 1, 1, 1, 29), 140},
    // depthwise rows with pixels whose windows lie inside the input (the
    // interior loop, taps unrolled for 3x3 and 5x5, counted for 7x7), of
    // whole vectors and with 8 or 4 channels left, dilated
    {shapeOf(1, 5, 12, 48, 48, 3, 1, 1, 1, 48), 128},
    {shapeOf(1, 9, 11, 20, 20, 5, 1, 2, 1, 20), 90},
    {shapeOf(1, 9, 10, 16, 16, 7, 1, 3, 1, 16), 3},
    {shapeOf(1, 6, 13, 24, 24, 3, 1, 2, 2, 24), 250},
    {shapeOf(1, 4, 4, 13, 50, 5, 1, 2, 1, 1), 255}, // 5x5, odd channels
    {shapeOf(1, 10, 3, 4, 9, 1, 3, 0, 1, 1), 1},    // 1x1 with stride 3
    {shapeOf(1, 9, 11, 3, 8, 7, 2, 3, 1, 1), 77},   // 7x7/2 stem, 3 channels
    {shapeOf(1, 5, 2, 4, 5, 3, 1, 1, 1, 1), 30},    // 2 wide, 3x3 kernel
    {shapeOf(1, 7, 9, 2, 3, 3, 2, 2, 2, 1), 140},   // dilation 2, stride 2
    // Input dilation (ConvTranspose): 4x4 with pads 2 over a stride-2
    // dilated input, a 3x3 over stride 3 with groups, a 1x1 (no GEMM on
    // the input as it lies).
    {shapeOf(1, 5, 4, 6, 10, 4, 1, 2, 1, 1, 2), 120},
    {shapeOf(2, 3, 4, 4, 6, 3, 1, 1, 1, 2, 3), 9},
    {shapeOf(1, 3, 3, 5, 7, 1, 1, 0, 1, 1, 2), 200},
    // Narrow rows: one GEMM takes several rows, across images.
    {shapeOf(3, 4, 4, 5, 20, 3, 1, 1, 1, 1), 9},
    {shapeOf(3, 3, 5, 8, 16, 1, 1, 0, 1, 1), 5}, // pointwise
    // Channel counts that leave 11-15 past a multiple of 16 (the 16-lane
    // epilogue's tails).
    {shapeOf(1, 4, 5, 6, 15, 3, 1, 1, 1, 1), 60},
    {shapeOf(1, 3, 4, 5, 27, 1, 1, 0, 1, 1), 90},
    {shapeOf(1, 3, 3, 4, 44, 3, 1, 1, 1, 1), 128},
    {shapeOf(1, 2, 5, 7, 29, 1, 1, 0, 1, 1), 33},
    {shapeOf(1, 3, 3, 3, 30, 3, 1, 1, 1, 1), 250},
    // Kernel rows of 120 and of 3 bytes inside the input: the im2col runs'
    // 32-byte moves (three, the last overlapping) and single bytes.
    {shapeOf(1, 4, 6, 40, 16, 3, 1, 1, 1, 1), 7},
    {shapeOf(1, 5, 6, 1, 16, 3, 1, 1, 1, 1), 3},
    // Gathered rows (the avx512vnni family reads the input where it lies):
    // kernel rows on the left and right padding (copied) and on the top
    // and bottom (the padding run), across images in one call; stride 2;
    // a 5x5 over a 3x3 input, every kernel row on both sides' padding; a
    // 7x7/2 stem of 4 channels (28-byte rows); runs per tap for dilation,
    // for groups of 16 channels (each group's runs further on) and for an
    // input dilation; a 1x1 with stride 2, one run a pixel.
    {shapeOf(2, 5, 6, 16, 20, 3, 1, 1, 1, 1), 9},
    {shapeOf(1, 9, 9, 8, 33, 3, 2, 1, 1, 1), 200},
    {shapeOf(1, 3, 3, 16, 16, 5, 1, 2, 1, 1), 77},
    {shapeOf(1, 7, 9, 4, 17, 7, 2, 3, 1, 1), 100},
    {shapeOf(1, 8, 8, 16, 12, 3, 1, 2, 2, 1), 50},
    {shapeOf(1, 6, 7, 32, 24, 3, 1, 1, 1, 2), 17},
    {shapeOf(1, 5, 4, 16, 10, 4, 1, 2, 1, 1, 2), 120},
    {shapeOf(1, 10, 9, 16, 20, 1, 2, 0, 1, 1), 3},
    // Runs of one and two k groups: taps of 4 and 8 channels a group
    // (ResNeXt's first stages), kernel rows of 2 x 2 channels.
    {shapeOf(1, 6, 5, 32, 16, 3, 1, 1, 1, 8), 90},
    {shapeOf(2, 5, 6, 16, 24, 3, 2, 1, 1, 2), 4},
    {shapeOf(1, 7, 6, 2, 18, 2, 1, 1, 1, 1), 160},
    // Pads wider than the kernel: edge columns with no tap inside.
    {shapeOf(1, 4, 5, 8, 16, 3, 1, 4, 1, 1), 33},
};

/// Random u8 activations and s8 weights (OIHW) for a conv of shape `s`.
std::pair<std::vector<uint8_t>, std::vector<int8_t>>
randomOperands(const Int8ConvShape &s, std::mt19937 &rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> x(s.batch * s.inH * s.inW * s.inC);
  for (uint8_t &v : x)
    v = uint8_t(byte(rng));
  std::vector<int8_t> w(s.outC * (s.inC / s.groups) * s.kernelH * s.kernelW);
  for (int8_t &v : w)
    v = int8_t(byte(rng) - 128);
  return {std::move(x), std::move(w)};
}

/// Runs `conv` on `x` (and its pair table's operand and its residual, if
/// any) into `y` in two calls, as two threads would split its rows, with
/// 64-byte aligned scratch.
void runInTwoCalls(const Int8Conv &conv, const uint8_t *x, void *y,
                   const uint8_t *pairOperand = nullptr,
                   const uint8_t *residual = nullptr) {
  std::vector<char> scratch(conv.getScratchBytes() + 64);
  void *aligned = reinterpret_cast<void *>(
      (reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t(63));
  int64_t half = conv.getNumRows() / 2;
  conv.run(x, residual, y, 0, half, aligned, pairOperand);
  conv.run(x, residual, y, half, conv.getNumRows(), aligned, pairOperand);
}

/// A 1x1 conv on one channel of 256 pixels, x = 0..255, every weight 1:
/// output channel c of pixel x is (x - zx) * scale[c] + bias[c].
struct ChannelSweep {
  Int8ConvShape shape;
  std::vector<uint8_t> x;
  std::vector<int8_t> w;

  explicit ChannelSweep(int64_t channels) : x(256), w(channels, 1) {
    shape.inC = 1;
    shape.inW = 256;
    shape.outC = channels;
    for (int i = 0; i < 256; ++i)
      x[i] = uint8_t(i);
  }
};

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

TEST(Int8Conv, EpilogueQuantizesInTheUnitsOrder) {
  // 1x1 conv over one pixel, 2 channels; y = 0.5 * acc + bias, + residual
  // before a ReLU, onto scale 0.25, zero point 10.
  Int8ConvShape s = shapeOf(1, 1, 1, 2, 2, 1, 1, 0, 1, 1);
  std::vector<int8_t> w = {1, 2, -3, 1};   // channel 0: (1, 2); 1: (-3, 1)
  std::vector<uint8_t> x = {5, 7};         // zero point 4: real (1, 3)
  std::vector<uint8_t> residual = {12, 0}; // zero point 2, scale 0.5
  Int8Epilogue e;
  e.scale = {0.5f, 0.5f};
  e.bias = {0.25f, -1.0f};
  e.inputZero = 4;
  e.activation = Activation::Relu;
  e.hasResidual = true;
  e.residualScale = 0.5f;
  e.residualZero = 2;
  e.outputScale = 0.25f;
  e.outputZero = 10;
  for (Isa isa : getTestedIsas()) {
    Int8Conv conv(isa, s, w.data(), e);
    std::vector<uint8_t> y(2);
    std::vector<char> scratch(conv.getScratchBytes() + 64);
    conv.run(x.data(), residual.data(), y.data(), 0, 1, scratch.data());
    // channel 0: acc 1+6 = 7 -> 3.5 + 0.25 + 5 = 8.75 -> 35 + 10 = 45
    // channel 1: acc -3+3 = 0 -> 0 - 1 - 1 = -2 -> relu 0 -> 10
    EXPECT_EQ(y[0], 45) << getIsaName(isa).str();
    EXPECT_EQ(y[1], 10) << getIsaName(isa).str();
  }
  // After the activation instead: channel 1 is relu(-1) + (-1) = -1 -> 6.
  e.residualAfterActivation = true;
  Int8Conv conv(Isa::Scalar, s, w.data(), e);
  std::vector<uint8_t> y(2);
  std::vector<char> scratch(conv.getScratchBytes() + 64);
  conv.run(x.data(), residual.data(), y.data(), 0, 1, scratch.data());
  EXPECT_EQ(y[0], 45);
  EXPECT_EQ(y[1], 6);
}

TEST(Int8Conv, VectorEpilogueGivesTheScalarBits) {
  // Every epilogue variant on every case shape (channel counts that leave
  // 1-15 channels past a multiple of 16, so every tail of the 8- and
  // 16-lane epilogues): each family's bytes equal the scalar family's.
  // Scales make many results land on rounding ties and past both ends of
  // the u8 range; a NaN bias on the last channel goes through each
  // activation (float results: the same NaN bits).
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> real(-1, 1);
  struct Variant {
    Activation activation;
    float alpha, beta;
    bool bias, residual, residualLast, quantized;
  };
  const Variant variants[] = {
      {Activation::None, 0, 0, false, false, false, true},
      {Activation::Relu, 0, 0, true, true, false, true},
      {Activation::Relu, 0, 0, true, true, true, false},
      {Activation::LeakyRelu, 0.1f, 0, true, false, false, true},
      {Activation::Clip, -0.75f, 2.5f, true, true, false, true},
      {Activation::Clip, 0.0f, 6.0f, false, false, false, false},
      {Activation::Sigmoid, 0, 0, true, false, false, true},
      {Activation::Sigmoid, 0, 0, true, true, true, false},
      {Activation::Silu, 0, 0, true, true, false, true},
      {Activation::Silu, 0, 0, true, false, false, false},
      {Activation::Tanh, 0, 0, true, false, false, true}, // scalar everywhere
  };
  for (const Case &c : kCases) {
    const Int8ConvShape &s = c.shape;
    auto operands = randomOperands(s, rng);
    const std::vector<uint8_t> &x = operands.first;
    const std::vector<int8_t> &w = operands.second;
    int64_t outElements = s.batch * s.outH() * s.outW() * s.outC;
    std::vector<uint8_t> residual(outElements);
    for (uint8_t &v : residual)
      v = uint8_t(byte(rng));
    for (const Variant &v : variants) {
      Int8Epilogue e;
      for (int64_t ch = 0; ch < s.outC; ++ch) {
        e.scale.push_back(std::ldexp(1.0f + real(rng) * 0.5f, -9));
        if (v.bias)
          e.bias.push_back(ch == s.outC - 1
                               ? std::numeric_limits<float>::quiet_NaN()
                               : real(rng) * 4);
      }
      e.inputZero = c.inputZero;
      e.activation = v.activation;
      e.alpha = v.alpha;
      e.beta = v.beta;
      e.hasResidual = v.residual;
      e.residualAfterActivation = v.residualLast;
      e.residualScale = 0.03125f;
      e.residualZero = 100;
      e.outputScale = v.quantized ? 0.0625f : 0.0f;
      e.outputZero = 120;
      size_t bytes = outElements * (v.quantized ? 1 : sizeof(float));
      auto run = [&](Isa isa) {
        Int8Conv conv(isa, s, w.data(), e);
        std::vector<char> y(bytes);
        std::vector<char> scratch(conv.getScratchBytes() + 64);
        void *aligned = reinterpret_cast<void *>(
            (reinterpret_cast<uintptr_t>(scratch.data()) + 63) &
            ~uintptr_t(63));
        conv.run(x.data(), v.residual ? residual.data() : nullptr, y.data(), 0,
                 conv.getNumRows(), aligned);
        return y;
      };
      std::vector<char> want = run(Isa::Scalar);
      for (Isa isa : getTestedIsas())
        ASSERT_EQ(run(isa), want)
            << getIsaName(isa).str() << " case " << (&c - kCases) << " variant "
            << (&v - variants);
    }
  }
}

TEST(Int8Conv, VectorQuantizeRoundsAsTheScalarDoes) {
  // y / outputScale rounded to an integer, on and beside ties, at the ends
  // of the float range: a 1x1 conv on one channel gives y = (x - 128) *
  // scale[c] + bias[c] for every byte x, with scale = outputScale / 2 and
  // biases of a few ulp, so that y / outputScale lies on or within an ulp
  // or two of a tie k + 1/2, for output scales whose reciprocals are
  // inexact, exact, and below 2^-126; the last channel's bias makes a
  // quotient past FLT_MAX. Every family gives the scalar bytes. (Dividing
  // through the reciprocal with FMA corrections instead of divps failed
  // here at 0x3e6ba5fb and 1.705e-38, and was slower than the divide.)
  ChannelSweep sweep(37);
  const Int8ConvShape &s = sweep.shape;
  float bits = 0;
  uint32_t pattern = 0x3e6ba5fb;
  std::memcpy(&bits, &pattern, sizeof(bits));
  for (float outputScale : {0.0731f, 0.1f, 0.0913f, 1.0f / 3, 0.0171f, 7.7f,
                            0.0625f, 3e-6f, bits, 1.705e-38f}) {
    Int8Epilogue e;
    for (int64_t c = 0; c < s.outC; ++c) {
      e.scale.push_back(outputScale / 2);
      float ulps = float(c % 5) - 2;
      e.bias.push_back(c < 5 ? 0.0f
                             : ulps * std::ldexp(outputScale, -24) *
                                   float(1 + c / 5));
    }
    std::memcpy(&e.bias.back(), &(pattern = 0x7e6ba5fb), sizeof(float));
    e.inputZero = 128;
    e.outputScale = outputScale;
    e.outputZero = 128;
    auto run = [&](Isa isa) {
      Int8Conv conv(isa, s, sweep.w.data(), e);
      std::vector<uint8_t> y(256 * s.outC);
      runInTwoCalls(conv, sweep.x.data(), y.data());
      return y;
    };
    std::vector<uint8_t> want = run(Isa::Scalar);
    if (outputScale == 0.0625f) {               // exact ties, to even both ways
      EXPECT_EQ(want[(128 + 1) * s.outC], 128); // 0.5 -> 0
      EXPECT_EQ(want[(128 + 3) * s.outC], 130); // 1.5 -> 2
      EXPECT_EQ(want[(128 - 3) * s.outC], 126); // -1.5 -> -2
    }
    // 7.83e37 / 0.23: inf, saturated; other scales: far past 255 too.
    EXPECT_EQ(want[255 * s.outC + s.outC - 1], 255);
    for (Isa isa : getTestedIsas())
      ASSERT_EQ(run(isa), want)
          << getIsaName(isa).str() << " output scale " << outputScale;
  }
}

// The epilogue's float sigmoid and SiLU stay within a few float ulp of the
// same functions in double, over the whole range where their results are
// normal floats, and keep NaN; a 1x1 conv on one channel computes
// y = (x - 128) * scale + bias exactly, so y sweeps -96..96.
TEST(Int8Conv, SigmoidAndSiluWithinFloatUlpsOfDouble) {
  ChannelSweep sweep(12);
  const Int8ConvShape &s = sweep.shape;
  const std::vector<uint8_t> &x = sweep.x;
  const std::vector<int8_t> &w = sweep.w;
  for (Activation a : {Activation::Sigmoid, Activation::Silu})
    for (Isa isa : getTestedIsas()) {
      Int8Epilogue e;
      for (int c = 0; c < 12; ++c)
        e.scale.push_back(0.0625f * float(c + 1));
      e.bias.assign(12, 0.0f);
      e.bias[11] = std::numeric_limits<float>::quiet_NaN();
      e.inputZero = 128;
      e.activation = a;
      Int8Conv conv(isa, s, w.data(), e);
      std::vector<float> y(256 * 12);
      std::vector<char> scratch(conv.getScratchBytes() + 64);
      void *aligned = reinterpret_cast<void *>(
          (reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t(63));
      conv.run(x.data(), nullptr, y.data(), 0, conv.getNumRows(), aligned);
      for (int i = 0; i < 256; ++i)
        for (int c = 0; c < 12; ++c) {
          float got = y[i * 12 + c];
          if (c == 11) {
            EXPECT_TRUE(std::isnan(got)) << "NaN in, " << got << " out";
            continue;
          }
          double v = double(float(i - 128) * e.scale[c]);
          double sig = 1.0 / (1.0 + std::exp(-v));
          double want = a == Activation::Sigmoid ? sig : v * sig;
          double ulp = std::nextafter(float(std::fabs(want)), INFINITY) -
                       float(std::fabs(want));
          if (v < -80) // past the clamp: tiny either way
            EXPECT_LT(std::fabs(got), 1e-30) << "at " << v;
          else
            EXPECT_LE(std::fabs(got - want), 4 * ulp)
                << getIsaName(isa).str()
                << (a == Activation::Silu ? " silu" : " sigmoid") << " at " << v
                << ": " << got << " vs " << want;
        }
    }
}

/// Biases b with SiLU(b) / scale on a rounding tie j + 1/2 (from the
/// lowest below SiLU's minimum to 155), or one or two float steps beside
/// one.
std::vector<float> siluTiesOnGrid(float scale) {
  auto silu = [](double v) { return v / (1.0 + std::exp(-v)); };
  std::vector<float> biases;
  for (int j = -20; j < 155; j += 2) {
    double target = (j + 0.5) * scale;
    if (target <= silu(-1.2785)) // below SiLU's minimum
      continue;
    double lo = -1.2785, hi = 200; // SiLU rises on [lo, hi]
    for (int i = 0; i < 100; ++i)
      (silu((lo + hi) / 2) < target ? lo : hi) = (lo + hi) / 2;
    float b = float(lo);
    for (int step = 0; step < 2; ++step)
      b = std::nextafter(b, -INFINITY);
    for (int step = 0; step < 5; ++step, b = std::nextafter(b, INFINITY))
      biases.push_back(b);
  }
  return biases;
}

// SiLU onto a grid divides once, by e^-y * S + S: its bytes are within one
// step of the grid's rounding of SiLU in double, and equal every family's
// to the scalar's, on and beside rounding ties, for output scales that put
// y / S on either side of the u8 range's ends, one below 2^-126 (which
// goes scalar, with two divisions), with a residual before the activation
// and after it (which keeps two divisions).
TEST(Int8Conv, SiluOntoAGridWithinOneStepOfDouble) {
  for (float outputScale : {0.0213f, 0.1f, 0.0913f, 0.75f, 1.705e-39f})
    for (int residualAt : {0, 1, 2}) { // none, before, after the activation
      std::vector<float> ties = siluTiesOnGrid(outputScale);
      ChannelSweep sweep(21 + int64_t(ties.size()));
      const Int8ConvShape &s = sweep.shape;
      std::vector<uint8_t> residual(256 * s.outC);
      for (size_t i = 0; i < residual.size(); ++i)
        residual[i] = uint8_t(i * 37 % 251);
      Int8Epilogue e;
      for (int c = 0; c < 21; ++c) {
        e.scale.push_back(0.01f * float(c + 1) + 0.003f);
        e.bias.push_back(0.125f * float(c % 7) - 0.375f);
      }
      for (float b : ties) { // pixel x = 128 gives y = b exactly
        e.scale.push_back(0.01f);
        e.bias.push_back(b);
      }
      e.inputZero = 128;
      e.activation = Activation::Silu;
      e.hasResidual = residualAt != 0;
      e.residualAfterActivation = residualAt == 2;
      e.residualScale = 0.015625f;
      e.residualZero = 120;
      e.outputScale = outputScale;
      e.outputZero = 100;
      auto run = [&](Isa isa) {
        Int8Conv conv(isa, s, sweep.w.data(), e);
        std::vector<uint8_t> y(256 * s.outC);
        runInTwoCalls(conv, sweep.x.data(), y.data(), nullptr,
                      e.hasResidual ? residual.data() : nullptr);
        return y;
      };
      std::vector<uint8_t> want = run(Isa::Scalar);
      for (int i = 0; i < 256; ++i)
        for (int64_t c = 0; c < s.outC; ++c) {
          float pre = float(i - 128) * e.scale[c] + e.bias[c];
          double r = double(float(int(residual[i * s.outC + c]) - 120) *
                            e.residualScale);
          double v = residualAt == 1 ? double(float(pre + float(r))) : pre;
          double y = v / (1.0 + std::exp(-v)) + (residualAt == 2 ? r : 0.0);
          double q = std::nearbyint(y / outputScale) + 100;
          double exact = std::min(std::max(q, 0.0), 255.0);
          ASSERT_LE(std::fabs(want[i * s.outC + c] - exact), 1)
              << "scale " << outputScale << " residual " << residualAt << " at "
              << v << ": " << int(want[i * s.outC + c]) << " vs " << exact;
        }
      for (Isa isa : getTestedIsas())
        ASSERT_EQ(run(isa), want) << getIsaName(isa).str() << " output scale "
                                  << outputScale << " residual " << residualAt;
    }
}

} // namespace

TEST(Int8Conv, OutputTablesLookUpTheStoredBytes) {
  // Two tables composed onto the conv: every family writes t2[t1[y]] for
  // the byte y the conv alone writes, on every case shape (groups: after
  // all of them; narrow rows: over several rows at once), in two calls.
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> t1(256), t2(256);
  for (int v = 0; v < 256; ++v) {
    t1[v] = uint8_t(byte(rng));
    t2[v] = uint8_t(255 - v);
  }
  for (const Case &c : kCases) {
    const Int8ConvShape &s = c.shape;
    auto operands = randomOperands(s, rng);
    const std::vector<uint8_t> &x = operands.first;
    const std::vector<int8_t> &w = operands.second;
    Int8Epilogue e;
    e.scale = {1.0f / 64};
    e.inputZero = c.inputZero;
    e.activation = Activation::Relu;
    e.outputScale = 0.5f;
    e.outputZero = 30;
    auto run = [&](Isa isa, bool tables) {
      Int8Conv conv(isa, s, w.data(), e);
      if (tables) {
        conv.composeOutputTable(t1);
        conv.composeOutputTable(t2);
      }
      std::vector<uint8_t> y(s.batch * s.outH() * s.outW() * s.outC);
      runInTwoCalls(conv, x.data(), y.data());
      return y;
    };
    std::vector<uint8_t> plain = run(Isa::Scalar, false);
    for (Isa isa : getTestedIsas()) {
      std::vector<uint8_t> looked = run(isa, true);
      for (size_t i = 0; i < plain.size(); ++i)
        ASSERT_EQ(looked[i], t2[t1[plain[i]]])
            << getIsaName(isa).str() << " case " << (&c - kCases) << " element "
            << i;
    }
  }
  // Only 256 entries, and only on an int8 result.
  Int8Epilogue e;
  e.scale = {1.0f};
  e.outputScale = 0.5f;
  e.outputTable.assign(255, 0);
  EXPECT_TRUE(llvm::errorToBool(Int8Conv::checkParams(kCases[0].shape, e)));
  e.outputTable.assign(256, 0);
  EXPECT_FALSE(llvm::errorToBool(Int8Conv::checkParams(kCases[0].shape, e)));
  e.outputScale = 0;
  EXPECT_TRUE(llvm::errorToBool(Int8Conv::checkParams(kCases[0].shape, e)));
}

TEST(Int8Conv, PairArithmeticGivesThePairTablesBytes) {
  // A requantizing Add after the conv (none, relu, clip; scales that are
  // no powers of two, so that many sums round at ties and saturate): its
  // arithmetic computed in the vector epilogue gives the bytes its table
  // gives, looked up, on every family and case shape (16-lane tails,
  // groups, narrow rows), in two calls.
  std::mt19937 rng(29);
  std::uniform_int_distribution<int> byte(0, 255);
  RequantizedAdd add;
  add.scaleV = 0.0731f;
  add.zeroV = 30;
  add.scaleW = 0.05473f;
  add.zeroW = 117;
  add.outputScale = 0.0913f;
  add.outputZero = 140;
  struct Bounds {
    float low, high;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const Bounds kActivations[] = {{-inf, inf}, {0, inf}, {-1.5f, 4.25f}};
  for (const Case &c : kCases) {
    const Int8ConvShape &s = c.shape;
    auto operands = randomOperands(s, rng);
    std::vector<uint8_t> other(s.batch * s.outH() * s.outW() * s.outC);
    for (uint8_t &v : other)
      v = uint8_t(byte(rng));
    Int8Epilogue e;
    e.scale = {1.0f / 64};
    e.inputZero = c.inputZero;
    e.outputScale = 0.5f;
    e.outputZero = add.zeroV;
    for (Bounds b : kActivations) {
      add.low = b.low;
      add.high = b.high;
      std::vector<uint8_t> table(65536);
      for (unsigned v = 0; v < 256; ++v)
        for (unsigned w = 0; w < 256; ++w)
          table[v << 8 | w] = add.apply(uint8_t(v), uint8_t(w));
      auto run = [&](Isa isa, bool arithmetic) {
        Int8Conv conv(isa, s, operands.second.data(), e);
        conv.setPairTable(table);
        if (arithmetic) {
          EXPECT_TRUE(conv.setPairArithmetic(add));
          EXPECT_EQ(conv.hasPairInEpilogue(), isa != Isa::Scalar);
        }
        std::vector<uint8_t> y(other.size());
        runInTwoCalls(conv, operands.first.data(), y.data(), other.data());
        return y;
      };
      std::vector<uint8_t> looked = run(Isa::Scalar, false);
      for (Isa isa : getTestedIsas()) {
        std::vector<uint8_t> computed = run(isa, true);
        for (size_t i = 0; i < looked.size(); ++i)
          ASSERT_EQ(computed[i], looked[i])
              << getIsaName(isa).str() << " case " << (&c - kCases)
              << " bounds " << b.low << ".." << b.high << " element " << i;
      }
    }
  }
  // An arithmetic one entry off its table is refused, by the setter and by
  // checkParams (a plan file's).
  add.low = -inf;
  add.high = inf;
  std::vector<uint8_t> table(65536);
  for (unsigned i = 0; i < 65536; ++i)
    table[i] = add.apply(uint8_t(i >> 8), uint8_t(i));
  EXPECT_TRUE(add.reproduces(table));
  EXPECT_FALSE(add.swapped().reproduces(table));
  table[12345] ^= 1;
  EXPECT_FALSE(add.reproduces(table));
  Int8Epilogue e;
  e.scale = {1.0f};
  e.outputScale = 0.5f;
  e.pairTable = table;
  e.pairArithmetic = add;
  EXPECT_TRUE(llvm::errorToBool(Int8Conv::checkParams(kCases[0].shape, e)));
  table[12345] ^= 1;
  e.pairTable = table;
  EXPECT_FALSE(llvm::errorToBool(Int8Conv::checkParams(kCases[0].shape, e)));
  e.pairTable.clear();
  EXPECT_TRUE(llvm::errorToBool(Int8Conv::checkParams(kCases[0].shape, e)));
  // Zero points past a stored byte (a plan file's): an error before any
  // entry is computed (int32 arithmetic on INT32_MIN would overflow).
  e.pairTable = table;
  table[12345] ^= 1;
  e.pairTable = table;
  for (int32_t zero : {-1, 256, std::numeric_limits<int32_t>::min(),
                       std::numeric_limits<int32_t>::max()}) {
    RequantizedAdd bad = add;
    bad.zeroV = zero;
    e.pairArithmetic = bad;
    std::string error =
        llvm::toString(Int8Conv::checkParams(kCases[0].shape, e));
    EXPECT_NE(error.find("zero point that is not a stored u8 value"),
              std::string::npos)
        << error;
  }
  table[12345] ^= 1;
  e.pairArithmetic.reset();
  Int8Conv conv(Isa::Scalar, kCases[0].shape,
                std::vector<int8_t>(4 * 3 * 9, 1).data(), e);
  table[0] ^= 1;
  conv.setPairTable(table);
  EXPECT_FALSE(conv.setPairArithmetic(add));
  EXPECT_FALSE(conv.getEpilogue().pairArithmetic);
}

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
