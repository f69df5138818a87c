//===- Verifier.h - Structural and quantization checks ----------*- C++ -*-===//
//
// Checks a graph's invariants and returns the first violation as an
// llvm::Error whose message names the node: "node 'q1' (q.quantize): scale
// must be finite and > 0, got -0.5". Never aborts on user input.
//
// Checked: unique value names, every operand defined before its use (the
// topological order), use lists consistent with operands, graph outputs
// produced, operand/result counts of known ops, quantized types (finite
// positive scales, zero points in the storage range, per-axis sizes against
// the quantized dimension), q.* op typing and constant payload sizes.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_IR_VERIFIER_H
#define QOPT_IR_VERIFIER_H

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Error.h"

namespace qopt {

class Graph;
class Model;
class Node;
class QuantType;
class TensorType;

struct VerifyOptions {
  /// Nodes whose result types are exactly what inferNodeTypes made them,
  /// with their operands' types unchanged since (the ONNX importer knows
  /// which): inferring them again would find the same types, so only their
  /// other checks run. Saves a third of the import of a large model.
  const llvm::DenseSet<const Node *> *typesAsInferred = nullptr;
};

llvm::Error verifyGraph(const Graph &graph, const VerifyOptions &options = {});
llvm::Error verifyModel(const Model &model, const VerifyOptions &options = {});

/// Checks one quantized type on its own (scales, zero points) and against the
/// tensor that carries it when `tensor` is given (axis, channel count).
/// Returns an empty string when valid, otherwise the reason.
std::string checkQuantType(const QuantType *quant,
                           const TensorType *tensor = nullptr);

} // namespace qopt

#endif // QOPT_IR_VERIFIER_H
