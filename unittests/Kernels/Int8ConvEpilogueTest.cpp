//===- Int8ConvEpilogueTest.cpp - the int8 conv epilogue, every family ----===//

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

namespace {

TEST(Int8Conv, RuntimeGridGivesTheStaticConvsBits) {
  // A GEMM as a 1x1 conv over 37 rows: built with input zero point 0 and
  // the weight scales, run on a grid given at run time (dynamic
  // quantization), it gives the bits of the same conv built for that grid,
  // with and without weight zero points, per channel and per tensor.
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(0, 255);
  Int8ConvShape s = shapeOf(1, 37, 1, 70, 40, 1, 1, 0, 1, 1);
  std::vector<int8_t> w(size_t(s.outC * s.inC));
  for (int8_t &v : w)
    v = int8_t(byte(rng) - 128);
  std::vector<uint8_t> x(size_t(s.inH * s.inC));
  for (uint8_t &v : x)
    v = uint8_t(byte(rng));
  for (bool perChannel : {true, false})
    for (bool weightZeros : {false, true}) {
      Int8Epilogue e;
      for (int64_t c = 0; c < (perChannel ? s.outC : 1); ++c)
        e.scale.push_back(0.0031f * float(c + 1));
      for (int64_t c = 0; c < s.outC; ++c)
        e.bias.push_back(0.5f - 0.03f * float(c));
      if (weightZeros)
        for (int64_t c = 0; c < s.outC; ++c)
          e.weightZero.push_back(int32_t(c % 7) - 3);
      const float inputScale = 0.0377f;
      const int32_t inputZero = 131;
      Int8Epilogue fixed = e;
      fixed.inputZero = inputZero;
      for (float &scale : fixed.scale)
        scale = inputScale * scale;
      for (Isa isa : getTestedIsas()) {
        Int8Conv dynamic(isa, s, w.data(), e), known(isa, s, w.data(), fixed);
        ASSERT_TRUE(dynamic.takesRuntimeGrid());
        std::vector<float> scales(size_t(s.outC));
        std::vector<int32_t> zeroTerms(size_t(s.outC));
        Int8RuntimeGrid grid = dynamic.fillRuntimeGrid(
            inputScale, inputZero, scales.data(), zeroTerms.data());
        std::vector<float> got(size_t(s.inH * s.outC)), want(got.size());
        std::vector<char> scratch(dynamic.getScratchBytes() + 64);
        void *aligned = scratch.data() + (64 - uintptr_t(scratch.data()) % 64);
        dynamic.forEachTileRun(
            0, dynamic.getNumTiles(),
            [&](int64_t rowBegin, int64_t rowEnd, int64_t blockBegin,
                int64_t blockEnd) {
              dynamic.runRows(x.data(), nullptr, got.data(), rowBegin, rowEnd,
                              blockBegin, blockEnd, aligned, nullptr, &grid);
            });
        std::vector<char> scratch2(known.getScratchBytes() + 64);
        void *aligned2 =
            scratch2.data() + (64 - uintptr_t(scratch2.data()) % 64);
        known.run(x.data(), nullptr, want.data(), 0, s.inH, aligned2);
        ASSERT_EQ(
            std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
            << getIsaName(isa).str() << (perChannel ? " per channel" : "")
            << (weightZeros ? " with weight zero points" : "");
      }
    }
}

} // namespace
