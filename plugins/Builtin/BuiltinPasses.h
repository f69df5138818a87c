//===- BuiltinPasses.h - qopt's built-in transform passes -------*- C++ -*-===//

#ifndef QOPT_PLUGINS_BUILTIN_BUILTINPASSES_H
#define QOPT_PLUGINS_BUILTIN_BUILTINPASSES_H

#include "qopt/Passes/PassManager.h"

namespace qopt {

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

struct FoldWeightsPass : PassInfoMixin<FoldWeightsPass> {
  /// Lossy option: plain float weights of ops fed by a DQ become int8.
  bool requantizeFloatWeights = false;
  static llvm::Expected<FoldWeightsPass> parse(llvm::StringRef params);
  void printPipeline(llvm::raw_ostream &os) const;
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

struct FoldConvBatchNormPass : PassInfoMixin<FoldConvBatchNormPass> {
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

} // namespace qopt

#endif // QOPT_PLUGINS_BUILTIN_BUILTINPASSES_H
