//===- PassPlugin.cpp - Loading passes from shared libraries --------------===//

#include "qopt/Passes/PassPlugin.h"
#include "qopt/Passes/PassRegistry.h"
#include "qopt/Support/Error.h"

#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"

#include <algorithm>

using namespace qopt;

llvm::Expected<PassPlugin> PassPlugin::load(const std::string &path) {
  std::string err;
  auto lib = llvm::sys::DynamicLibrary::getPermanentLibrary(path.c_str(), &err);
  if (!lib.isValid())
    return makeError("cannot load pass plugin '" + path + "': " + err);
  void *sym = lib.getAddressOfSymbol("qoptGetPassPluginInfo");
  if (!sym)
    return makeError("pass plugin '" + path +
                     "' does not export qoptGetPassPluginInfo()");
  auto getInfo = reinterpret_cast<QoptPassPluginInfo (*)()>(sym);
  QoptPassPluginInfo info = getInfo();
  if (info.apiVersion != QOPT_PLUGIN_API_VERSION)
    return makeError("pass plugin '" + path + "' uses plugin API version " +
                     llvm::Twine(info.apiVersion) + ", but qopt expects " +
                     llvm::Twine(QOPT_PLUGIN_API_VERSION));
  if (!info.pluginName || !info.pluginVersion || !info.registerCallbacks)
    return makeError("pass plugin '" + path +
                     "' returned incomplete plugin information");
  return PassPlugin(path, info);
}

llvm::Error PassPlugin::registerWith(PassRegistry &registry) const {
  registry.setCurrentPlugin(info.pluginName);
  // A plugin is someone else's code: an exception out of it is one error
  // line naming the plugin, not an abort.
  std::string thrown;
  try {
    info.registerCallbacks(registry);
  } catch (const std::exception &e) {
    thrown = e.what();
  } catch (...) {
    thrown = "an exception that is no std::exception";
  }
  registry.setCurrentPlugin("qopt");
  llvm::Error err = registry.takeRegistrationError();
  if (thrown.empty())
    return err;
  llvm::consumeError(std::move(err));
  return makeError(
      "pass plugin '" + toPrintableLine(info.pluginName) + "' (" + path +
      ") threw while registering its passes: " + toPrintableLine(thrown));
}

llvm::Error qopt::loadPluginsFromDirectory(llvm::StringRef dir,
                                           PassRegistry &registry) {
  std::vector<std::string> files;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".so")
      files.push_back(it->path());
  std::sort(files.begin(), files.end());
  for (const std::string &f : files) {
    auto plugin = PassPlugin::load(f);
    if (!plugin)
      return plugin.takeError();
    if (auto err = plugin->registerWith(registry))
      return err;
  }
  return llvm::Error::success();
}

std::vector<std::string> qopt::defaultPluginDirectories(const char *argv0,
                                                        void *mainAddr) {
  std::vector<std::string> dirs;
  // Set and empty is as unset: the built-in passes stay.
  if (auto env = llvm::sys::Process::GetEnv("QOPT_PLUGIN_PATH");
      env && !env->empty()) {
    llvm::SmallVector<llvm::StringRef, 4> parts;
    llvm::StringRef(*env).split(parts, ':', -1, false);
    for (llvm::StringRef p : parts)
      dirs.push_back(p.str());
    return dirs;
  }
  std::string exe = llvm::sys::fs::getMainExecutable(argv0, mainAddr);
  llvm::SmallString<256> dir(llvm::sys::path::parent_path(exe));
  llvm::sys::path::append(dir, "..", "lib", "qopt", "plugins");
  dirs.push_back(std::string(dir.str()));
  return dirs;
}
