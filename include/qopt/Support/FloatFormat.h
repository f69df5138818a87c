//===- FloatFormat.h - Shortest round-tripping float text -------*- C++ -*-===//
//
// Scales and float constants print in the shortest decimal form that parses
// back to the same bits (std::to_chars), e.g. 0.02f prints "0.02", not
// "0.0199999996". NaN prints as its bit pattern so that payloads survive.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_SUPPORT_FLOATFORMAT_H
#define QOPT_SUPPORT_FLOATFORMAT_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace qopt {

/// Shortest decimal text of `value`; "inf"/"-inf"; NaN as "0x7FC00000" bits.
/// With `forceDecimalPoint`, integral values get a ".0" suffix so that the
/// text reads as a float ("1.0", "1e+20" already reads as a float).
std::string formatFloat(float value, bool forceDecimalPoint = false);
std::string formatDouble(double value, bool forceDecimalPoint = false);

/// Parses text written by formatFloat (also accepts any decimal float and
/// 0x-prefixed bit patterns). Returns nullopt on malformed text.
std::optional<float> parseFloat(llvm::StringRef text);
std::optional<double> parseDouble(llvm::StringRef text);

/// Rounds a double to float with round-to-odd, so that a second rounding to
/// a narrower format (half, bfloat16) equals one direct rounding.
float roundToFloatOdd(double value);

/// IEEE half and bfloat16 conversions (round to nearest even).
float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
float bfloat16ToFloat(uint16_t bits);
uint16_t floatToBFloat16(float value);

} // namespace qopt

#endif // QOPT_SUPPORT_FLOATFORMAT_H
