//===- DeadCodeElimination.cpp - Remove unused nodes (dce) ----------------===//
//
// Exact: removes nodes none of whose results is used or a graph output,
// including initializers nothing reads.
//
//   %a = onnx.Relu(%x)            (unused)
//   %b = onnx.Sigmoid(%x)    =>   %b = onnx.Sigmoid(%x)
//   return %b                     return %b
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/IR/Graph.h"

using namespace qopt;

PreservedAnalyses DeadCodeEliminationPass::run(Graph &g, AnalysisManager &) {
  bool changed = false;
  // Walking backwards frees producers before they are visited.
  for (auto it = g.getNodes().rbegin(); it != g.getNodes().rend();) {
    Node &n = *it++;
    bool used = false;
    for (const Value *r : n.getResults())
      used |= r->hasUses();
    if (used || n.getNumResults() == 0)
      continue;
    g.eraseNode(&n);
    changed = true;
  }
  return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
