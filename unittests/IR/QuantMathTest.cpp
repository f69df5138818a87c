//===- QuantMathTest.cpp - Shared quantization arithmetic -----------------===//

#include "qopt/IR/QuantMath.h"
#include "qopt/Support/FloatFormat.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>

using namespace qopt;
using namespace qopt::quant;

namespace {

std::vector<int64_t> ints(const DenseElements &d) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < d.getNumElements(); ++i)
    out.push_back(d.getAsInt(i));
  return out;
}

std::vector<double> doubles(const DenseElements &d) {
  std::vector<double> out;
  for (int64_t i = 0; i < d.getNumElements(); ++i)
    out.push_back(d.getAsDouble(i));
  return out;
}

std::string errorOf(llvm::Error err) {
  return err ? llvm::toString(std::move(err)) : "success";
}

template <typename T> std::string errorOf(llvm::Expected<T> v) {
  return v ? "success" : llvm::toString(v.takeError());
}

} // namespace

//===----------------------------------------------------------------------===//
// One value
//===----------------------------------------------------------------------===//

TEST(QuantMathTest, TiesRoundHalfToEven) {
  EXPECT_EQ(quantizeValue(2.5f, 1.0f, 0, ElementKind::I8), 2);
  EXPECT_EQ(quantizeValue(3.5f, 1.0f, 0, ElementKind::I8), 4);
  EXPECT_EQ(quantizeValue(-2.5f, 1.0f, 0, ElementKind::I8), -2);
  EXPECT_EQ(quantizeValue(-3.5f, 1.0f, 0, ElementKind::I8), -4);
  EXPECT_EQ(quantizeValue(0.5f, 1.0f, 0, ElementKind::I8), 0);
  // The zero point is added after rounding: 2.5 -> 2, + 10.
  EXPECT_EQ(quantizeValue(2.5f, 1.0f, 10, ElementKind::U8), 12);
  // The division is float32: 0.3f / 0.1f is 3.0000002f, which rounds to 3.
  EXPECT_EQ(quantizeValue(0.3f, 0.1f, 0, ElementKind::I8), 3);
  // 5 / 2 = 2.5 exactly -> 2 (the ONNX test data for QuantizeLinear).
  EXPECT_EQ(quantizeValue(5.0f, 2.0f, 128, ElementKind::U8), 130);
}

