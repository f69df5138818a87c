//===- Float8.h - The ONNX float8 formats --------------------*- C++ -*-===//
//
// The four 8-bit float types ONNX has had since opset 19, and the 4-bit
// FLOAT4E2M1 of opset 23, as bits and as values (ONNX's "Float stored in 8
// bits", "Float stored in 4 bits" and Cast's saturation table):
//
//   kind         exp/man  bias  special codes           largest finite
//   F8E4M3FN     4 / 3    7     S.1111.111 NaN, no inf  448
//   F8E4M3FNUZ   4 / 3    8     0x80 NaN, no inf, no -0 240
//   F8E5M2       5 / 2    15    IEEE: S.11111.00 inf,   57344
//                               other S.11111.xx NaN
//   F8E5M2FNUZ   5 / 2    16    0x80 NaN, no inf, no -0 57344
//   F4E2M1       2 / 1    1     none (S.EE.M, 4 bits)   6
//
// A value converts by rounding to nearest, ties to the even code. With
// saturation (QuantizeLinear's and Cast's default) what rounds past the
// largest finite value, and an infinity, becomes that value with its sign;
// without it, such values become NaN (inf for F8E5M2, which has one).
// F4E2M1 has no NaN or infinity: it always saturates, and a NaN becomes
// its largest value with the NaN's sign bit (ONNX's Cast table).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_IR_FLOAT8_H
#define QOPT_IR_FLOAT8_H

#include "qopt/IR/Types.h"

#include <cstdint>

namespace qopt {

/// The value of `code` in float8 kind or F4E2M1 `kind` (NaN, infinities
/// included).
double decodeFloat8(uint8_t code, ElementKind kind);

/// The code of `v` in float8 kind or F4E2M1 `kind`: round to nearest, ties
/// to even;
/// `saturate` as ONNX's QuantizeLinear and Cast define it.
uint8_t encodeFloat8(double v, ElementKind kind, bool saturate = true);

} // namespace qopt

#endif // QOPT_IR_FLOAT8_H
