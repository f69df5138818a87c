//===- RunPipeline.cpp - A pass pipeline with the plugins' passes ---------===//

#include "RunPipeline.h"
#include "qopt/IR/Graph.h"
#include "qopt/Passes/PassRegistry.h"
#include "qopt/Passes/StandardInstrumentations.h"

llvm::Error qopt::runPipelineWithPlugins(Model &model, llvm::StringRef pipeline,
                                         const PluginSetup &plugins) {
  auto registry = makePassRegistry(plugins);
  if (!registry)
    return registry.takeError();
  auto pm = (*registry)->parsePipeline(pipeline);
  if (!pm)
    return pm.takeError();
  PassInstrumentation pi;
  StandardInstrumentations si(InstrumentationOptions{});
  si.registerCallbacks(pi);
  AnalysisManager am(&pi);
  (*registry)->nameAnalyses(am);
  llvm::Error err = pm->runAndCheck(model.getGraph(), am);
  am.getCostReport().print(llvm::errs());
  return err;
}
