//===- Interpreter.h - Reference interpreter over qIR -----------*- C++ -*-===//
//
// Runs a graph with ONNX semantics: float computation (accumulations in
// double, so convolutions of dequantized integers are computed almost
// exactly), Q/DQ exact (round half to even, saturation, per axis). It is the
// reference every exact pass is checked against, not the fast path.
//
// An op without a kernel is an error naming the node, reported by create()
// before anything runs.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_INTERPRETER_INTERPRETER_H
#define QOPT_INTERPRETER_INTERPRETER_H

#include "qopt/Interpreter/Kernel.h"

#include "llvm/ADT/StringMap.h"

#include <functional>
#include <map>
#include <memory>

namespace qopt {
class Graph;
class Model;
class Node;
class Value;

namespace interp {

using TensorMap = std::map<std::string, Tensor>;

class Interpreter {
public:
  static llvm::Expected<std::unique_ptr<Interpreter>>
  create(const Model &model);

  /// Observation points, e.g. for op-by-op comparison with another runtime.
  struct Hooks {
    /// A value to use for an operand instead of the computed one (null:
    /// use the computed value).
    std::function<const Tensor *(const Value &)> operandOverride;
    /// Called after each node with the node's outputs.
    std::function<void(const Node &, llvm::ArrayRef<Tensor>)> afterNode;
  };

  /// Runs with inputs by graph-input name; returns the outputs in order.
  llvm::Expected<std::vector<Tensor>> run(const TensorMap &inputs,
                                          const Hooks *hooks = nullptr) const;

  const Graph &getGraph() const { return graph; }

private:
  Interpreter(const Graph &graph, int64_t opset);
  const Graph &graph;
  int64_t opset;
  /// Each node as its kernel sees it, in graph order.
  std::vector<KernelOp> ops;
  /// For each node, the operands whose last use it is (freed after it).
  std::vector<std::vector<const void *>> lastUses;
};

/// How seeded random inputs are drawn.
enum class InputDistribution {
  Uniform,  ///< floats in [-1, 1)
  Image,    ///< floats in [0, 1), smooth
  ImageNet, ///< Image, then ImageNet mean/std normalised per channel
};

/// Seeded random tensors for every graph input. Symbolic and unknown dims
/// come from `dims` by name (or "?" for unnamed), else 1. Integer inputs are
/// uniform over their range (narrow types) or [0, 8) (wide ones); indices
/// of a Gather (token ids) over [0, the size of the axis they index).
llvm::Expected<TensorMap>
makeRandomInputs(const Graph &graph, uint64_t seed,
                 const std::map<std::string, int64_t> &dims = {},
                 InputDistribution dist = InputDistribution::Uniform);

/// An input to draw: its name, element kind and static shape.
struct InputSpec {
  std::string name;
  ElementKind kind;
  Shape shape;
  /// Integer inputs that index something (a Gather's indices: token ids)
  /// are drawn in [0, indexBound) when it is > 0.
  int64_t indexBound = 0;
};

/// The same draws for inputs given by name, kind and shape (a plan's).
llvm::Expected<TensorMap>
makeRandomInputs(llvm::ArrayRef<InputSpec> inputs, uint64_t seed,
                 InputDistribution dist = InputDistribution::Uniform);

} // namespace interp
} // namespace qopt

#endif // QOPT_INTERPRETER_INTERPRETER_H
