//===- ClashPlugin.cpp - Test plugin registering a name already taken -----===//

#include "qopt/Passes/PassPlugin.h"
#include "qopt/Passes/PassRegistry.h"

using namespace qopt;

namespace {
struct NothingPass : PassInfoMixin<NothingPass> {
  PreservedAnalyses run(Graph &, AnalysisManager &) {
    return PreservedAnalyses::all();
  }
};
} // namespace

extern "C" QOPT_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
  return {QOPT_PLUGIN_API_VERSION, "clash-test", "0", [](PassRegistry &r) {
            r.registerPass<NothingPass>("dce", "clashes with the builtin dce");
          }};
}