TEST(QuantMathTest, SaturatesAtBothEndsOfEveryStorageKind) {
  struct Case {
    ElementKind kind;
    int64_t lo, hi;
  } cases[] = {{ElementKind::I8, -128, 127},
               {ElementKind::U8, 0, 255},
               {ElementKind::I16, -32768, 32767},
               {ElementKind::U16, 0, 65535}};
  for (const Case &c : cases) {
    SCOPED_TRACE(getElementKindName(c.kind).str());
    EXPECT_EQ(quantizeValue(1e9f, 1.0f, 0, c.kind), c.hi);
    EXPECT_EQ(quantizeValue(-1e9f, 1.0f, 0, c.kind), c.lo);
    EXPECT_EQ(quantizeValue(INFINITY, 0.5f, 0, c.kind), c.hi);
    EXPECT_EQ(quantizeValue(-INFINITY, 0.5f, 0, c.kind), c.lo);
    // Just inside and just outside the range (hi + 0.4 rounds down to hi).
    EXPECT_EQ(quantizeValue(static_cast<float>(c.hi), 1.0f, 0, c.kind), c.hi);
    EXPECT_EQ(quantizeValue(static_cast<float>(c.hi) + 1, 1.0f, 0, c.kind),
              c.hi);
    EXPECT_EQ(quantizeValue(static_cast<float>(c.lo) - 1, 1.0f, 0, c.kind),
              c.lo);
    // The zero point shifts the saturation point: x/s + zp is clamped.
    EXPECT_EQ(quantizeValue(static_cast<float>(c.hi), 1.0f, 1, c.kind), c.hi);
    EXPECT_EQ(quantizeValue(static_cast<float>(c.lo), 1.0f, -1, c.kind), c.lo);
    // NaN quantizes to 0 whatever the zero point (not to zp).
    EXPECT_EQ(quantizeValue(NAN, 1.0f, 3, c.kind), 0);
  }
  EXPECT_EQ(saturateToStorage(1e300, ElementKind::I64),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(saturateToStorage(-1e300, ElementKind::I32),
            std::numeric_limits<int32_t>::min());
}

TEST(QuantMathTest, DequantizeIsFloat32AndQuantizeRoundTripsWithinHalfStep) {
  EXPECT_EQ(dequantizeValue(130, 0.5f, 128), 1.0f);
  EXPECT_EQ(dequantizeValue(-128, 0.1f, 0), -128 * 0.1f);
  // float(q - zp) * s in float32, not in double.
  EXPECT_EQ(dequantizeValue(7, 0.1f, 0), 7.0f * 0.1f);
  const float scales[] = {0.02f, 0.0078125f, 1.7f, 3e-5f};
  const int64_t zps[] = {0, 3, -100};
  for (float s : scales)
    for (int64_t zp : zps) {
      // Every x whose quantized value is not saturated.
      float lo = (-128 - zp) * s, hi = (127 - zp) * s;
      int maxErrSteps = 0;
      for (int i = 0; i <= 10000; ++i) {
        float x = lo + (hi - lo) * static_cast<float>(i) / 10000.0f;
        int64_t q = quantizeValue(x, s, zp, ElementKind::I8);
        float back = dequantizeValue(q, s, zp);
        double err = std::fabs(static_cast<double>(back) - x);
        // s/2 plus the float32 rounding of the two operations.
        if (err > s / 2 * (1 + 1e-5))
          ++maxErrSteps;
      }
      EXPECT_EQ(maxErrSteps, 0) << "s=" << s << " zp=" << zp;
    }
}

TEST(QuantMathTest, RequantizeEqualsTheDequantizeQuantizeChain) {
  struct Params {
    float inScale;
    int64_t inZp;
    float outScale;
    int64_t outZp;
    ElementKind out;
  } params[] = {{0.02f, 128, 0.05f, 120, ElementKind::U8},
                {0.1f, 0, 0.0333f, 128, ElementKind::U8},
                {0.0078125f, 128, 0.0078125f, 0, ElementKind::I8},
                {1.0f, 3, 0.3f, -5, ElementKind::I8},
                {0.5f, 100, 0.004f, 0, ElementKind::U16}};
  Context ctx;
  for (const Params &p : params) {
    SCOPED_TRACE(testing::Message() << p.inScale << ":" << p.inZp << " -> "
                                    << p.outScale << ":" << p.outZp);
    auto *from = ctx.getPerTensorQuantType(ElementKind::U8, ElementKind::F32,
                                           p.inScale, p.inZp);
    auto *to =
        ctx.getPerTensorQuantType(p.out, ElementKind::F32, p.outScale, p.outZp);
    std::vector<int64_t> all(256);
    for (int64_t q = 0; q < 256; ++q)
      all[q] = q;
    DenseElementsRef stored = makeDenseInt(ElementKind::U8, {256}, all);
    auto dense = requantizeDense(*stored, from, to);
    ASSERT_TRUE(bool(dense)) << llvm::toString(dense.takeError());
    // The chain as dense constants: DQ to f32, then Q.
    auto mid = dequantizeDense(*stored, from, ElementKind::F32);
    ASSERT_TRUE(bool(mid));
    auto chain = quantizeDense(**mid, to);
    ASSERT_TRUE(bool(chain));
    EXPECT_EQ((*dense)->getRawBytes(), (*chain)->getRawBytes());
    int changed = 0;
    for (int64_t q = 0; q < 256; ++q) {
      int64_t want = quantizeValue(dequantizeValue(q, p.inScale, p.inZp),
                                   p.outScale, p.outZp, p.out);
      EXPECT_EQ(
          requantizeValue(q, p.inScale, p.inZp, p.outScale, p.outZp, p.out),
          want);
      EXPECT_EQ(requantizeValue(q, from, 0, to, 0), want);
      EXPECT_EQ((*dense)->getAsInt(q), want);
      changed += want != q;
    }
    EXPECT_GT(changed, 0); // the parameter pairs do change values
  }
}

TEST(QuantMathTest, RequantizeRoundsThroughAnF16ExpressedType) {
  // DQ to an f16 tensor rounds the intermediate: 1001 * 0.1f = 100.099998f
  // becomes 100.125 in f16.
  Context ctx;
  auto *from =
      ctx.getPerTensorQuantType(ElementKind::I16, ElementKind::F16, 0.1f, 0);
  auto *to =
      ctx.getPerTensorQuantType(ElementKind::I16, ElementKind::F16, 0.01f, 0);
  DenseElementsRef stored = makeDenseInt(ElementKind::I16, {1}, {1001});
  auto mid = dequantizeDense(*stored, from, ElementKind::F16);
  ASSERT_TRUE(bool(mid));
  auto chain = quantizeDense(**mid, to);
  ASSERT_TRUE(bool(chain));
  auto direct = requantizeDense(*stored, from, to);
  ASSERT_TRUE(bool(direct));
  EXPECT_EQ(ints(**direct), ints(**chain));
  // 100.125 / 0.01f = 10012.5f, a tie, rounds to even.
  EXPECT_EQ((*direct)->getAsInt(0), 10012);
  EXPECT_EQ(requantizeValue(1001, from, 0, to, 0), 10012);
  // With f32 in the middle it would be 10010.
  EXPECT_EQ(requantizeValue(1001, 0.1f, 0, 0.01f, 0, ElementKind::I16), 10010);
}

//===----------------------------------------------------------------------===//
// Dense constants
//===----------------------------------------------------------------------===//

TEST(QuantMathTest, PerAxisDenseQuantizeAlongEitherAxis) {
  Context ctx;
  DenseElementsRef x = makeDenseF32({2, 3}, {1, 2, 3, -1, -2, -3});
  // Axis 0: row r uses scale[r], zp[r].
  auto *q0 = ctx.getQuantType(ElementKind::I8, ElementKind::F32, 0,
                              {0.5f, 0.25f}, {0, 10});
  auto r0 = quantizeDense(*x, q0);
  ASSERT_TRUE(bool(r0)) << llvm::toString(r0.takeError());
  EXPECT_EQ((*r0)->getKind(), ElementKind::I8);
  EXPECT_EQ((*r0)->getDims(), llvm::ArrayRef<int64_t>({2, 3}));
  EXPECT_EQ(ints(**r0), (std::vector<int64_t>{2, 4, 6, 6, 2, -2}));
  // Axis 1: column c uses scale[c], zp[c]; 3 / 2 = 1.5 -> 2, -3 / 2 -> -2.
  auto *q1 = ctx.getQuantType(ElementKind::U8, ElementKind::F32, 1,
                              {1.0f, 0.5f, 2.0f}, {100, 0, 128});
  auto r1 = quantizeDense(*x, q1);
  ASSERT_TRUE(bool(r1));
  EXPECT_EQ(ints(**r1), (std::vector<int64_t>{101, 4, 130, 99, 0, 126}));
  // Back to floats: exact here.
  auto back = dequantizeDense(**r0, q0, ElementKind::F32);
  ASSERT_TRUE(bool(back));
  EXPECT_EQ(doubles(**back), (std::vector<double>{1, 2, 3, -1, -2, -3}));
  // Per-axis parameters that do not fit the shape are an error.
  auto *wrong = ctx.getQuantType(ElementKind::I8, ElementKind::F32, 1,
                                 {0.5f, 0.25f}, {0, 0});
  EXPECT_EQ(errorOf(quantizeDense(*x, wrong)),
            "2 channels of !quant.uniform<i8:f32:1, {0.5,0.25}> do not fit "
            "axis 1 of size 3 (shape 2x3)");
  auto *outOfRange = ctx.getQuantType(ElementKind::I8, ElementKind::F32, 2,
                                      {0.5f, 0.25f}, {0, 0});
  EXPECT_NE(errorOf(quantizeDense(*x, outOfRange)), "success");
  // Stored data must have the type's storage kind.
  EXPECT_EQ(errorOf(dequantizeDense(**r1, q0, ElementKind::F32)),
            "stored data of kind u8 does not match the storage of "
            "!quant.uniform<i8:f32:0, {0.5,0.25:10}>");
  EXPECT_NE(errorOf(quantizeDense(**r1, q1)), "success"); // not floats
}

TEST(QuantMathTest, DenseQuantizeReadsHalfAndWritesHalfOnce) {
  Context ctx;
  auto *q =
      ctx.getPerTensorQuantType(ElementKind::I8, ElementKind::F16, 0.1f, 0);
  DenseElementsRef h = makeDense(ElementKind::F16, {3}, {0.25, -1.0, 12.3});
  auto r = quantizeDense(*h, q);
  ASSERT_TRUE(bool(r));
  // f16(12.3) = 12.296875; / 0.1f = 122.96875 -> 123.
  EXPECT_EQ(ints(**r), (std::vector<int64_t>{2, -10, 123}));
  auto back = dequantizeDense(**r, q, ElementKind::F16);
  ASSERT_TRUE(bool(back));
  EXPECT_EQ((*back)->getKind(), ElementKind::F16);
  // 123 * 0.1f = 12.3000002f, rounded once to f16: 12.296875.
  EXPECT_EQ((*back)->getAsDouble(2), 12.296875);
  uint16_t bits;
  std::memcpy(&bits, (*back)->getRawBytes().data() + 4, 2);
  EXPECT_EQ(bits, floatToHalf(123 * 0.1f));
  auto asBf16 = dequantizeDense(**r, q, ElementKind::BF16);
  ASSERT_TRUE(bool(asBf16));
  EXPECT_EQ((*asBf16)->getAsDouble(1), -1.0);
  EXPECT_NE(errorOf(dequantizeDense(**r, q, ElementKind::I32)), "success");
}

//===----------------------------------------------------------------------===//
// Fixed-point multiplier
//===----------------------------------------------------------------------===//

TEST(QuantMathTest, FixedPointMultiplierIsWithinOneOfTheRealProduct) {
  std::mt19937_64 rng(20240611);
  std::vector<double> reals = {1.0,
                               0.5,
                               0.75,
                               0.999999999,
                               1.0000001,
                               2.0,
                               3.3,
                               1e-6,
                               7.8125e-3,
                               0.0001234,
                               123.456,
                               65535.5,
                               std::ldexp(1.0, -31),
                               std::ldexp(1.0, 20) - 1};
  std::uniform_real_distribution<double> logUniform(-31, 20);
  for (int i = 0; i < 2000; ++i)
    reals.push_back(std::exp2(logUniform(rng)));
  std::vector<int32_t> accs = {0,
                               1,
                               -1,
                               2,
                               -2,
                               3,
                               1000,
                               -1000,
                               65535,
                               -65536,
                               1 << 24,
                               -(1 << 24),
                               INT32_MAX,
                               INT32_MIN,
                               INT32_MAX - 1,
                               INT32_MIN + 1};
  std::uniform_int_distribution<int32_t> any(INT32_MIN, INT32_MAX);
  std::uniform_int_distribution<int32_t> small(-(1 << 20), 1 << 20);
  for (int i = 0; i < 500; ++i) {
    accs.push_back(any(rng));
    accs.push_back(small(rng));
  }
  long double maxError = 0, maxFromExact = 0;
  int64_t checked = 0, saturated = 0, offByOne = 0;
  for (double real : reals) {
    FixedPointMultiplier m = computeFixedPointMultiplier(real);
    ASSERT_GE(m.multiplier, 1 << 30) << real;
    ASSERT_LT(int64_t(m.multiplier), int64_t(1) << 31) << real;
    // multiplier * 2^(shift - 31) represents real to 2^-31 relative.
    EXPECT_NEAR(std::ldexp(static_cast<double>(m.multiplier), m.shift - 31),
                real, std::ldexp(1.0, m.shift - 32))
        << real;
    EXPECT_EQ(m.shift > 0, real >= 1.0) << real;
    for (int32_t acc : accs) {
      long double exact = static_cast<long double>(acc) * real;
      long double rounded = std::round(exact);
      int32_t got = applyFixedPointMultiplier(acc, m);
      if (rounded > INT32_MAX || rounded < INT32_MIN) {
        EXPECT_EQ(got, rounded > 0 ? INT32_MAX : INT32_MIN)
            << acc << " " << real;
        ++saturated;
        continue;
      }
      long double err = std::fabs(static_cast<long double>(got) - rounded);
      maxError = std::max(maxError, err);
      maxFromExact = std::max(maxFromExact,
                              std::fabs(static_cast<long double>(got) - exact));
      ++checked;
      offByOne += err != 0;
      ASSERT_LE(err, 1) << "acc " << acc << " real " << real << " got " << got;
    }
  }
  std::cout << "[ fixed-point ] " << checked << " products, " << saturated
            << " saturated; max |result - round(acc * real)| = "
            << static_cast<double>(maxError) << " (" << offByOne
            << " off by one), max |result - acc * real| = "
            << static_cast<double>(maxFromExact) << "\n";
  EXPECT_GT(saturated, 0);
  EXPECT_GT(checked, 1000000);
  // Exact cases and ties: powers of two and halves.
  FixedPointMultiplier half = computeFixedPointMultiplier(0.5);
  EXPECT_EQ(half.multiplier, 1 << 30);
  EXPECT_EQ(half.shift, 0);
  EXPECT_EQ(applyFixedPointMultiplier(100, half), 50);
  // Ties of the doubling high multiply go toward +infinity (gemmlowp).
  EXPECT_EQ(applyFixedPointMultiplier(3, half), 2);
  EXPECT_EQ(applyFixedPointMultiplier(-3, half), -1);
  // Ties of the right shift go away from zero: -2 * 0.25 = -0.5 -> -1.
  FixedPointMultiplier quarter = computeFixedPointMultiplier(0.25);
  EXPECT_EQ(quarter.shift, -1);
  EXPECT_EQ(applyFixedPointMultiplier(-2, quarter), -1);
  EXPECT_EQ(applyFixedPointMultiplier(2, quarter), 1);
  EXPECT_EQ(applyFixedPointMultiplier(1000, computeFixedPointMultiplier(4.0)),
            4000);
  // A left shift does not overflow before the multiply: 2^21 * 1024.5.
  EXPECT_EQ(
      applyFixedPointMultiplier(1 << 21, computeFixedPointMultiplier(1024.5)),
      INT32_MAX);
  EXPECT_EQ(
      applyFixedPointMultiplier(1 << 20, computeFixedPointMultiplier(1024.5)),
      (1 << 30) + (1 << 19));
  FixedPointMultiplier zero = computeFixedPointMultiplier(0.0);
  EXPECT_EQ(zero.multiplier, 0);
  EXPECT_EQ(applyFixedPointMultiplier(INT32_MAX, zero), 0);
}

//===----------------------------------------------------------------------===//
// Builders
//===----------------------------------------------------------------------===//

TEST(QuantMathTest, BuildersWriteLittleEndianTypedElements) {
  DenseElementsRef i = makeDenseInt(ElementKind::I16, {2, 2}, {-1, 2, 300, 0});
  EXPECT_EQ(i->getKind(), ElementKind::I16);
  EXPECT_EQ(i->getDims(), llvm::ArrayRef<int64_t>({2, 2}));
  EXPECT_EQ(i->getRawBytes(),
            llvm::StringRef("\xff\xff\x02\x00\x2c\x01\x00\x00", 8));
  EXPECT_EQ(ints(*i), (std::vector<int64_t>{-1, 2, 300, 0}));
  DenseElementsRef f = makeDenseF32({3}, {0.5f, -2.0f, 1e-3f});
  EXPECT_EQ(doubles(*f), (std::vector<double>{0.5, -2.0, double(1e-3f)}));
  // Doubles round once to the float kind.
  DenseElementsRef h = makeDense(ElementKind::F16, {1}, {0.1});
  EXPECT_EQ(h->getAsDouble(0), halfToFloat(floatToHalf(0.1f)));
  DenseElementsRef u = makeDense(ElementKind::U64, {1}, {1e19});
  EXPECT_EQ(static_cast<uint64_t>(u->getAsInt(0)), 10000000000000000000ull);
  DenseElementsRef s = makeDense(ElementKind::I32, {}, {-7});
  EXPECT_EQ(s->getNumElements(), 1);
  EXPECT_EQ(s->getAsInt(0), -7);
#ifdef NDEBUG
  // Release builds saturate what the assert would have caught.
  EXPECT_EQ(ints(*makeDenseInt(ElementKind::I8, {2}, {300, -300})),
            (std::vector<int64_t>{127, -128}));
  EXPECT_EQ(ints(*makeDense(ElementKind::U8, {2}, {-1.0, 2.7})),
            (std::vector<int64_t>{0, 2}));
#else
  EXPECT_DEATH(makeDenseInt(ElementKind::I8, {2}, {300, -300}), "out of range");
  EXPECT_DEATH(makeDense(ElementKind::U8, {1}, {2.5}), "does not fit");
  EXPECT_DEATH(makeDenseF32({2}, {1.0f}), "one value per element");
#endif
}

//===----------------------------------------------------------------------===//
// Layout transforms
//===----------------------------------------------------------------------===//

TEST(QuantMathTest, TransposeOfPerAxisConstantRemapsTheAxis) {
  Context ctx;
  // 2x3x4 along axis 1 (3 channels).
  auto *q = ctx.getQuantType(ElementKind::I8, ElementKind::F32, 1,
                             {0.5f, 0.25f, 2.0f}, {1, -2, 0});
  std::vector<int64_t> values(24);
  for (int64_t i = 0; i < 24; ++i)
    values[i] = i * 5 - 60;
  DenseElementsRef w = makeDenseInt(ElementKind::I8, {2, 3, 4}, values);
  std::vector<int64_t> perm = {2, 0, 1};
  auto axis = remapAxisThroughTranspose(perm, q->getAxis());
  ASSERT_TRUE(bool(axis));
  EXPECT_EQ(*axis, 2);
  DenseElementsRef t = transposeDense(*w, perm);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->getDims(), llvm::ArrayRef<int64_t>({4, 2, 3}));
  // t[k][a][b] = w[a][b][k].
  EXPECT_EQ(t->getAsInt(1 * 6 + 1 * 3 + 2), w->getAsInt(1 * 12 + 2 * 4 + 1));
  const QuantType *tq = withAxis(ctx, q, *axis);
  EXPECT_EQ(tq->getAxis(), 2);
  EXPECT_EQ(tq->getScales(), q->getScales());
  // Dequantizing the transposed constant = transposing the dequantized one.
  auto dqT = dequantizeDense(*t, tq, ElementKind::F32);
  auto dq = dequantizeDense(*w, q, ElementKind::F32);
  ASSERT_TRUE(dqT && dq);
  EXPECT_EQ((*dqT)->getRawBytes(), transposeDense(**dq, perm)->getRawBytes());
  // The old axis no longer fits the transposed data.
  EXPECT_NE(errorOf(dequantizeDense(*t, q, ElementKind::F32)), "success");
  // Per-tensor types have no axis to move.
  auto *pt =
      ctx.getPerTensorQuantType(ElementKind::I8, ElementKind::F32, 0.5f, 0);
  EXPECT_EQ(withAxis(ctx, pt, 3), pt);
  // Negative axes count from the end; bad perms are errors.
  EXPECT_EQ(*remapAxisThroughTranspose(perm, -1), 0);
  EXPECT_EQ(errorOf(remapAxisThroughTranspose({0, 0, 1}, 1)),
            "perm [0,0,1] is not a permutation of 0..2");
  EXPECT_EQ(errorOf(remapAxisThroughTranspose({1, 0}, 2)),
            "axis 2 is out of range for rank 2");
  EXPECT_EQ(errorOf(checkPermutation({1, 0}, 3)),
            "perm [1,0] has 2 entries for rank 3");
  EXPECT_EQ(errorOf(checkPermutation({2, 0, 1}, 3)), "success");
  // Strings transpose too.
  DenseElements strs({2, 2}, std::vector<std::string>{"a", "b", "c", "d"});
  EXPECT_EQ(transposeDense(strs, {1, 0})->getStrings(),
            llvm::ArrayRef<std::string>({"a", "c", "b", "d"}));
}

