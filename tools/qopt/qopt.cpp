//===- qopt.cpp - The qopt driver -----------------------------------------===//
//
//   qopt <input.onnx|input.qir|-> [-passes=...] [-o FILE|-]
//        [-emit=qir|onnx|plan [-dim name=N]...] [-disable-output]
//        [-verify-each=false]
//
// Reads a model, optionally runs a pass pipeline, and writes it as .qir text
// (default, on stdout), ONNX, or the INT8 CPU plan of the result (a .qplan
// file for qopt-run; the graph inputs get static shapes first, each dynamic
// dim its -dim value or 1); "-o -" is stdout in every format and
// -disable-output writes nothing (as in LLVM's opt). Every error is one line,
// "qopt: error: <file>: <what>: <reason>", with exit status 1; an output file
// is only ever replaced whole.
//
//===----------------------------------------------------------------------===//

#include "../common/PlanPassFlags.h"
#include "QoptDriver.h"
#include "qopt/Passes/PassRegistry.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/ResourceLimits.h"
#include "qopt/ToolSupport/InputDistributionOption.h"
#include "qopt/ToolSupport/PassRegistrySetup.h"

#include "llvm/IR/PrintPasses.h"
#include "llvm/Pass.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

using namespace qopt;
namespace cl = llvm::cl;

static cl::OptionCategory qoptCategory("qopt options");
static ResourceLimitOptions resourceLimits(qoptCategory);

static cl::opt<std::string> inputPath(cl::Positional, cl::desc("<input>"),
                                      cl::init("-"), cl::cat(qoptCategory));
