//===- RunPipeline.h - A pass pipeline with the plugins' passes -*- C++ -*-===//
//
// What the tools other than qopt need to run a pipeline: the built-in
// plugins (found next to the executable) and any others given, a registry,
// the standard instrumentation, and the cost report of the lossy passes on
// stderr.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_TOOLS_COMMON_RUNPIPELINE_H
#define QOPT_TOOLS_COMMON_RUNPIPELINE_H

#include "qopt/ToolSupport/PassRegistrySetup.h"

#include "llvm/Support/Error.h"

namespace qopt {
class Model;

/// Runs `pipeline` on `model` with the passes of a registry made for
/// `plugins` (makePassRegistry).
llvm::Error runPipelineWithPlugins(Model &model, llvm::StringRef pipeline,
                                   const PluginSetup &plugins);

} // namespace qopt

#endif // QOPT_TOOLS_COMMON_RUNPIPELINE_H
