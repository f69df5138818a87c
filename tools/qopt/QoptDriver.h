//===- QoptDriver.h - What qopt does with a model ---------------*- C++ -*-===//
//
// The work of the qopt driver, past its command line: load the model, run
// the pipeline with its instrumentation, explain and report the fusion plan,
// and write the model or its CPU plan. qopt.cpp turns the flags into
// QoptOptions and calls runQopt.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_TOOLS_QOPT_QOPTDRIVER_H
#define QOPT_TOOLS_QOPT_QOPTDRIVER_H

#include "qopt/CodeGen/PlanPasses.h"
#include "qopt/IR/AsmPrinter.h"
#include "qopt/Interpreter/Interpreter.h"
#include "qopt/Passes/StandardInstrumentations.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace qopt {
class PassManager;
class PassRegistry;

enum class EmitKind { Default, Qir, Onnx, Plan, PlanText };

/// What the command line asks of a run, past the registry and the pipeline.
struct QoptOptions {
  std::string inputPath;
  std::string outputPath;
  /// -o was given: --explain and --report write a model only then.
  bool outputGiven = false;
  EmitKind emit = EmitKind::Default;
  /// -dim name=N, unparsed.
  std::vector<std::string> dims;
  PrintOptions print;
  /// -target-opset, when given.
  std::optional<int64_t> targetOpset;
  bool externalData = false;
  bool disableOutput = false;
  bool printSummary = false;
  /// --explain was given, with this backend ("" = the default, trt).
  bool explain = false;
  std::string explainBackend;
  std::vector<std::string> reportPaths;
  bool checkFixes = true;
  bool measureCost = false;
  interp::InputDistribution measureDist = interp::InputDistribution::Uniform;
  uint64_t measureSeed = 1;
  /// The -passes text as given (reports and explanations quote it).
  std::string passPipeline;
  InstrumentationOptions instrumentation;
  PlanPassOptions planPasses;
  bool allowFloatPlan = false;
  bool int8ActivationsForInt4 = false;
};

/// `err` about `file`: each error's message gets "<file>: " in front ("-"
/// is "<stdin>"); parse errors keep their located form.
llvm::Error errorInFile(llvm::Error err, llvm::StringRef file);

/// Prints `err` as qopt's one-line errors (parse errors keep their located
/// multi-line form); returns the exit status, 1.
int reportError(llvm::Error err);
inline int reportError(llvm::Error err, llvm::StringRef file) {
  return reportError(errorInFile(std::move(err), file));
}

/// -print-pipeline-passes: the pipeline's canonical text and its lossy steps.
void printPipelineText(const PassManager &pipeline, llvm::raw_ostream &os);

/// Runs qopt on `options.inputPath`; returns the exit status. --explain and
/// --report without -o end the process here (exit status 0 or, when stdout
/// fails, 1) without tearing the model down.
int runQopt(const QoptOptions &options, const PassRegistry &registry,
            PassManager &pipeline);

} // namespace qopt

#endif // QOPT_TOOLS_QOPT_QOPTDRIVER_H
