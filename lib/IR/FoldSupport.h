//===- FoldSupport.h - Helpers the fold hooks share ------------*- C++ -*-===//
//
// Private to lib/IR: element counts, broadcasting and typed results for
// FoldHooks.cpp and FoldArithmetic.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_IR_FOLDSUPPORT_H
#define QOPT_LIB_IR_FOLDSUPPORT_H

#include "qopt/IR/ConstantFolding.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace qopt {
namespace opimpl {
namespace fold {

/// The product of `dims`; -1 for a negative dim or an overflow.
int64_t numElementsOf(llvm::ArrayRef<int64_t> dims);
/// Row-major strides of `dims`, in elements.
std::vector<int64_t> rowMajorStrides(llvm::ArrayRef<int64_t> dims);
/// For each element of a tensor of `outDims`, the flat index of the element
/// of an operand of `inDims` that broadcasting (numpy rules, right-aligned)
/// reads. Empty when the operand does not broadcast to `outDims`.
std::optional<std::vector<int64_t>>
broadcastIndices(llvm::ArrayRef<int64_t> inDims,
                 llvm::ArrayRef<int64_t> outDims);
/// A tensor of `dims` whose element e is element indices[e] of `src`, any
/// kind but strings.
DenseElementsRef gatherElements(const DenseElements &src,
                                llvm::ArrayRef<int64_t> dims,
                                llvm::ArrayRef<int64_t> indices);
/// Data the hooks compute on: numbers that getAsInt/getAsDouble read as
/// they are (u64 past 2^63 would read negative: not folded).
bool isPlainData(const DenseElements *d);
/// Every operand present is a constant of plain data.
bool allOperandsPlain(const FoldContext &ctx);
/// A negative axis counted from the end (not range-checked).
int64_t wrapAxis(int64_t axis, int64_t rank);
/// The integer value of `v` in `kind`, if it is one.
bool fitsKind(int64_t v, ElementKind kind);
/// Integer kinds and bool.
bool isIntegral(ElementKind k);
/// The float kinds arithmetic folds (f32, f64).
bool isFoldableFloat(ElementKind k);
/// Integer results; false when one does not fit `kind`.
bool setIntResult(FoldContext &ctx, ElementKind kind,
                  llvm::ArrayRef<int64_t> dims, llvm::ArrayRef<int64_t> values);

} // namespace fold
} // namespace opimpl
} // namespace qopt

#endif // QOPT_LIB_IR_FOLDSUPPORT_H
