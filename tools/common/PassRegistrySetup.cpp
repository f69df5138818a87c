//===- PassRegistrySetup.cpp - The registry every tool starts from --------===//

#include "qopt/ToolSupport/PassRegistrySetup.h"
#include "qopt/Passes/PassPlugin.h"
#include "qopt/Passes/PassRegistry.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"

using namespace qopt;

/// $QOPT_PLUGIN_PATH's directories, else the setup's or the executable's.
static std::vector<std::string> pluginDirectories(const PluginSetup &setup) {
  auto env = llvm::sys::Process::GetEnv("QOPT_PLUGIN_PATH");
  if (!setup.directories || (env && !env->empty()))
    return defaultPluginDirectories(setup.argv0, setup.anchor);
  return *setup.directories;
}

llvm::Expected<std::unique_ptr<PassRegistry>>
qopt::makePassRegistry(const PluginSetup &setup) {
  auto registry = std::make_unique<PassRegistry>();
  registerCoreAnalyses(*registry);
  for (const std::string &dir : pluginDirectories(setup))
    if (llvm::sys::fs::is_directory(dir))
      if (auto err = loadPluginsFromDirectory(dir, *registry))
        return err;
  llvm::StringSet<> loaded;
  for (std::string path : setup.libraries) {
    // A bare file name means the file here, not a library search.
    if (path.find('/') == std::string::npos && llvm::sys::fs::exists(path))
      path = "./" + path;
    llvm::SmallString<256> real;
    if (!llvm::sys::fs::real_path(path, real) && !loaded.insert(real).second)
      continue; // the same library given twice
    auto plugin = PassPlugin::load(path);
    if (!plugin)
      return plugin.takeError();
    if (auto err = plugin->registerWith(*registry))
      return err;
  }
  return registry;
}
