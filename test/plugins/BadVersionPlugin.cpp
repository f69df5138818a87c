//===- BadVersionPlugin.cpp - Test plugin built for another API version ---===//

#include "qopt/Passes/PassPlugin.h"

extern "C" QOPT_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
  return {999, "bad-version-test", "0", [](qopt::PassRegistry &) {}};
}
