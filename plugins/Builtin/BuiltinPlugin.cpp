//===- BuiltinPlugin.cpp - Registers qopt's built-in transform passes -----===//
//
// Loaded at start-up from the plugin directory, like any third-party plugin.
// The passes and pipelines it registers are listed in Passes.def.
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/Fusion/FusionPlan.h"
#include "qopt/Passes/PassPlugin.h"
#include "qopt/Passes/PassRegistry.h"
#include "qopt/Support/Error.h"

using namespace qopt;

llvm::Expected<std::string> qopt::parseBackendParam(llvm::StringRef pass,
                                                    llvm::StringRef params) {
  std::string backend = params.trim().empty() ? "trt" : params.trim().str();
  if (!lookupBackendRules(backend))
    return makeError("'" + pass + "' takes a backend (trt, ort or cpu), got '" +
                     backend + "'");
  return backend;
}

static void registerBuiltinPasses(PassRegistry &registry) {
#define PASS(NAME, CLASS, DESCRIPTION)                                         \
  registry.registerPass<CLASS>(NAME, DESCRIPTION);
#define PASS_WITH_PARAMS(NAME, CLASS, PARAMS, DESCRIPTION)                     \
  registry.registerPass(                                                       \
      NAME, DESCRIPTION,                                                       \
      [](llvm::StringRef params)                                               \
          -> llvm::Expected<std::unique_ptr<PassConcept>> {                    \
        auto pass = CLASS::parse(params);                                      \
        if (!pass)                                                             \
          return pass.takeError();                                             \
        return std::make_unique<PassModel<CLASS>>(std::move(*pass), NAME);     \
      },                                                                       \
      PARAMS);
#define PIPELINE(NAME, TEXT, DESCRIPTION)                                      \
  registry.registerPipeline(NAME, DESCRIPTION, TEXT);
#include "qopt/Passes/Passes.def"
}

extern "C" QOPT_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
  return {QOPT_PLUGIN_API_VERSION, "builtin", QOPT_VERSION,
          registerBuiltinPasses};
}
