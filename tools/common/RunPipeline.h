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

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace qopt {
class Model;

/// Runs `pipeline` on `model`. `argv0` and `anchor` (an address in the
/// executable) locate the built-in plugins; `pluginPaths` adds others.
llvm::Error runPipelineWithPlugins(Model &model, llvm::StringRef pipeline,
                                   const char *argv0, void *anchor,
                                   llvm::ArrayRef<std::string> pluginPaths);

} // namespace qopt

#endif // QOPT_TOOLS_COMMON_RUNPIPELINE_H
