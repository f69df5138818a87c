//===- QdqUtils.h - Reading and building Q/DQ for placement passes -*- C++
//-*-===//
//
// The vocabulary the placement passes share, so that each pass file holds
// only its rewrite: which node produces a value, what grid a value is
// stored on, building q.quantize / q.dequantize that keep the source
// model's parameter records, and asking the op table how a grid crosses an
// op.
//
//   if (Node *dq = getProducer(v, ops::QDequantize)) ...
//   auto q = quantTypeAcross(*transpose, qin);   // axis remapped or why not
//   Node *dq = createDequantize(r, stored, /*paramsLike=*/oldDq);
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PASSES_QDQUTILS_H
#define QOPT_PASSES_QDQUTILS_H

#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/Passes/PatternRewrite.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

namespace qopt {

/// The quant type `v` is stored with, or null for plain tensors.
inline const QuantType *getStoredQuantType(const Value *v) {
  return v->getType()->getQuantType();
}

/// A q.quantize or q.dequantize whose grid is float8 or float4 (ONNX FP8/
/// FP4 Q/DQ). Their codes are small floats, not integers on a grid: the
/// placement passes (which requantize, merge and move integer grids) and
/// the INT8 fusion rules leave them alone, so the matchers below never
/// report them as `q.quantize`/`q.dequantize` nodes. Code that handles
/// them (the FP8 rules, redundant-pair removal) asks for them by name.
bool isMinifloatQdq(const Node &n);

/// The node producing `v` when it is an `op` node, else null (never a
/// minifloat Q/DQ: isMinifloatQdq).
Node *getProducer(const Value *v, llvm::StringRef op);

/// True for the result of an onnx.Constant holding a tensor (an
/// initializer or a Constant node).
bool isConstantValue(const Value *v);

/// Users of `v` (graph-output uses excluded), one entry per use.
std::vector<std::pair<Node *, unsigned>> getUsers(const Value *v);

/// True when every use of `v` is an operand of an `op` node (and `v` has at
/// least one use and is not a graph output); no minifloat Q/DQ matches.
bool allUsersAre(const Value *v, llvm::StringRef op);

/// The one user of `v` when it is an `op` node reading it once and `v` is
/// no graph output and captured by no subgraph (and no minifloat Q/DQ);
/// null otherwise.
Node *getSoleUserOfKind(const Value *v, llvm::StringRef op);

/// The operand of two-operand `n` that is not `v`; null when `n` has not
/// two operands or reads `v` twice.
Value *getOtherOperand(const Node &n, const Value *v);

/// A tensor type with `like`'s shape and element `elem`.
const TensorType *withElement(const TensorType *like, const Type *elem);
const TensorType *withElement(const TensorType *like, ElementKind kind);

/// q with other storage, scales and zero points, same expressed type and
/// axis (when per axis).
const QuantType *withParams(Context &ctx, const QuantType *q,
                            ElementKind storage, llvm::ArrayRef<float> scales,
                            llvm::ArrayRef<int64_t> zeroPoints);

/// The grid result `result` of `n` carries when its data operand(s) are
/// stored on `q`: q itself when per tensor; per axis, the axis remapped by
/// the op table, or the reason it cannot cross (the error names the node).
llvm::Expected<const QuantType *>
quantTypeAcross(const Node &n, const QuantType *q, unsigned result = 0);

/// The parameter-record attributes (param_names / param_ranks) of a Q/DQ,
/// for a new Q/DQ that should be exported with the same initializers and
/// shapes.
std::vector<NamedAttribute> paramRecordOf(const Node *qdq);

/// q.quantize(x) onto `q`, created at the rewriter's insertion point, with
/// `paramsLike`'s parameter record when given.
Node *createQuantize(PatternRewriter &r, Value *x, const QuantType *q,
                     const Node *paramsLike = nullptr, std::string name = {});
/// q.dequantize(stored) to the expressed type of stored's quant type.
Node *createDequantize(PatternRewriter &r, Value *stored,
                       const Node *paramsLike = nullptr, std::string name = {});

/// "<OpType> '<name>'" for reports; the name of its first result when the
/// node has none.
std::string describeNode(const Node &n);

/// An initializer (unnamed onnx.Constant) holding `data` with element type
/// `elem`, named after `base` (made unique), at the rewriter's insertion
/// point. The dense payload takes the value's name so the text form labels
/// its resource readably.
Value *createConstant(PatternRewriter &r, const DenseElements &data,
                      const Type *elem, llvm::StringRef base);

/// "<name>_folded" for a constant folded from `name`, without stacking
/// suffixes along a chain of folds ("weight_folded" for an unnamed one).
std::string foldedConstantName(llvm::StringRef name);

/// Whether `v` is an initializer the source model also lists as a graph
/// input: a user may feed another value, so its contents must not be baked
/// into other constants.
bool isOverridableInitializer(const Value *v);

/// Erases the producer of `v` once nothing reads its results any more, then
/// the producers of its operands the same way (a dead DQ takes its constant
/// along). Only constants, Q and DQ are erased, and with `alsoDataMovement`
/// DataMovement ops too (a weight's Transpose or Reshape): the kinds of
/// node a weight fold leaves behind.
void eraseIfDead(PatternRewriter &r, Value *v, bool alsoDataMovement = false);

/// The operands that carry the data through a data-movement or monotonic
/// op: every operand of variadic ops (Concat, Max, Min), operand 0
/// otherwise.
llvm::SmallVector<unsigned, 4> getDataOperands(const Node &n);
/// True for the results that hold the data operands' elements (not
/// MaxPool's Indices).
bool isDataResult(const Node &n, unsigned result);

/// A node that moves stored integers without reading them as numbers: the
/// table's data-movement ops (Resize in nearest mode only) and MaxPool. On
/// a quantized tensor its data results keep the data operands' grid.
bool carriesIntegers(const Node &n);

/// Whether `v` is exactly representable on every channel of `q`.
bool isOnGrid(double v, const QuantType *q);

/// Why the op-specific rules keep `n` from carrying the grid `q` of its
/// data operands to its data results, or empty when they allow it. Checks
/// the trait (DataMovement or Monotonic), Resize's mode (nearest only, and
/// in tf_crop_and_resize an extrapolation value that is its own stored
/// integer), Pad's constant value and Clip's bounds (on the grid). Per-axis
/// axis remapping is checked separately (quantTypeAcross).
std::string whyGridCannotCross(const Node &n, const QuantType *q);

/// The non-data operands of a copy of `n` that runs on the integers of
/// grid `q`, rewritten in `operands`: Pad's constant value becomes its
/// stored integer on `q` (an absent value, 0.0, too when the zero point is
/// not 0; in modes other than constant the value is unused and dropped).
/// Returns false, having created nothing, when that cannot be done (a
/// computed or off-grid value, a per-axis grid needing a scalar).
bool integerOperands(PatternRewriter &r, const Node &n,
                     std::vector<Value *> &operands, const QuantType *q);

/// The values that hold one quantized tensor's integers between the ops
/// that produce them (q.quantize, q.requantize) and the ops that read them
/// as numbers (q.dequantize, q.requantize): the tensor itself and what
/// data-movement ops and MaxPool make of it, joined across Concat.
/// Changing the storage of such a region means retyping all of it.
struct StoredRegion {
  std::vector<Value *> values;
  /// q.quantize / q.requantize nodes producing values of the region.
  std::vector<Node *> producers;
  /// Why the region cannot be retyped as a whole (a graph input or output,
  /// a constant, an op outside the region reading it, per-axis parameters,
  /// differing grids), or empty.
  std::string blocker;
};
/// The region holding `v` (a value of quant type).
StoredRegion collectStoredRegion(Value *v);
/// Gives every value of `region` the grid `q` (shapes kept).
void retypeRegion(PatternRewriter &r, const StoredRegion &region,
                  const QuantType *q);

/// The activation Q/DQ of a value: a q.quantize whose operand is not a
/// constant (weights are quantized constants); integer grids only, as
/// getProducer.
bool isActivationQuantize(const Node &n);
/// A q.dequantize whose operand is not a constant and not produced by a
/// q.quantize of a constant.
bool isActivationDequantize(const Node &n);

} // namespace qopt

#endif // QOPT_PASSES_QDQUTILS_H