static cl::opt<std::string> outputPath("o",
                                       cl::desc("Output file ('-' = stdout)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(qoptCategory));
static cl::opt<EmitKind> emitKind(
    "emit",
    cl::desc("Output format (default: from the -o extension, else qir)"),
    cl::values(clEnumValN(EmitKind::Qir, "qir", ".qir text"),
               clEnumValN(EmitKind::Onnx, "onnx", "ONNX protobuf (QDQ form)"),
               clEnumValN(EmitKind::Plan, "plan",
                          "INT8 CPU plan file (.qplan) for qopt-run"),
               clEnumValN(EmitKind::PlanText, "plan-text",
                          "the plan's text form (qopt-run reads it too)")),
    cl::init(EmitKind::Default), cl::cat(qoptCategory));
static cl::list<std::string>
    planDims("dim",
             cl::desc("The size of a dynamic input dim, by its symbol ('?' "
                      "for unnamed ones), bound before the pipeline; shape "
                      "arithmetic on it folds. With -emit=plan every "
                      "unbound dim is 1"),
             cl::value_desc("name=N"), cl::cat(qoptCategory));
static cl::opt<int64_t> inlineElementsLimit(
    "inline-elements-limit",
    cl::desc("Print constants with up to N elements inline as dense<...>; "
             "larger ones go to the resources section"),
    cl::init(16), cl::cat(qoptCategory));
static cl::opt<bool> elideResourceData(
    "elide-resource-data",
    cl::desc("Print dense_resource references without their bytes "
             "(readable, but does not parse back)"),
    cl::init(false), cl::cat(qoptCategory));
static cl::opt<int64_t> targetOpset(
    "target-opset",
    cl::desc("Write the model for this default-domain ONNX opset: older "
             "spellings (Reshape's shape attribute, ...) are written back, "
             "and nodes that opset cannot express are an error"),
    cl::init(0), cl::cat(qoptCategory));

static cl::opt<bool> externalData(
    "external-data",
    cl::desc("Write ONNX initializers of 1 KiB or more to <output>.data next "
             "to the model (automatic when the weights pass 2 GiB)"),
    cl::init(false), cl::cat(qoptCategory));

static cl::opt<bool> disableOutput(
    "disable-output",
    cl::desc("Run the pipeline and its checks, but write no output"),
    cl::init(false), cl::cat(qoptCategory));
static cl::opt<bool>
    printStats("summary", cl::desc("Print a summary of the model to stderr"),
               cl::init(false), cl::cat(qoptCategory));

static cl::opt<std::string> explainBackend(
    "explain", cl::ValueOptional, cl::value_desc("trt[:8.5|:8.6|:10]|ort|cpu"),
    cl::desc("Explain every place where the model (after -passes, if given) "
             "still leaves INT8 under a backend's fusion rules (default trt, "
             "TensorRT 10; trt:8.6 for TensorRT 8.6): the nodes, the reason "
             "and the fix; then a summary. Writes no model unless -o is "
             "given"),
    cl::cat(qoptCategory));

static cl::list<std::string> reportPaths(
    "report", cl::value_desc("file.html|file.svg|file.json"),
    cl::desc("Write the fusion plan (after -passes, with the input's next to "
             "it when -passes is given) under the --explain backend (default "
             "trt): a self-contained HTML page, the graphviz picture alone, "
             "or JSON (docs/report-schema.md). Writes no model unless -o is "
             "given"),
    cl::cat(qoptCategory));

static cl::opt<bool> checkFixes(
    "explain-check-fixes",
    cl::desc("Name a fix as -passes='X' only after running X on a copy of "
             "the graph and seeing the leftover go; extend X by the fix of "
             "what it leaves, or fall back to the in-model fix (default on)"),
    cl::init(true), cl::cat(qoptCategory));

static cl::opt<bool> measureCost(
    "measure-cost",
    cl::desc("Run the reference interpreter on seeded inputs before and after "
             "the pipeline and print each output's cosine and max abs "
             "difference (what the lossy steps cost, measured)"),
    cl::cat(qoptCategory));
static cl::opt<interp::InputDistribution>
    measureDist("dist", cl::desc("Input distribution for -measure-cost"),
                inputDistributionValues(),
                cl::init(interp::InputDistribution::Uniform),
                cl::cat(qoptCategory));
static cl::opt<uint64_t> measureSeed("seed",
                                     cl::desc("Seed for -measure-cost inputs"),
                                     cl::init(1), cl::cat(qoptCategory));

static cl::OptionCategory passCategory("Pipeline options");
static cl::opt<std::string>
    passPipeline("passes",
                 cl::desc("Pass pipeline, e.g. -passes='cse,dce' or "
                          "-passes='fixpoint(a,b)' (see -print-passes)"),
                 cl::value_desc("pipeline"), cl::cat(passCategory));
static cl::list<std::string>
    pluginPaths("load-pass-plugin",
                cl::desc("Load passes from a plugin library"),
                cl::value_desc("file.so"), cl::cat(passCategory));
static cl::opt<bool> printPasses(
    "print-passes",
    cl::desc("Print every registered pass, analysis and pipeline, then exit"),
    cl::cat(passCategory));
static cl::opt<bool>
    verifyEach("verify-each",
               cl::desc("Verify the IR after each pass (default on; "
                        "-verify-each=false skips it, the final check stays)"),
               cl::init(true), cl::cat(passCategory));
static cl::opt<bool> debugPassManager(
    "debug-pass-manager",
    cl::desc("Log each pass and analysis run and invalidation"),
    cl::cat(passCategory));
// libLLVM-14.so already registers these option names (its own pass
// managers use them). qopt adopts the registered options instead of
// defining clashing ones: same spelling as in `opt`, our descriptions.
static const struct {
  const char *name;
  const char *description;
} kAdoptedOptions[] = {
    {"print-pipeline-passes",
     "Print the canonical text of the -passes pipeline, then exit"},
    {"print-after-all", "Print the IR after every pass"},
    {"print-before-all", "Print the IR before every pass"},
    {"print-before", "Print the IR before these passes"},
    {"print-after", "Print the IR after these passes"},
    {"print-changed", "Print the IR after each pass that changed it"},
    {"time-passes", "Time each pass and print a report"},
    {"stop-after", "Skip the passes after the first run of this one"},
};

static cl::Option *registeredOption(llvm::StringRef name) {
  auto &options = cl::getRegisteredOptions();
  auto it = options.find(name);
  return it == options.end() ? nullptr : it->second;
}

static void adoptLlvmOptions() {
  for (const auto &o : kAdoptedOptions)
    if (cl::Option *opt = registeredOption(o.name)) {
      opt->setDescription(o.description);
      opt->addCategory(passCategory);
      opt->setHiddenFlag(cl::NotHidden);
    }
}

static bool adoptedFlagGiven(llvm::StringRef name) {
  cl::Option *opt = registeredOption(name);
  return opt && opt->getNumOccurrences() > 0;
}

static std::string stopAfterPass() {
  // Registered by libLLVM's TargetPassConfig as cl::opt<std::string>.
  cl::Option *opt = registeredOption("stop-after");
  return opt ? static_cast<cl::opt<std::string> *>(opt)->getValue() : "";
}

static void printVersion(llvm::raw_ostream &os) {
  os << "qopt version " QOPT_VERSION "\n";
}

/// The instrumentation the flags ask for (LLVM's print and time flags
/// among them).
static InstrumentationOptions instrumentationFromFlags() {
  InstrumentationOptions io;
  io.printAfterAll = llvm::shouldPrintAfterAll();
  io.printBeforeAll = llvm::shouldPrintBeforeAll();
  io.printBefore = llvm::printBeforePasses();
  io.printAfter = llvm::printAfterPasses();
  io.printChanged = adoptedFlagGiven("print-changed");
  io.timePasses = llvm::TimePassesIsEnabled;
  io.verifyEach = verifyEach;
  io.debugPassManager = debugPassManager;
  io.stopAfter = stopAfterPass();
  return io;
}

/// What the flags ask of the run.
static QoptOptions optionsFromFlags(PlanPassOptions planPasses) {
  QoptOptions o;
  o.inputPath = inputPath;
  o.outputPath = outputPath;
  o.outputGiven = outputPath.getNumOccurrences() > 0;
  o.emit = emitKind;
  o.dims.assign(planDims.begin(), planDims.end());
  o.print.inlineElementsLimit = inlineElementsLimit;
  o.print.elideResourceData = elideResourceData;
  if (targetOpset.getNumOccurrences())
    o.targetOpset = targetOpset;
  o.externalData = externalData;
  o.disableOutput = disableOutput;
  o.printSummary = printStats;
  o.explain = explainBackend.getNumOccurrences() > 0;
  o.explainBackend = explainBackend;
  o.reportPaths.assign(reportPaths.begin(), reportPaths.end());
  o.checkFixes = checkFixes;
  o.measureCost = measureCost;
  o.measureDist = measureDist;
  o.measureSeed = measureSeed;
  o.passPipeline = passPipeline;
  o.instrumentation = instrumentationFromFlags();
  o.planPasses = std::move(planPasses);
  o.allowFloatPlan = floatPlanAllowed();
  o.int8ActivationsForInt4 = int8ActivationsForInt4();
  return o;
}

/// The flags that are refused with a pipeline: -stop-after without one, and
/// -print-changed with a value.
static llvm::Error checkPipelineFlags(const PassManager &pipeline,
                                      llvm::ArrayRef<const char *> args) {
  if (!stopAfterPass().empty() && pipeline.empty())
    return errorInFile(makeError("there is no -passes pipeline to stop in"),
                       "-stop-after");
  for (llvm::StringRef arg : args)
    if (arg.startswith("-print-changed=") || arg.startswith("--print-changed="))
      return errorInFile(makeError("qopt prints whole graphs only; use "
                                   "-print-changed without a value"),
                         "-print-changed");
  return llvm::Error::success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::SetVersionPrinter(printVersion);
  adoptLlvmOptions();
  setPlanPassFlagCategory(passCategory);
  cl::HideUnrelatedOptions({&qoptCategory, &passCategory});
  cl::ParseCommandLineOptions(argc, argv,
                              "qopt: optimizer for explicitly quantized ONNX "
                              "models\n");
  installResourceErrorHandlers("qopt");
  if (auto err = resourceLimits.apply()) {
    llvm::errs() << "qopt: error: "
                 << toPrintableLine(llvm::toString(std::move(err))) << "\n";
    return 1;
  }

  // Passes: the core analyses, the plugin directory, then -load-pass-plugin.
  PluginSetup plugins;
  plugins.argv0 = argv[0];
  plugins.anchor = reinterpret_cast<void *>(&main);
  plugins.libraries.assign(pluginPaths.begin(), pluginPaths.end());
  auto registry = makePassRegistry(plugins);
  if (!registry)
    return reportError(registry.takeError(), "plugins");
  if (printPasses) {
    (*registry)->printRegistry(llvm::outs());
    return 0;
  }
  if (printPlanPassesRequested()) {
    llvm::outs() << "Plan passes (after lowering, in this order):\n";
    printPlanPasses(llvm::outs());
    return 0;
  }
  // No input file and a terminal on stdin: a model is not about to be typed
  // in; say how to run qopt instead of waiting (opt refuses bitcode on a
  // terminal the same way). An explicit "-" still reads the terminal.
  if (!inputPath.getNumOccurrences() &&
      llvm::sys::Process::StandardInIsUserInput()) {
    llvm::errs() << "qopt: error: no input model (stdin is a terminal)\n"
                 << "usage: qopt [options] <model.onnx|model.qir|-> "
                    "[-passes=...] [-o out]; qopt --help lists the options\n";
    return 1;
  }
  auto planPassOptions = getPlanPassOptionsFromFlags();
  if (!planPassOptions)
    return reportError(planPassOptions.takeError(), "plan passes");
  auto pipeline = (*registry)->parsePipeline(passPipeline);
  if (!pipeline)
    return reportError(pipeline.takeError(), "-passes");
  if (adoptedFlagGiven("print-pipeline-passes")) {
    printPipelineText(*pipeline, llvm::outs());
    return 0;
  }
  if (auto err =
          checkPipelineFlags(*pipeline, llvm::makeArrayRef(argv + 1, argc - 1)))
    return reportError(std::move(err));
  return runQopt(optionsFromFlags(std::move(*planPassOptions)), **registry,
                 *pipeline);
}
