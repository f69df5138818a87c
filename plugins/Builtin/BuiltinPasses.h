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

struct EnsureUniqueDequantizePass
    : PassInfoMixin<EnsureUniqueDequantizePass> {
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

struct EnsureUniqueQuantizePass : PassInfoMixin<EnsureUniqueQuantizePass> {
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

/// unify-scales<policy=widest|output;max-iterations=N> (UnifyScales.cpp).
struct UnifyScalesPass : PassInfoMixin<UnifyScalesPass> {
  enum class Policy { Widest, Output };
  Policy policy = Policy::Widest;
  unsigned maxIterations = 8;
  static llvm::Expected<UnifyScalesPass> parse(llvm::StringRef params);
  void printPipeline(llvm::raw_ostream &os) const;
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

/// quantize-residual (QuantizeResidual.cpp).
struct QuantizeResidualPass : PassInfoMixin<QuantizeResidualPass> {
  PreservedAnalyses run(Graph &g, AnalysisManager &am);
};

} // namespace qopt

#endif // QOPT_PLUGINS_BUILTIN_BUILTINPASSES_H
