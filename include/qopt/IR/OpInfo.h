//===- OpInfo.h - What the IR knows about ops -------------------*- C++ -*-===//
//
// Operand/result count bounds for qopt's own ops and the ONNX ops the passes
// reason about. Ops absent from the table are opaque: any counts are accepted.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_IR_OPINFO_H
#define QOPT_IR_OPINFO_H

#include "llvm/ADT/StringRef.h"

namespace qopt {

struct OpInfo {
  const char *name;
  unsigned minOperands, maxOperands;
  unsigned minResults, maxResults;
  const char *summary;
};

/// Null for ops the IR treats as opaque.
const OpInfo *lookupOpInfo(llvm::StringRef op);

// Names of qopt's own ops.
namespace ops {
constexpr llvm::StringLiteral Quantize = "q.quantize";
constexpr llvm::StringLiteral Dequantize = "q.dequantize";
constexpr llvm::StringLiteral Requantize = "q.requantize";
constexpr llvm::StringLiteral Constant = "onnx.Constant";
} // namespace ops

} // namespace qopt

#endif // QOPT_IR_OPINFO_H
