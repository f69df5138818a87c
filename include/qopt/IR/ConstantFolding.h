//===- ConstantFolding.h - The one constant folder --------------*- C++ -*-===//
//
// An op folds when its operands are constants (for ShapeOnly ops, when their
// operand shapes are static): its fold hook in the op table (Ops.def,
// `FOLD(op, fn)`, MLIR's `fold`) computes the results from the operand data.
// The importer folds exporters' shape arithmetic and constant chains with it
// (initializers read through Identity, Cast/Reshape/Unsqueeze of constants,
// Shape -> Gather -> Concat -> Reshape), and the `fold-constants` pass runs
// it on any graph.
//
//   %s = onnx.Shape(%x : tensor<1x64x8x8xf32>)      %s = onnx.Constant()
//   %c = onnx.Gather(%s, %one) {axis = 0}      =>     {value = dense<[1, 64, 8,
//   8]>}
//                                                    %c = onnx.Constant()
//                                                         {value = dense<64>}
//
// Folding is exact: every hook computes what the ONNX op computes, in the
// op's element type, or declines (an integer overflow, a division by zero,
// an index out of range, a float-to-int cast out of range, string data).
// Q/DQ ops stay: a weight's Q/DQ is what a quantized graph is made of and
// fold-weights' business. Only a lowering that is done with them (the plan
// builder) sets FoldOptions::foldQdq to get a q.quantize or q.dequantize of
// a constant as its values.
// Ops with results larger than FoldOptions::maxElements stay, so a folded
// constant never costs more memory than the cap (Identity shares the data
// and has no cap).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_IR_CONSTANTFOLDING_H
#define QOPT_IR_CONSTANTFOLDING_H

#include "qopt/IR/Attributes.h"
#include "qopt/IR/Types.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <vector>

namespace qopt {

class Graph;
class Node;
class Value;

struct FoldOptions {
  /// Largest result (in elements) a fold may materialise.
  int64_t maxElements = int64_t(1) << 20;
  /// Names of constants that are not constant: graph inputs with a default
  /// value (an initializer of the same name), which a user may override.
  const llvm::StringSet<> *overridable = nullptr;
  /// q.quantize and q.dequantize of constants fold (off: passes keep a
  /// weight's Q/DQ; the plan builder turns it on for what runs in float).
  bool foldQdq = false;
  /// With foldQdq: a q.dequantize this returns true for stays (the plan
  /// builder keeps a 4-bit weight's, which its weight-only gemm reads).
  llvm::function_ref<bool(const Node &)> keepDequantize;
};

/// What a fold hook sees: the node, its operands' data, its inferred result
/// types; it fills in `results` (one per result) and returns true, or
/// returns false to leave the node as it is.
class FoldContext {
public:
  FoldContext(const Node &node, const FoldOptions &options);

  const Node &node;
  const FoldOptions &options;
  std::vector<DenseElementsRef> results;

  unsigned getNumOperands() const;
  /// The data of operand `i`, or null when it is absent or not a constant.
  const DenseElements *getOperand(unsigned i) const;
  DenseElementsRef getOperandRef(unsigned i) const;
  /// The type of operand `i`, or null when it is absent.
  const TensorType *getOperandType(unsigned i) const;
  /// Static dims of result `i` as inferred, or nullopt.
  std::optional<std::vector<int64_t>> getResultDims(unsigned i = 0) const;
  /// Storage element kind of result `i` (Unknown when not inferred).
  ElementKind getResultKind(unsigned i = 0) const;
  /// True when `count` elements fit under the cap.
  bool fits(int64_t count) const {
    return count >= 0 && count <= options.maxElements;
  }
};

/// The hook's results for `n` when it folds; nullopt otherwise (no hook,
/// an operand that is not a constant, a result over the cap, a hook that
/// declines). Constants themselves (onnx.Constant with `value`) do not fold.
std::optional<std::vector<DenseElementsRef>>
foldNode(const Node &n, const FoldOptions &options = {});

/// The constant data of `v` when folding may use it: an onnx.Constant's
/// value, unless `v` is an overridable initializer input.
const DenseElements *getFoldableConstant(const Value *v,
                                         const FoldOptions &options);

/// Folds every node of `graph` that folds, in order; results become
/// onnx.Constant nodes that keep the result names (and quantized types), and
/// constants only the folded nodes read are erased. Nodes whose operands got
/// more precise types are inferred again, so a Reshape whose shape folded
/// gets a static shape. Returns how many nodes folded; an error when a
/// re-inferred node does not fit its new operand shapes.
llvm::Expected<unsigned> foldConstants(Graph &graph, FoldOptions options = {});

/// An onnx.Cast to the element type its operand is already stored in, with
/// the operand's own type as its result type (torch.ao's
/// `QuantizeLinear -> Cast(to=UINT8) -> DequantizeLinear`): it computes its
/// operand.
bool isNoOpCast(const Node &n);

/// Removes every no-op Cast of `graph` whose result is neither a graph output
/// nor read by a subgraph: its readers read the operand. Returns how many
/// went. The importer runs it, so Q -> Cast(same) -> DQ is Q -> DQ.
unsigned removeNoOpCasts(Graph &graph);

} // namespace qopt

#endif // QOPT_IR_CONSTANTFOLDING_H
