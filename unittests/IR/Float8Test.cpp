//===- Float8Test.cpp - The ONNX float8 formats, code by code -------------===//

#include "qopt/IR/Float8.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>

using namespace qopt;

namespace {

const ElementKind kKinds[] = {ElementKind::F8E4M3FN, ElementKind::F8E4M3FNUZ,
                              ElementKind::F8E5M2, ElementKind::F8E5M2FNUZ};

bool isNanCode(uint8_t code, ElementKind kind) {
  return std::isnan(decodeFloat8(code, kind));
}

} // namespace

// Every code that is a number converts back to itself (an infinity only
// without saturation); the codes that are NaN are the documented ones.
TEST(Float8, EveryCodeRoundTrips) {
  for (ElementKind kind : kKinds) {
    int nans = 0;
    for (int c = 0; c < 256; ++c) {
      uint8_t code = uint8_t(c);
      double v = decodeFloat8(code, kind);
      if (std::isnan(v)) {
        ++nans;
        continue;
      }
      // An infinity (F8E5M2's) saturates to the largest finite value.
      uint8_t saturated = std::isinf(v) ? uint8_t(0x7B | (code & 0x80)) : code;
      EXPECT_EQ(encodeFloat8(v, kind, true), saturated)
          << getElementKindName(kind).str() << " code " << c;
      EXPECT_EQ(encodeFloat8(v, kind, false), code)
          << getElementKindName(kind).str() << " code " << c;
    }
    int expected = kind == ElementKind::F8E4M3FN ? 2  // S.1111.111
                   : kind == ElementKind::F8E5M2 ? 6  // S.11111.{01,10,11}
                                                 : 1; // 0x80
    EXPECT_EQ(nans, expected) << getElementKindName(kind).str();
  }
}

// The largest values, the smallest subnormals, infinities and signed
// zeros as ONNX's tables give them.
TEST(Float8, KnownValues) {
  EXPECT_EQ(decodeFloat8(0x7E, ElementKind::F8E4M3FN), 448.0);
  EXPECT_EQ(decodeFloat8(0x7F, ElementKind::F8E4M3FNUZ), 240.0);
  EXPECT_EQ(decodeFloat8(0x7B, ElementKind::F8E5M2), 57344.0);
  EXPECT_EQ(decodeFloat8(0x7F, ElementKind::F8E5M2FNUZ), 57344.0);
  EXPECT_EQ(decodeFloat8(0x01, ElementKind::F8E4M3FN), std::ldexp(1.0, -9));
  EXPECT_EQ(decodeFloat8(0x01, ElementKind::F8E4M3FNUZ), std::ldexp(1.0, -10));
  EXPECT_EQ(decodeFloat8(0x01, ElementKind::F8E5M2), std::ldexp(1.0, -16));
  EXPECT_EQ(decodeFloat8(0x01, ElementKind::F8E5M2FNUZ), std::ldexp(1.0, -17));
  EXPECT_EQ(decodeFloat8(0x7C, ElementKind::F8E5M2), HUGE_VAL);
  EXPECT_EQ(decodeFloat8(0xFC, ElementKind::F8E5M2), -HUGE_VAL);
  EXPECT_TRUE(std::signbit(decodeFloat8(0x80, ElementKind::F8E4M3FN)));
  double inf = std::numeric_limits<double>::infinity();
  double nan = std::numeric_limits<double>::quiet_NaN();
  // Saturated (the default) and not.
  EXPECT_EQ(encodeFloat8(inf, ElementKind::F8E4M3FN, true), 0x7E);
  EXPECT_EQ(encodeFloat8(-inf, ElementKind::F8E4M3FN, true), 0xFE);
  EXPECT_EQ(encodeFloat8(inf, ElementKind::F8E4M3FN, false), 0x7F);
  EXPECT_EQ(encodeFloat8(inf, ElementKind::F8E5M2, false), 0x7C);
  EXPECT_EQ(encodeFloat8(-inf, ElementKind::F8E5M2, false), 0xFC);
  EXPECT_EQ(encodeFloat8(inf, ElementKind::F8E4M3FNUZ, false), 0x80);
  EXPECT_EQ(encodeFloat8(1e6, ElementKind::F8E5M2FNUZ, true), 0x7F);
  EXPECT_EQ(encodeFloat8(1e6, ElementKind::F8E5M2FNUZ, false), 0x80);
  EXPECT_EQ(encodeFloat8(nan, ElementKind::F8E4M3FNUZ), 0x80);
  EXPECT_TRUE(isNanCode(encodeFloat8(nan, ElementKind::F8E4M3FN),
                        ElementKind::F8E4M3FN));
  EXPECT_TRUE(
      isNanCode(encodeFloat8(nan, ElementKind::F8E5M2), ElementKind::F8E5M2));
  // -0: kept where the format has it, +0 in the FNUZ formats.
  EXPECT_EQ(encodeFloat8(-0.0, ElementKind::F8E4M3FN), 0x80);
  EXPECT_EQ(encodeFloat8(-0.0, ElementKind::F8E4M3FNUZ), 0x00);
  EXPECT_EQ(encodeFloat8(-1e-9, ElementKind::F8E5M2FNUZ), 0x00);
  // Past the largest value: below the midpoint to the next step it
  // rounds back; at it, to the even code (448 = 0x7E is even: stays;
  // 57344 = 0x7B is odd: overflows).
  EXPECT_EQ(encodeFloat8(456.96, ElementKind::F8E4M3FN, false), 0x7E);
  EXPECT_EQ(encodeFloat8(464.0, ElementKind::F8E4M3FN, false), 0x7E);
  EXPECT_EQ(encodeFloat8(464.5, ElementKind::F8E4M3FN, false), 0x7F);
  EXPECT_EQ(encodeFloat8(61439.0, ElementKind::F8E5M2, false), 0x7B);
  EXPECT_EQ(encodeFloat8(61440.0, ElementKind::F8E5M2, false), 0x7C);
  EXPECT_EQ(encodeFloat8(61440.0, ElementKind::F8E5M2, true), 0x7B);
}

