//===- Float8.cpp - The ONNX float8 formats -------------------------------===//
//
// A code's value comes from its fields. A value's code is found among the
// positive finite codes, whose values grow with the code: the largest code
// not above |v|, then the nearer of it and the next, a tie to the even code
// (the one whose mantissa ends in 0). Sums of two such values and twice an
// f32 or f64 input are exact in double, so the comparison is too.
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/Float8.h"

#include <cmath>
#include <limits>

using namespace qopt;

namespace {
enum class Specials { FiniteOnly, NanAllOnes, NanOnly0x80, Ieee };

struct Format {
  int exponentBits, mantissaBits, bias;
  Specials specials;
  /// The largest positive finite code.
  uint8_t maxCode;
  /// The sign bit (the code's top bit).
  uint8_t signBit = 0x80;
};

Format formatOf(ElementKind kind) {
  switch (kind) {
  case ElementKind::F8E4M3FN:
    return {4, 3, 7, Specials::NanAllOnes, 0x7E};
  case ElementKind::F8E4M3FNUZ:
    return {4, 3, 8, Specials::NanOnly0x80, 0x7F};
  case ElementKind::F8E5M2:
    return {5, 2, 15, Specials::Ieee, 0x7B};
  case ElementKind::F8E5M2FNUZ:
    return {5, 2, 16, Specials::NanOnly0x80, 0x7F};
  case ElementKind::F4E2M1:
    return {2, 1, 1, Specials::FiniteOnly, 0x7, 0x08};
  default:
    return {4, 3, 7, Specials::NanAllOnes, 0x7E};
  }
}

/// The value of a positive code (no sign bit) that is finite.
double magnitude(uint8_t code, const Format &f) {
  int exponent = code >> f.mantissaBits;
  int mantissa = code & ((1 << f.mantissaBits) - 1);
  if (exponent == 0) // subnormal
    return std::ldexp(double(mantissa), 1 - f.bias - f.mantissaBits);
  return std::ldexp(double((1 << f.mantissaBits) + mantissa),
                    exponent - f.bias - f.mantissaBits);
}

uint8_t nanCode(const Format &f, bool negative) {
  if (f.specials == Specials::NanOnly0x80)
    return 0x80;
  return uint8_t(0x7F | (negative ? 0x80 : 0));
}

/// What a value too large for the format becomes without saturation.
uint8_t overflowCode(const Format &f, bool negative) {
  if (f.specials == Specials::Ieee)
    return uint8_t(0x7C | (negative ? 0x80 : 0)); // infinity
  return nanCode(f, negative);
}
} // namespace

double qopt::decodeFloat8(uint8_t code, ElementKind kind) {
  Format f = formatOf(kind);
  code &= uint8_t(f.signBit | (f.signBit - 1));
  bool negative = code & f.signBit;
  uint8_t positive = code & (f.signBit - 1);
  switch (f.specials) {
  case Specials::NanOnly0x80:
    if (code == 0x80)
      return std::numeric_limits<double>::quiet_NaN();
    break;
  case Specials::NanAllOnes:
    if (positive == 0x7F)
      return negative ? -std::numeric_limits<double>::quiet_NaN()
                      : std::numeric_limits<double>::quiet_NaN();
    break;
  case Specials::Ieee:
    if ((positive >> f.mantissaBits) == (1 << f.exponentBits) - 1) {
      if ((positive & ((1 << f.mantissaBits) - 1)) == 0)
        return negative ? -HUGE_VAL : HUGE_VAL;
      return negative ? -std::numeric_limits<double>::quiet_NaN()
                      : std::numeric_limits<double>::quiet_NaN();
    }
    break;
  case Specials::FiniteOnly:
    break;
  }
  double v = magnitude(positive, f);
  return negative ? -v : v;
}

uint8_t qopt::encodeFloat8(double v, ElementKind kind, bool saturate) {
  Format f = formatOf(kind);
  bool negative = std::signbit(v);
  uint8_t sign = negative ? f.signBit : 0;
  if (std::isnan(v))
    return f.specials == Specials::FiniteOnly ? uint8_t(f.maxCode | sign)
                                              : nanCode(f, negative);
  // FNUZ formats have no -0: a negative value that rounds to 0 is +0.
  auto withSign = [&](uint8_t code) -> uint8_t {
    if (code == 0 && f.specials == Specials::NanOnly0x80)
      return 0;
    return uint8_t(code | sign);
  };
  double a = std::fabs(v);
  double max = magnitude(f.maxCode, f);
  if (f.specials == Specials::FiniteOnly)
    saturate = true; // nothing else to become
  if (std::isinf(a))
    return saturate ? uint8_t(f.maxCode | sign) : overflowCode(f, negative);
  // The largest code whose value is not above a (codes grow with values).
  int lo = 0, hi = f.maxCode;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (magnitude(uint8_t(mid), f) <= a)
      lo = mid;
    else
      hi = mid - 1;
  }
  uint8_t below = uint8_t(lo);
  double at = magnitude(below, f);
  if (at == a)
    return withSign(below);
  // The next value up: past the largest finite one, the step it would
  // have (the same spacing as the code below it).
  double above = below < f.maxCode
                     ? magnitude(uint8_t(below + 1), f)
                     : max + (max - magnitude(uint8_t(f.maxCode - 1), f));
  bool up;
  if (2 * a != at + above)
    up = 2 * a > at + above;
  else
    up = (below & 1) != 0; // a tie: to the even code
  if (!up)
    return withSign(below);
  if (below == f.maxCode)
    return saturate ? uint8_t(f.maxCode | sign) : overflowCode(f, negative);
  return withSign(uint8_t(below + 1));
}
