//===- ThrowingPlugin.cpp - Test plugins that throw or misname passes -----===//
//
// Built three times (QOPT_THROW_AT): throwing while it registers its passes
// (register), a pass that throws when it runs (run), and a pass whose name
// holds a comma (name). qopt must say one line for each, naming the plugin
// or the pass, and exit 1.
//
//===----------------------------------------------------------------------===//

#include "qopt/Passes/PassPlugin.h"
#include "qopt/Passes/PassRegistry.h"

#include <stdexcept>

using namespace qopt;

namespace {
struct ThrowingPass : PassInfoMixin<ThrowingPass> {
  PreservedAnalyses run(Graph &, AnalysisManager &) {
    throw std::runtime_error("the pass gave up");
  }
};
} // namespace

extern "C" QOPT_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
  return {QOPT_PLUGIN_API_VERSION, "throw-test", "0", [](PassRegistry &r) {
            std::string at = QOPT_THROW_AT;
            if (at == "register")
              throw std::runtime_error("cannot register today");
            r.registerPass<ThrowingPass>(at == "name" ? "throw,pass"
                                                      : "throw-pass",
                                         "throws when it runs");
          }};
}