TEST(QuantMathTest, ReshapeOfPerAxisConstantKeepsAnIntactAxis) {
  Context ctx;
  auto *q = ctx.getQuantType(ElementKind::I8, ElementKind::F32, 1,
                             {0.5f, 0.25f, 2.0f}, {1, -2, 0});
  std::vector<int64_t> values(24);
  for (int64_t i = 0; i < 24; ++i)
    values[i] = 60 - i * 5;
  DenseElementsRef w = makeDenseInt(ElementKind::I8, {2, 3, 4}, values);
  struct Case {
    std::vector<int64_t> outShape;
    int64_t axis;
  } cases[] = {{{2, 3, 2, 2}, 1},
               {{1, 2, 3, 4}, 2},
               {{2, 3, 4, 1}, 1},
               {{2, 1, 3, 4}, 2},
               {{2, 3, 4}, 1}};
  auto dq = dequantizeDense(*w, q, ElementKind::F32);
  ASSERT_TRUE(bool(dq));
  for (const Case &c : cases) {
    auto axis = remapAxisThroughReshape({2, 3, 4}, c.outShape, 1);
    ASSERT_TRUE(bool(axis)) << llvm::toString(axis.takeError());
    EXPECT_EQ(*axis, c.axis);
    DenseElementsRef r = reshapeDense(*w, c.outShape);
    ASSERT_TRUE(r);
    auto dqR = dequantizeDense(*r, withAxis(ctx, q, *axis), ElementKind::F32);
    ASSERT_TRUE(bool(dqR)) << llvm::toString(dqR.takeError());
    EXPECT_EQ((*dqR)->getRawBytes(), (*dq)->getRawBytes());
    EXPECT_EQ((*dqR)->getDims(), llvm::ArrayRef<int64_t>(c.outShape));
  }
  // Flattening the dims before the axis keeps it too: 2x3x4 axis 2 -> 6x4.
  EXPECT_EQ(*remapAxisThroughReshape({2, 3, 4}, {6, 4}, 2), 1);
  EXPECT_EQ(*remapAxisThroughReshape({2, 3, 4}, {6, 4}, -1), 1);
}

