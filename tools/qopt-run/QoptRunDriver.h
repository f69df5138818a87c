//===- QoptRunDriver.h - What qopt-run does with a model --------*- C++ -*-===//
//
// The work of qopt-run, past its command line: load a model or a plan file,
// make the inputs, run the reference interpreter or the CPU plan, and write
// or compare the outputs. qopt-run.cpp turns the flags into RunOptions and
// calls runModel.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_TOOLS_QOPT_RUN_QOPTRUNDRIVER_H
#define QOPT_TOOLS_QOPT_RUN_QOPTRUNDRIVER_H

#include "qopt/CodeGen/PlanPasses.h"
#include "qopt/Interpreter/Interpreter.h"
#include "qopt/ToolSupport/PassRegistrySetup.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace qopt {

/// What the command line asks of a run.
struct RunOptions {
  std::string modelPath;
  /// --input name=file.npy, --dim name=N and --expect name=file.npy,
  /// unparsed.
  std::vector<std::string> inputFiles;
  std::vector<std::string> dims;
  std::vector<std::string> expectFiles;
  uint64_t seed = 1;
  interp::InputDistribution distribution = interp::InputDistribution::Uniform;
  std::string outputPath;
  std::string compareWith;
  std::vector<std::string> comparePasses;
  double absTolerance = 0;
  int64_t maxLsb = 0;
  double minCosine = -2;
  /// The pipelines' passes (--load-pass-plugin among them).
  PluginSetup plugins;
  bool printTime = false;
  std::string opByOp;
  bool runPlan = false;
  std::string planPasses;
  bool planPassesGiven = false;
  bool printPlan = false;
  std::vector<std::string> runPlanPassNames;
  bool compareReference = false;
  unsigned benchRuns = 0;
  bool profilePlan = false;
  unsigned threads = 0;
  PlanPassOptions planPassOptions;
  bool allowFloatPlan = false;
  bool int8ActivationsForInt4 = false;
};

/// Runs the model or plan file at `options.modelPath` as the options say.
/// Returns the exit status (1 when outputs differ beyond the tolerance, the
/// difference printed) or the error.
llvm::Expected<int> runModel(const RunOptions &options);

} // namespace qopt

#endif // QOPT_TOOLS_QOPT_RUN_QOPTRUNDRIVER_H
