//===- BuiltinPasses.h - qopt's built-in transform passes -------*- C++ -*-===//

#ifndef QOPT_PLUGINS_BUILTIN_BUILTINPASSES_H
#define QOPT_PLUGINS_BUILTIN_BUILTINPASSES_H

#include "qopt/Fusion/FusionPlan.h"
#include "qopt/Passes/PassManager.h"

namespace qopt {

/// The backend a pass decides by (`pass<trt|ort|cpu>`, trt when empty), or
/// an error naming the pass.
llvm::Expected<std::string> parseBackendParam(llvm::StringRef pass,
                                              llvm::StringRef params);

/// A backend's fusion plan as the lossy passes judge a change by it.
struct PlanScore {
  FusionPlan::Summary summary;
  size_t leftovers = 0;
  /// INT8 MACs up, or leftovers down with INT8 MACs not down.
  bool improvesOn(const PlanScore &o) const {
    return summary.int8Macs > o.summary.int8Macs ||
           (summary.int8Macs == o.summary.int8Macs && leftovers < o.leftovers);
  }
};
/// The score of `g`'s fusion plan under `rules`.
inline PlanScore scorePlan(Graph &g, const BackendRules &rules) {
  FusionPlan plan = computeFusionPlan(g, rules);
  return {plan.summarize(), plan.leftovers.size()};
}

struct DeadCodeEliminationPass : PassInfoMixin<DeadCodeEliminationPass> {
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

struct CommonSubexpressionEliminationPass
    : PassInfoMixin<CommonSubexpressionEliminationPass> {
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

struct ScalarQParamsPass : PassInfoMixin<ScalarQParamsPass> {
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

struct EnsureUniqueDequantizePass : PassInfoMixin<EnsureUniqueDequantizePass> {
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

struct EnsureUniqueQuantizePass : PassInfoMixin<EnsureUniqueQuantizePass> {
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

struct SinkQdqPass : PassInfoMixin<SinkQdqPass> {
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

struct RemoveRedundantQdqPass : PassInfoMixin<RemoveRedundantQdqPass> {
  /// Lossy: Q_A -> requantize to B becomes Q_B.
  bool mergeRequantize = false;
  /// Lossy: Q -> DQ of a float activation is removed.
  bool removeQdq = false;
  static llvm::Expected<RemoveRedundantQdqPass> parse(llvm::StringRef params);
  bool isLossy() const { return mergeRequantize || removeQdq; }
  void printPipeline(llvm::raw_ostream &os) const;
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

struct FoldWeightsPass : PassInfoMixin<FoldWeightsPass> {
  /// Lossy option: plain float weights of ops fed by a DQ become int8.
  bool requantizeFloatWeights = false;
  static llvm::Expected<FoldWeightsPass> parse(llvm::StringRef params);
  bool isLossy() const { return requantizeFloatWeights; }
  void printPipeline(llvm::raw_ostream &os) const;
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

struct FoldConstantsPass : PassInfoMixin<FoldConstantsPass> {
  int64_t maxElements = int64_t(1) << 20;
  static llvm::Expected<FoldConstantsPass> parse(llvm::StringRef params);
  void printPipeline(llvm::raw_ostream &os) const;
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

struct ChannelShuffleToGatherPass : PassInfoMixin<ChannelShuffleToGatherPass> {
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

struct CanonicalizePass : PassInfoMixin<CanonicalizePass> {
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

struct FuseDynamicMatMulPass : PassInfoMixin<FuseDynamicMatMulPass> {
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

struct ToUint8ActivationsPass : PassInfoMixin<ToUint8ActivationsPass> {
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

struct ReluIntoQuantizePass : PassInfoMixin<ReluIntoQuantizePass> {
  bool isLossy() const { return true; }
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

struct QuantizeActivationsPass : PassInfoMixin<QuantizeActivationsPass> {
  bool isLossy() const { return true; }
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

/// expand-hard-sigmoid<trt|ort|cpu> (ExpandHardSigmoid.cpp).
struct ExpandHardSigmoidPass : PassInfoMixin<ExpandHardSigmoidPass> {
  /// The backend whose fusion plan must get better for a site to change.
  std::string backend = "trt";
  static llvm::Expected<ExpandHardSigmoidPass> parse(llvm::StringRef params);
  void printPipeline(llvm::raw_ostream &os) const;
  bool isLossy() const { return true; }
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

struct FoldConvBatchNormPass : PassInfoMixin<FoldConvBatchNormPass> {
  /// Weights and bias are rounded to float32 (and int8 weight channels
  /// negated where gamma < 0): reported in the cost report.
  bool isLossy() const { return true; }
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

/// unify-scales<policy=widest|output;max-iterations=N;backend=trt|ort|cpu>
/// (UnifyScales.cpp).
struct UnifyScalesPass : PassInfoMixin<UnifyScalesPass> {
  enum class Policy { Widest, Output };
  Policy policy = Policy::Widest;
  unsigned maxIterations = 8;
  /// The backend whose fusion plan must get better for a group to take
  /// one grid; empty: every group does.
  std::string backend;
  static llvm::Expected<UnifyScalesPass> parse(llvm::StringRef params);
  bool isLossy() const { return true; }
  void printPipeline(llvm::raw_ostream &os) const;
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

/// quantize-residual (QuantizeResidual.cpp).
struct QuantizeResidualPass : PassInfoMixin<QuantizeResidualPass> {
  /// Keep the Q/DQ inside the conv branch (QLinearConv + QLinearAdd).
  bool keepBranchQdq = false;
  static llvm::Expected<QuantizeResidualPass> parse(llvm::StringRef params);
  void printPipeline(llvm::raw_ostream &os) const;
  bool isLossy() const { return true; }
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

/// borrow-scales<trt|ort|cpu> (BorrowScales.cpp).
struct BorrowScalesPass : PassInfoMixin<BorrowScalesPass> {
  /// The backend whose fusion plan must get better for a region to stay.
  std::string backend = "trt";
  static llvm::Expected<BorrowScalesPass> parse(llvm::StringRef params);
  void printPipeline(llvm::raw_ostream &os) const;
  bool isLossy() const { return true; }
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

/// symmetrize-activations<trt|ort|cpu> (SymmetrizeActivations.cpp).
struct SymmetrizeActivationsPass : PassInfoMixin<SymmetrizeActivationsPass> {
  /// The backend whose fusion plan must get better for a region to change.
  std::string backend = "trt";
  static llvm::Expected<SymmetrizeActivationsPass>
  parse(llvm::StringRef params);
  void printPipeline(llvm::raw_ostream &os) const;
  bool isLossy() const { return true; }
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

/// fuse<trt|ort|cpu> (Fuse.cpp).
struct FusePass : PassInfoMixin<FusePass> {
  /// The backend whose fusion-plan units become q.* nodes.
  std::string backend;
  static llvm::Expected<FusePass> parse(llvm::StringRef params);
  void printPipeline(llvm::raw_ostream &os) const;
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

/// raise-qoperator's part for com.microsoft.MatMulNBits
/// (RaiseMatMulNBits.cpp): the nodes it wrote back as DequantizeLinear and
/// MatMul.
unsigned raiseMatMulNBits(Graph &g);

/// raise-qoperator (RaiseQOperator.cpp).
struct RaiseQOperatorPass : PassInfoMixin<RaiseQOperatorPass> {
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

/// to-matmul-nbits<accuracy-level=N> (ToMatMulNBits.cpp).
struct ToMatMulNBitsPass : PassInfoMixin<ToMatMulNBitsPass> {
  /// ONNX Runtime's accuracy_level: 0 computes the model's function.
  int64_t accuracyLevel = 0;
  static llvm::Expected<ToMatMulNBitsPass> parse(llvm::StringRef params);
  void printPipeline(llvm::raw_ostream &os) const;
  bool isLossy() const { return accuracyLevel == 4; }
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

/// lower-qoperator (LowerQOperator.cpp).
struct LowerQOperatorPass : PassInfoMixin<LowerQOperatorPass> {
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

} // namespace qopt

#endif // QOPT_PLUGINS_BUILTIN_BUILTINPASSES_H