// Between two neighbouring codes: the nearer, and at the midpoint the
// even one, subnormals included.
TEST(Float8, RoundsToNearestEven) {
  for (ElementKind kind : kKinds) {
    for (int c = 0; c < 0x7F; ++c) {
      double lo = decodeFloat8(uint8_t(c), kind);
      double hi = decodeFloat8(uint8_t(c + 1), kind);
      if (std::isnan(lo) || std::isnan(hi) || std::isinf(hi))
        continue;
      double mid = (lo + hi) / 2;
      uint8_t even = (c & 1) ? uint8_t(c + 1) : uint8_t(c);
      EXPECT_EQ(encodeFloat8(mid, kind), even)
          << getElementKindName(kind).str() << " between " << c;
      EXPECT_EQ(encodeFloat8(std::nextafter(mid, lo), kind), uint8_t(c));
      EXPECT_EQ(encodeFloat8(std::nextafter(mid, hi), kind), uint8_t(c + 1));
      // Negative values mirror (FNUZ: no -0, so not the zero code).
      if (c > 0)
        EXPECT_EQ(encodeFloat8(-mid, kind), uint8_t(even | 0x80));
    }
  }
}

// FLOAT4E2M1 (opset 23): every code's value as ONNX's table lists it, the
// ties of its rounding, and saturation: no NaN or infinity to become.
TEST(Float8, Float4E2M1) {
  const double values[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (int c = 0; c < 8; ++c) {
    EXPECT_EQ(decodeFloat8(uint8_t(c), ElementKind::F4E2M1), values[c]);
    EXPECT_EQ(decodeFloat8(uint8_t(c | 0x8), ElementKind::F4E2M1), -values[c]);
    EXPECT_EQ(encodeFloat8(values[c], ElementKind::F4E2M1), c);
    EXPECT_EQ(encodeFloat8(-values[c], ElementKind::F4E2M1), c | 0x8);
  }
  // Midpoints go to the even code: 0.25 -> 0, 0.75 -> 1, 1.25 -> 1,
  // 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4.
  const std::pair<double, uint8_t> ties[] = {
      {0.25, 0}, {0.75, 2}, {1.25, 2}, {1.75, 4}, {2.5, 4}, {3.5, 6}, {5.0, 6}};
  for (auto [v, code] : ties)
    EXPECT_EQ(encodeFloat8(v, ElementKind::F4E2M1), code) << v;
  EXPECT_EQ(encodeFloat8(5.01, ElementKind::F4E2M1), 7);
  // Past 6, infinities and (with their sign) NaN: 6, saturate or not.
  EXPECT_EQ(encodeFloat8(100.0, ElementKind::F4E2M1, false), 7);
  EXPECT_EQ(encodeFloat8(-HUGE_VAL, ElementKind::F4E2M1), 0xF);
  EXPECT_EQ(encodeFloat8(std::nan(""), ElementKind::F4E2M1), 7);
  EXPECT_EQ(encodeFloat8(-0.0, ElementKind::F4E2M1), 0x8);
  // Only the low four bits of a code count.
  EXPECT_EQ(decodeFloat8(0xF7, ElementKind::F4E2M1), 6.0);
}
