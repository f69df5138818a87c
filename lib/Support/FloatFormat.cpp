//===- FloatFormat.cpp - Shortest round-tripping float text ---------------===//

#include "qopt/Support/FloatFormat.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

using namespace qopt;

namespace {
template <typename T, typename Bits>
std::string formatImpl(T value, bool forceDecimalPoint) {
  if (std::isnan(value)) {
    Bits bits;
    std::memcpy(&bits, &value, sizeof(bits));
    char buf[32];
    snprintf(buf, sizeof(buf), sizeof(Bits) == 4 ? "0x%08llX" : "0x%016llX",
             static_cast<unsigned long long>(bits));
    return buf;
  }
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), value);
  std::string text(buf, res.ptr);
  if (forceDecimalPoint && text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return text;
}

template <typename T, typename Bits>
std::optional<T> parseImpl(llvm::StringRef text) {
  text = text.trim();
  if (text == "inf" || text == "+inf")
    return std::numeric_limits<T>::infinity();
  if (text == "-inf")
    return -std::numeric_limits<T>::infinity();
  if (text == "nan")
    return std::numeric_limits<T>::quiet_NaN();
  if (text.startswith("0x") || text.startswith("0X")) {
    uint64_t bits;
    if (text.drop_front(2).getAsInteger(16, bits))
      return std::nullopt;
    if (sizeof(Bits) == 4 && bits > 0xFFFFFFFFull)
      return std::nullopt;
    Bits narrow = static_cast<Bits>(bits);
    T value;
    std::memcpy(&value, &narrow, sizeof(value));
    return value;
  }
  llvm::StringRef body = text;
  if (body.startswith("+"))
    body = body.drop_front();
  T value{};
  auto res = std::from_chars(body.begin(), body.end(), value);
  if (res.ec != std::errc() || res.ptr != body.end())
    return std::nullopt;
  return value;
}
} // namespace

std::string qopt::formatFloat(float value, bool forceDecimalPoint) {
  return formatImpl<float, uint32_t>(value, forceDecimalPoint);
}
std::string qopt::formatDouble(double value, bool forceDecimalPoint) {
  return formatImpl<double, uint64_t>(value, forceDecimalPoint);
}
std::optional<float> qopt::parseFloat(llvm::StringRef text) {
  return parseImpl<float, uint32_t>(text);
}
std::optional<double> qopt::parseDouble(llvm::StringRef text) {
  return parseImpl<double, uint64_t>(text);
}

float qopt::roundToFloatOdd(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(v) || std::isinf(v) || static_cast<double>(f) == v)
    return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(v))
    f = std::nextafter(f, 0.0f); // truncate toward zero
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= 1; // inexact: make the last bit sticky
  std::memcpy(&f, &bits, 4);
  return f;
}

float qopt::halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3FF;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t qopt::floatToHalf(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7FFFFFFFu;
  if (absx >= 0x7F800000u) // inf or nan
    return static_cast<uint16_t>(
        sign | 0x7C00u |
        (absx > 0x7F800000u ? 0x200u | ((absx >> 13) & 0x3FF) : 0));
  if (absx >= 0x477FF000u) // rounds to >= 65520: overflow to inf
    return static_cast<uint16_t>(sign | 0x7C00u);
  if (absx < 0x38800000u) { // subnormal half or zero
    float f;
    uint32_t a = absx;
    std::memcpy(&f, &a, 4);
    // 2^-24 is the half subnormal step; nearbyint rounds half to even.
    float scaled = std::nearbyint(f * 16777216.0f);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(scaled));
  }
  uint32_t mant = absx & 0x7FFFFFu;
  uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t half = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
    ++half;
  return static_cast<uint16_t>(sign | half);
}

float qopt::bfloat16ToFloat(uint16_t bits) {
  uint32_t x = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t qopt::floatToBFloat16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t rounding = 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}
