//===- BreakIRPlugin.cpp - Test plugin whose pass corrupts the IR ---------===//
//
// `break-ir` moves the last node to the front of the graph, so it uses values
// before their definition; -verify-each must name this pass and stop.
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/Graph.h"
#include "qopt/Passes/PassPlugin.h"
#include "qopt/Passes/PassRegistry.h"

using namespace qopt;

namespace {
struct BreakIRPass : PassInfoMixin<BreakIRPass> {
  PreservedAnalyses run(Graph &g, AnalysisManager &) {
    if (g.getNumNodes() < 2)
      return PreservedAnalyses::all();
    g.moveBefore(&g.getNodes().back(), &g.getNodes().front());
    return PreservedAnalyses::none();
  }
};
} // namespace

extern "C" QOPT_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
  return {QOPT_PLUGIN_API_VERSION, "break-ir-test", "0", [](PassRegistry &r) {
            r.registerPass<BreakIRPass>("break-ir",
                                        "moves the last node first (test)");
          }};
}
