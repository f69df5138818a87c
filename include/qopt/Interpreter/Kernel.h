//===- Kernel.h - Reference kernels and their registry ----------*- C++ -*-===//
//
// One function per op, ONNX semantics, written for clarity over speed. A
// kernel reads its inputs (null for absent optional inputs), attributes and
// the model's opset from the KernelContext and fills ctx.outputs (one per
// node result). Failures are llvm::Errors; ctx.error() prefixes the node.
//
// Kernels see their op through a KernelOp, not the graph: the interpreter
// builds one per node, and the CPU plan's float steps keep theirs in the
// plan, so the same kernels run there without the IR's graph.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_INTERPRETER_KERNEL_H
#define QOPT_INTERPRETER_KERNEL_H

#include "qopt/Interpreter/Tensor.h"

#include "llvm/ADT/StringMap.h"

namespace qopt {
class Node;

namespace interp {

/// What a kernel knows of the op it runs: its name, attributes and the
/// quantized types of its operands and results (types owned by a Context
/// that outlives it).
struct KernelOp {
  /// "onnx.Conv".
  std::string op;
  /// "node 'x' (onnx.Conv)": the prefix of the kernel's errors.
  std::string description;
  std::vector<NamedAttribute> attributes;
  /// Per operand: its quantized type, or null (float, or absent).
  std::vector<const QuantType *> operandQuantTypes;
  /// Per result: its quantized type, or null.
  std::vector<const QuantType *> resultQuantTypes;
  /// Per result: false where the node leaves an optional result out.
  std::vector<bool> resultPresent;

  static KernelOp fromNode(const Node &node);

  const Attribute *getAttr(llvm::StringRef name) const;
  unsigned getNumOperands() const { return operandQuantTypes.size(); }
  unsigned getNumResults() const { return resultPresent.size(); }
  const QuantType *getOperandQuantType(unsigned i) const {
    return i < operandQuantTypes.size() ? operandQuantTypes[i] : nullptr;
  }
  const QuantType *getResultQuantType(unsigned i = 0) const {
    return i < resultQuantTypes.size() ? resultQuantTypes[i] : nullptr;
  }
};

class KernelContext {
public:
  KernelContext(const KernelOp &op, std::vector<const Tensor *> inputs,
                int64_t opset)
      : op(op), inputs(std::move(inputs)), opset(opset),
        outputs(op.getNumResults()) {}

  const KernelOp &op;
  /// Inputs by position; null where an optional input is absent.
  std::vector<const Tensor *> inputs;
  /// Version of the default ONNX domain the model imports.
  int64_t opset;
  std::vector<Tensor> outputs;

  size_t numInputs() const { return inputs.size(); }
  /// Input i, or null when absent or beyond the given inputs.
  const Tensor *input(size_t i) const {
    return i < inputs.size() ? inputs[i] : nullptr;
  }
  /// Whether output i is wanted (present in the node).
  bool wantsOutput(size_t i) const {
    return i < op.getNumResults() && op.resultPresent[i];
  }

  int64_t getInt(llvm::StringRef name, int64_t dflt) const;
  float getFloat(llvm::StringRef name, float dflt) const;
  std::string getString(llvm::StringRef name, llvm::StringRef dflt) const;
  std::vector<int64_t> getInts(llvm::StringRef name,
                               std::vector<int64_t> dflt = {}) const;
  std::vector<float> getFloats(llvm::StringRef name) const;
  bool hasAttr(llvm::StringRef name) const { return op.getAttr(name); }
  const DenseElements *getTensorAttr(llvm::StringRef name) const;

  /// "node 'x' (onnx.Conv): <msg>".
  llvm::Error error(const llvm::Twine &msg) const;
  /// Allocates output i with checked size.
  llvm::Error allocateOutput(size_t i, ElementKind kind, Shape shape);
  /// Charges the run's budget (RunBudget) before a kernel's loops: `units`
  /// multiply-accumulates, `count` x `factor` of them (saturating), and
  /// `bytes` of scratch beside its tensors. Errors name the node.
  llvm::Error chargeWork(uint64_t count, uint64_t factor = 1) const;
  llvm::Error chargeScratch(uint64_t count, uint64_t elementBytes) const;
};

using KernelFn = llvm::Error (*)(KernelContext &);

class KernelRegistry {
public:
  void add(llvm::StringRef op, KernelFn fn) { kernels[op] = fn; }
  KernelFn lookup(llvm::StringRef op) const {
    auto it = kernels.find(op);
    return it == kernels.end() ? nullptr : it->second;
  }
  std::vector<std::string> ops() const;
  /// The registry with every kernel of the reference interpreter.
  static const KernelRegistry &get();

private:
  llvm::StringMap<KernelFn> kernels;
};

// Registration, one function per kernel file.
void registerQuantKernels(KernelRegistry &r);
void registerNNKernels(KernelRegistry &r);
void registerElementwiseKernels(KernelRegistry &r);
void registerShapeKernels(KernelRegistry &r);
void registerIndexKernels(KernelRegistry &r);
void registerResizeKernels(KernelRegistry &r);
void registerFusedKernels(KernelRegistry &r);
void registerMicrosoftKernels(KernelRegistry &r);

/// Normalises a possibly negative axis for `rank`; error if out of range.
llvm::Expected<int64_t> normalizeAxis(const KernelContext &ctx, int64_t axis,
                                      int64_t rank);

} // namespace interp
} // namespace qopt

#endif // QOPT_INTERPRETER_KERNEL_H