TEST(QuantMathTest, ReshapeThatBreaksTheAxisIsRefusedWithTheSizes) {
  EXPECT_EQ(errorOf(remapAxisThroughReshape({64, 27}, {1728}, 0)),
            "axis 0 of size 64 is merged with axis 1 of size 27 by the "
            "reshape from 64x27 to 1728");
  EXPECT_EQ(errorOf(remapAxisThroughReshape({8, 8, 27}, {64, 27}, 1)),
            "axis 1 of size 8 is merged with axis 0 of size 8 by the "
            "reshape from 8x8x27 to 64x27");
  EXPECT_EQ(errorOf(remapAxisThroughReshape({64, 3, 9}, {64, 27}, 1)),
            "axis 1 of size 3 is merged with axis 2 of size 9 by the "
            "reshape from 64x3x9 to 64x27");
  EXPECT_EQ(errorOf(remapAxisThroughReshape({64, 27}, {8, 8, 27}, 0)),
            "axis 0 of size 64 is split by the reshape from 64x27 to 8x8x27 "
            "(output axis 0 has size 8)");
  // Same sizes in another order is not the same dimension.
  EXPECT_EQ(errorOf(remapAxisThroughReshape({6, 4}, {4, 6}, 0)),
            "axis 0 of size 6 is split by the reshape from 6x4 to 4x6 "
            "(output axis 0 has size 4)");
  EXPECT_EQ(errorOf(remapAxisThroughReshape({6, 4}, {5, 4}, 0)),
            "the reshape from 6x4 to 5x4 changes the number of elements (24 "
            "to 20)");
  EXPECT_EQ(errorOf(remapAxisThroughReshape({-1, 4}, {4, -1}, 1)),
            "the reshape from -1x4 to 4x-1 needs static shapes to follow "
            "axis 1");
  EXPECT_EQ(errorOf(remapAxisThroughReshape({6, 4}, {24}, 2)),
            "axis 2 is out of range for rank 2");
}
