//===- OpsetSpellings.h - Opset-dependent spellings of one op ---*- C++ -*-===//
//
// The IR keeps one canonical spelling per op: the newest. Older opsets wrote
// some operands as attributes; this table says which, so the importer can
// turn them into constant operands and the exporter back into attributes:
//
//   opset 4:  Reshape(x) {shape = [1, -1]}
//   IR:       %s = onnx.Constant() {value = dense<[1, -1]>} : tensor<2xi64>
//             onnx.Reshape(%x, %s)
//
// It also names what each opset can express at all (features of Q/DQ and
// the ops' first versions), for the exporter's checks and -target-opset.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_IR_OPSETSPELLINGS_H
#define QOPT_IR_OPSETSPELLINGS_H

#include "qopt/IR/OpDefinition.h"

namespace qopt {

/// An operand that opsets before `operandSince` wrote as attribute
/// `attrName`.
struct AttrOperandSpelling {
  llvm::StringRef op;
  int64_t operandSince;
  unsigned operandIndex;
  llvm::StringRef attrName;
  AttrKind attrKind; // Ints (an i64 list) or Float (a scalar)
};

/// Every entry for `op` (empty for most ops).
llvm::ArrayRef<AttrOperandSpelling> getAttrOperandSpellings(llvm::StringRef op);

/// Why `n` cannot be written at default-domain opset `opset`, or empty:
/// the op's first version, per-axis Q/DQ (13), f16/bf16 scales (19), 16-bit
/// quantized types (21). `target`: `opset` is the one asked for
/// (-target-opset), not the model's own; the reason says which.
std::string whyNotExpressibleAtOpset(const Node &n, int64_t opset,
                                     bool target = false);

/// Resize-10's nearest rounding in Resize-11 terms: "floor" when every
/// constant scale that is not 1 upsamples, "ceil" when every one
/// downsamples; null when the scales are computed or mixed.
const char *resize10NearestMode(const Value *scales);

/// Sets the model's default-domain opset to `opset` after checking that
/// every node can be written there (whyNotExpressibleAtOpset, and operands
/// the older spelling needs as constant attributes).
llvm::Error retargetOpset(Model &model, int64_t opset);

} // namespace qopt

#endif // QOPT_IR_OPSETSPELLINGS_H
