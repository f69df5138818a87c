//===- OpNames.h - One typed constant per op name ---------------*- C++ -*-===//
//
// Code outside lib/IR names ops through these constants, never through
// string literals: `n.isa(ops::Conv)`, `r.add(ops::Add, addKernel)`. The
// constants of the op table are generated from qopt/IR/Ops.def, so an op
// exists here exactly when the table defines it.
//
// Names: "onnx.X" is `X` (ops::Conv, ops::QuantizeLinear); "q.snake_case"
// is `Q` + CamelCase (ops::QQuantize, ops::QConvTranspose, ops::QMatmul);
// ops of other ONNX domains carry a prefix for their domain:
// "com.microsoft.X" is `MsX` (ops::MsMatMulIntegerToFloat, in the table;
// ops::MsQLinearAdd, one of the opaque ones below).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_IR_OPNAMES_H
#define QOPT_IR_OPNAMES_H

#include "llvm/ADT/StringRef.h"

namespace qopt {
namespace ops {

//===----------------------------------------------------------------------===//
// The op table (Ops.def)
//===----------------------------------------------------------------------===//

#define OP(ID, NAME, SINCE, SIG, CONSTRAINTS, TRAITS, INFER, REMAP, SUMMARY)   \
  inline constexpr llvm::StringLiteral ID = NAME;
#include "qopt/IR/Ops.def"

//===----------------------------------------------------------------------===//
// Ops outside the table
//===----------------------------------------------------------------------===//
//
// Ops qopt names but does not model: the op table has no entry for them, so
// the IR treats them as opaque (no signature, no shape inference), yet the
// interpreter has a kernel for each and passes create or read them.

// ONNX Runtime's com.microsoft quantized operators, the QOperator form of
// onnxruntime's quantizer (raise-qoperator reads them, lower-qoperator
// writes them, MicrosoftKernels.cpp runs them).
inline constexpr llvm::StringLiteral MsQGemm = "com.microsoft.QGemm";
inline constexpr llvm::StringLiteral MsQLinearAdd = "com.microsoft.QLinearAdd";
inline constexpr llvm::StringLiteral MsQLinearAveragePool =
    "com.microsoft.QLinearAveragePool";
inline constexpr llvm::StringLiteral MsQLinearConcat =
    "com.microsoft.QLinearConcat";
inline constexpr llvm::StringLiteral MsQLinearGlobalAveragePool =
    "com.microsoft.QLinearGlobalAveragePool";
inline constexpr llvm::StringLiteral MsQLinearLeakyRelu =
    "com.microsoft.QLinearLeakyRelu";
inline constexpr llvm::StringLiteral MsQLinearMul = "com.microsoft.QLinearMul";
inline constexpr llvm::StringLiteral MsQLinearSigmoid =
    "com.microsoft.QLinearSigmoid";

// ONNX Upsample (opsets 7 to 9, deprecated since 10): the importer rewrites
// it to Resize; the interpreter still runs it.
inline constexpr llvm::StringLiteral Upsample = "onnx.Upsample";

} // namespace ops
} // namespace qopt

#endif // QOPT_IR_OPNAMES_H
