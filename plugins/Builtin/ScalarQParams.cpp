//===- ScalarQParams.cpp - Per-tensor Q/DQ parameters as scalars ----------===//
//
// Exact. torch exports per-tensor scales and zero points with shape [1];
// ONNX Runtime's QDQ fusions want scalars (with [1]-shaped parameters,
// session creation at level `all` fails once a QLinearAdd forms). The IR
// records the source shape in `param_ranks`; this pass drops the record for
// per-tensor Q/DQ, so export writes scalars. The numbers are untouched.
//
//   %q = q.quantize(%x) {param_names = ["s", "z"], param_ranks = [1, 1]}
//   =>
//   %q = q.quantize(%x) {param_names = ["s", "z"]}
//
// Per-axis parameters stay 1-D (their rank is part of their meaning).
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/Passes/QdqUtils.h"

using namespace qopt;

static const QuantType *paramsOf(const Node &n) {
  if (n.isa(ops::QQuantize))
    return getStoredQuantType(n.getResult());
  if (n.isa(ops::QDequantize))
    return getStoredQuantType(n.getOperand(0));
  return nullptr;
}

PreservedAnalyses ScalarQParamsPass::run(Graph &g, AnalysisManager &) {
  bool changed = false;
  for (Node &n : g.getNodes()) {
    const QuantType *q = paramsOf(n);
    if (!q || q->isPerAxis())
      continue;
    changed |= n.removeAttr("param_ranks");
  }
  // Types and structure are unchanged: every analysis stays valid.
  (void)changed;
  return PreservedAnalyses::all();
}
