//===- RunPipeline.cpp - A pass pipeline with the plugins' passes ---------===//

#include "RunPipeline.h"
#include "qopt/IR/Graph.h"
#include "qopt/Passes/PassPlugin.h"
#include "qopt/Passes/PassRegistry.h"
#include "qopt/Passes/StandardInstrumentations.h"

#include "llvm/Support/FileSystem.h"

llvm::Error
qopt::runPipelineWithPlugins(Model &model, llvm::StringRef pipeline,
                             const char *argv0, void *anchor,
                             llvm::ArrayRef<std::string> pluginPaths) {
  PassRegistry registry;
  registerCoreAnalyses(registry);
  for (const std::string &dir : defaultPluginDirectories(argv0, anchor))
    if (llvm::sys::fs::is_directory(dir))
      if (auto err = loadPluginsFromDirectory(dir, registry))
        return err;
  for (const std::string &path : pluginPaths) {
    auto plugin = PassPlugin::load(path);
    if (!plugin)
      return plugin.takeError();
    if (auto err = plugin->registerWith(registry))
      return err;
  }
  auto pm = registry.parsePipeline(pipeline);
  if (!pm)
    return pm.takeError();
  PassInstrumentation pi;
  StandardInstrumentations si(InstrumentationOptions{});
  si.registerCallbacks(pi);
  AnalysisManager am(&pi);
  registry.nameAnalyses(am);
  llvm::Error err = pm->runAndCheck(model.getGraph(), am);
  am.getCostReport().print(llvm::errs());
  return err;
}
