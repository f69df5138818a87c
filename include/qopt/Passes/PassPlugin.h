//===- PassPlugin.h - Loading passes from shared libraries ------*- C++ -*-===//
//
// A plugin is a shared library that exports
//
//   extern "C" QOPT_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
//     return {QOPT_PLUGIN_API_VERSION, "my-plugin", "1.0",
//             [](qopt::PassRegistry &r) { r.registerPass<MyPass>("my-pass",
//                                                   "what it does"); }};
//   }
//
// qopt loads every plugin in its plugin directory at start-up
// (<bin>/../lib/qopt/plugins, or the directories in $QOPT_PLUGIN_PATH) and
// those given with -load-pass-plugin=<file>.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PASSES_PASSPLUGIN_H
#define QOPT_PASSES_PASSPLUGIN_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace qopt {
class PassRegistry;
}

/// Bumped whenever QoptPassPluginInfo or the registry's ABI changes.
#define QOPT_PLUGIN_API_VERSION 1

#define QOPT_PLUGIN_EXPORT __attribute__((visibility("default")))

extern "C" {
struct QoptPassPluginInfo {
  uint32_t apiVersion;
  const char *pluginName;
  const char *pluginVersion;
  void (*registerCallbacks)(qopt::PassRegistry &registry);
};
}

namespace qopt {

/// A loaded plugin (the library stays loaded for the process lifetime).
class PassPlugin {
public:
  static llvm::Expected<PassPlugin> load(const std::string &path);
  llvm::StringRef getName() const { return info.pluginName; }
  llvm::StringRef getVersion() const { return info.pluginVersion; }
  llvm::StringRef getPath() const { return path; }
  /// Runs the plugin's registration; name clashes come back as an error.
  llvm::Error registerWith(PassRegistry &registry) const;

private:
  PassPlugin(std::string path, QoptPassPluginInfo info)
      : path(std::move(path)), info(info) {}
  std::string path;
  QoptPassPluginInfo info;
};

/// Loads and registers every "*.so" in `dir` (sorted by name).
llvm::Error loadPluginsFromDirectory(llvm::StringRef dir,
                                     PassRegistry &registry);

/// The directories searched at start-up: $QOPT_PLUGIN_PATH (':'-separated)
/// if set, else <directory of argv0>/../lib/qopt/plugins.
std::vector<std::string> defaultPluginDirectories(const char *argv0,
                                                  void *mainAddr);

} // namespace qopt

#endif // QOPT_PASSES_PASSPLUGIN_H
