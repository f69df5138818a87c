//===- PassRegistrySetup.h - The tools' one pass registry -------*- C++ -*-===//
//
// One way to set up the passes, for qopt, qopt-run, qopt-onnx-conformance
// and the Python module: the core analyses, every plugin in the built-in
// plugin directories, then the plugin libraries given (-load-pass-plugin).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_TOOLSUPPORT_PASSREGISTRYSETUP_H
#define QOPT_TOOLSUPPORT_PASSREGISTRYSETUP_H

#include "llvm/Support/Error.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qopt {
class PassRegistry;

/// Where the passes come from.
struct PluginSetup {
  /// The executable's argv[0] and an address in it: the built-in plugins are
  /// in <its directory>/../lib/qopt/plugins.
  const char *argv0 = "";
  void *anchor = nullptr;
  /// When set, the built-in plugin directories instead of the executable's
  /// (the Python module finds them beside itself).
  std::optional<std::vector<std::string>> directories;
  /// More plugin libraries, loaded after the directories' in this order. A
  /// bare file name that exists here means this file (./name), not a search
  /// of the library path; a library given twice (the same real path) loads
  /// once.
  std::vector<std::string> libraries;
};

/// A registry with the core analyses and the passes of every plugin:
/// $QOPT_PLUGIN_PATH (':'-separated) if set, else the built-in directories
/// (those that exist), then `setup.libraries`. The first plugin that cannot
/// be loaded or registered is the error.
llvm::Expected<std::unique_ptr<PassRegistry>>
makePassRegistry(const PluginSetup &setup);

} // namespace qopt

#endif // QOPT_TOOLSUPPORT_PASSREGISTRYSETUP_H
