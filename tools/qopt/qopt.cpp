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
#include "qopt/CodeGen/PlanBuilder.h"
#include "qopt/Fusion/FusionPlan.h"
#include "qopt/IR/AsmParser.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/ModelSummary.h"
#include "qopt/IR/OpsetSpellings.h"
#include "qopt/IR/Verifier.h"
#include "qopt/Onnx/ModelIO.h"
#include "qopt/Onnx/OnnxImporter.h"
#include "qopt/Passes/PassPlugin.h"
#include "qopt/Passes/PassRegistry.h"
#include "qopt/Passes/StandardInstrumentations.h"
#include "qopt/Plan/PlanFile.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/FileOutput.h"
#include "qopt/Support/ResourceLimits.h"
#include "qopt/ToolSupport/Compare.h"
#include "qopt/ToolSupport/FusionReport.h"
#include "qopt/ToolSupport/InputDistributionOption.h"
#include "llvm/Support/Path.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/IR/PrintPasses.h"
#include "llvm/Pass.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Timer.h"
#include "llvm/Support/WithColor.h"
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
enum class EmitKind { Default, Qir, Onnx, Plan, PlanText };
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
    cl::init(0));

static cl::opt<bool> externalData(
    "external-data",
    cl::desc("Write ONNX initializers of 1 KiB or more to <output>.data next "
             "to the model (automatic when the weights pass 2 GiB)"),
    cl::init(false));

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
static cl::opt<rt::InputDistribution>
    measureDist("dist", cl::desc("Input distribution for -measure-cost"),
                rt::inputDistributionValues(),
                cl::init(rt::InputDistribution::Uniform),
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

/// With -time-passes, the tool's own phases (load, plan, explanation, save)
/// are timed too, in a group of their own next to the pass timings.
static llvm::NamedRegionTimer timePhase(llvm::StringRef name,
                                        llvm::StringRef description) {
  return llvm::NamedRegionTimer(name, description, "qopt-phases",
                                "qopt phases (besides the passes)",
                                llvm::TimePassesIsEnabled);
}

/// Ends a successful run without tearing the model down. Freeing a
/// 100,000-node graph and its plan is a tenth of an --explain run, and the
/// process's memory goes back to the system anyway (clang's -disable-free
/// does the same). Buffered output and the -time-passes report go out first.
[[noreturn]] static void exitWithoutTeardown() {
  if (llvm::TimePassesIsEnabled)
    llvm::TimerGroup::printAll(llvm::errs());
  llvm::outs().flush();
  int code = 0;
  if (llvm::outs().has_error()) {
    llvm::errs() << "qopt: error: <stdout>: " << llvm::outs().error().message()
                 << "\n";
    llvm::outs().clear_error();
    code = 1;
  }
  llvm::errs().flush();
  llvm::sys::Process::Exit(code, /*NoCleanup=*/true);
}

/// One-line error; parse errors keep their located multi-line form.
static int reportError(llvm::Error err, llvm::StringRef file) {
  std::string located;
  llvm::handleAllErrors(
      std::move(err), [&](const ParseError &pe) { located = pe.message(); },
      [&](const llvm::ErrorInfoBase &e) {
        std::string msg =
            (file == "-" ? llvm::StringRef("<stdin>") : file).str() + ": " +
            e.message();
        llvm::errs() << "qopt: error: " << toPrintableLine(msg) << "\n";
      });
  if (!located.empty())
    llvm::errs() << located << "\n";
  return 1;
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
  PassRegistry registry;
  registerCoreAnalyses(registry);
  for (const std::string &dir :
       defaultPluginDirectories(argv[0], reinterpret_cast<void *>(&main)))
    if (llvm::sys::fs::is_directory(dir))
      if (auto err = loadPluginsFromDirectory(dir, registry))
        return reportError(std::move(err), "plugins");
  llvm::StringSet<> loadedPlugins;
  for (std::string path : pluginPaths) {
    // A bare file name means the file here, not a library search.
    if (path.find('/') == std::string::npos && llvm::sys::fs::exists(path))
      path = "./" + path;
    llvm::SmallString<256> real;
    if (!llvm::sys::fs::real_path(path, real) &&
        !loadedPlugins.insert(real).second)
      continue; // the same library given twice
    auto plugin = PassPlugin::load(path);
    if (!plugin)
      return reportError(plugin.takeError(), "plugins");
    if (auto err = plugin->registerWith(registry))
      return reportError(std::move(err), "plugins");
  }
  if (printPasses) {
    registry.printRegistry(llvm::outs());
    return 0;
  }
  if (printPlanPassesRequested()) {
    llvm::outs() << "Plan passes (after lowering, in this order):\n";
    printPlanPasses(llvm::outs());
    return 0;
  }
  auto planPassOptions = getPlanPassOptionsFromFlags();
  if (!planPassOptions)
    return reportError(planPassOptions.takeError(), "plan passes");
  auto pipeline = registry.parsePipeline(passPipeline);
  if (!pipeline)
    return reportError(pipeline.takeError(), "-passes");
  if (adoptedFlagGiven("print-pipeline-passes")) {
    pipeline->printPipeline(llvm::outs());
    llvm::outs() << "\n";
    std::vector<std::string> lossy;
    pipeline->collectLossy(lossy);
    if (!lossy.empty()) {
      llvm::outs() << "lossy steps (their cost is reported after the run):";
      for (const std::string &p : lossy)
        llvm::outs() << " " << p;
      llvm::outs() << "\n";
    }
    return 0;
  }
  const std::string stopAfter = stopAfterPass();
  if (!stopAfter.empty() && pipeline->empty())
    return reportError(
        llvm::createStringError(llvm::inconvertibleErrorCode(),
                                "there is no -passes pipeline to stop in"),
        "-stop-after");
  for (llvm::StringRef arg : llvm::makeArrayRef(argv + 1, argc - 1))
    if (arg.startswith("-print-changed=") || arg.startswith("--print-changed="))
      return reportError(
          llvm::createStringError(llvm::inconvertibleErrorCode(),
                                  "qopt prints whole graphs only; use "
                                  "-print-changed without a value"),
          "-print-changed");

  Context ctx;
  auto model = [&] {
    auto timer = timePhase("load", "load and verify the input model");
    return loadModelFile(inputPath, ctx);
  }();
  if (!model)
    return reportError(model.takeError(), inputPath);
  // A plan is built for static shapes, which the pipeline should see too.
  bool emitPlan = emitKind == EmitKind::Plan ||
                  emitKind == EmitKind::PlanText ||
                  (emitKind == EmitKind::Default &&
                   llvm::sys::path::extension(outputPath) == ".qplan");
  if (emitPlan || !planDims.empty()) {
    std::map<std::string, int64_t> dims;
    for (llvm::StringRef d : planDims) {
      auto [name, value] = d.split('=');
      int64_t v;
      if (value.getAsInteger(10, v) || v < 0)
        return reportError(llvm::createStringError(
                               llvm::inconvertibleErrorCode(),
                               "expected name=N, got '%s'", d.str().c_str()),
                           "-dim");
      dims[name.str()] = v;
    }
    if (auto err = bindStaticInputShapes(**model, dims, {}, emitPlan))
      return reportError(std::move(err), inputPath);
  }

  // A plan as explain and reports show it: every fix they name as a
  // pipeline checked by running it.
  auto explainedPlan = [&](Graph &graph, const BackendRules &rules) {
    FusionPlan plan;
    {
      auto timer = timePhase("fusion-plan", "compute the fusion plan");
      plan = computeFusionPlan(graph, rules);
      plan.importProblems =
          versionProblems(graph, (*model)->getDefaultOpsetVersion(), rules);
    }
    if (checkFixes) {
      auto timer = timePhase("check-fixes", "run the fixes explain names");
      confirmFixes(graph, plan, registry);
    }
    return plan;
  };
  // The plan of the final graph, when --report computed it for the rules
  // --explain uses too.
  std::optional<FusionPlan> finalPlan;
  const BackendRules *explainRules = nullptr;
  std::optional<PlanSnapshot> planBefore;
  std::vector<ReportSection> reportSections;
  const BackendRules *reportRules = nullptr;
  if (!reportPaths.empty()) {
    reportRules = lookupBackendRules(
        explainBackend.empty() ? "trt" : llvm::StringRef(explainBackend));
    for (const std::string &path : reportPaths) {
      llvm::StringRef ext = llvm::sys::path::extension(path);
      if (ext != ".html" && ext != ".svg" && ext != ".json")
        return reportError(
            llvm::createStringError(llvm::inconvertibleErrorCode(),
                                    "unknown report format '%s' (expected "
                                    ".html, .svg or .json)",
                                    ext.str().c_str()),
            path);
    }
    if (reportRules && !pipeline->empty())
      reportSections.push_back(captureReportSection(
          explainedPlan((*model)->getGraph(), *reportRules),
          (*model)->getGraph(), "input model", "before"));
  }
  if (explainBackend.getNumOccurrences()) {
    llvm::StringRef name =
        explainBackend.empty() ? "trt" : llvm::StringRef(explainBackend);
    explainRules = lookupBackendRules(name);
    if (!explainRules) {
      std::string known;
      for (const BackendRules *r : getAllBackendRules()) {
        known += (known.empty() ? "" : ", ") + r->name.str();
        for (const std::string &v : getBackendVersions(r->name))
          known += ", " + r->name.str() + ":" + v;
      }
      return reportError(
          llvm::createStringError(llvm::inconvertibleErrorCode(),
                                  "unknown backend '%s' (expected one of %s)",
                                  name.str().c_str(), known.c_str()),
          "-explain");
    }
    if (!pipeline->empty())
      planBefore =
          snapshotPlan(computeFusionPlan((*model)->getGraph(), *explainRules));
  }

  if (!pipeline->empty()) {
    InstrumentationOptions io;
    io.printAfterAll = llvm::shouldPrintAfterAll();
    io.printBeforeAll = llvm::shouldPrintBeforeAll();
    io.printBefore = llvm::printBeforePasses();
    io.printAfter = llvm::printAfterPasses();
    io.printChanged = adoptedFlagGiven("print-changed");
    io.timePasses = llvm::TimePassesIsEnabled;
    io.verifyEach = verifyEach;
    io.debugPassManager = debugPassManager;
    io.stopAfter = stopAfter;
    PassInstrumentation pi;
    StandardInstrumentations si(io);
    si.registerCallbacks(pi);
    AnalysisManager am(&pi);
    registry.nameAnalyses(am);
    Graph &graph = (*model)->getGraph();
    if (auto err = pipeline->runAndCheck(graph, am)) {
      si.discardTimeReport();
      return reportError(std::move(err), inputPath);
    }
    if (!stopAfter.empty() && !si.stopAfterReached()) {
      si.discardTimeReport();
      return reportError(
          llvm::createStringError(llvm::inconvertibleErrorCode(),
                                  "pass '%s' is not in the pipeline",
                                  stopAfter.c_str()),
          "-stop-after");
    }
    // Without -verify-each, still never write invalid IR (with it, the IR
    // after the last pass has been verified already).
    if (!verifyEach)
      if (auto err = verifyModel(**model)) {
        si.discardTimeReport();
        return reportError(
            llvm::createStringError(llvm::inconvertibleErrorCode(),
                                    "the pipeline produced invalid IR: %s",
                                    llvm::toString(std::move(err)).c_str()),
            inputPath);
      }
    si.printTimeReport();
    // What the lossy rewrites cost, in one summary after the run.
    am.getCostReport().print(llvm::errs());
    if (measureCost) {
      Context beforeCtx;
      auto before = loadModelFile(inputPath, beforeCtx);
      if (!before)
        return reportError(before.takeError(), inputPath);
      rt::CompareOptions options;
      options.seed = measureSeed;
      options.distribution = measureDist;
      auto report = rt::compareModels(**before, **model, options);
      if (!report)
        return reportError(report.takeError(), "-measure-cost");
      llvm::errs() << "measured cost (reference interpreter, seed "
                   << measureSeed << "):\n";
      report->print(llvm::errs());
    }
  }

  if (targetOpset.getNumOccurrences()) {
    if (targetOpset < 1 || targetOpset > kMaxSupportedOpset)
      return reportError(
          llvm::createStringError(llvm::inconvertibleErrorCode(),
                                  "opset %lld is not between 1 and %lld",
                                  static_cast<long long>(targetOpset),
                                  static_cast<long long>(kMaxSupportedOpset)),
          "-target-opset");
    if (auto err = retargetOpset(**model, targetOpset))
      return reportError(std::move(err), inputPath);
  }

  if (reportRules) {
    Graph &graph = (*model)->getGraph();
    finalPlan = explainedPlan(graph, *reportRules);
    reportSections.push_back(captureReportSection(
        *finalPlan, graph,
        pipeline->empty() ? "input model"
                          : "after -passes='" + passPipeline + "'",
        pipeline->empty() ? "plan" : "after"));
    for (const std::string &path : reportPaths)
      if (auto err =
              writeFusionReport(path, inputPath, *reportRules, reportSections))
        return reportError(std::move(err), path);
    if (!explainRules && !outputPath.getNumOccurrences())
      exitWithoutTeardown();
  }

  if (explainRules) {
    Graph &graph = (*model)->getGraph();
    std::optional<FusionPlan> &plan = finalPlan;
    if (!plan || plan->rules != explainRules)
      plan = explainedPlan(graph, *explainRules);
    {
      auto timer = timePhase("explain", "print the explanation");
      printExplanation(*plan, graph, llvm::outs());
      if (planBefore)
        printPlanChanges(*planBefore, *plan, passPipeline, llvm::outs());
    }
    if (!outputPath.getNumOccurrences())
      exitWithoutTeardown();
  }

  if (printStats) {
    llvm::errs() << "qopt: " << inputPath << "\n";
    printModelSummary(**model, llvm::errs());
  }

  if (disableOutput)
    return 0;
  if (emitPlan) {
    if (pipeline->empty() && emitKind != EmitKind::PlanText)
      llvm::WithColor::note(llvm::errs(), "qopt")
          << "-emit=plan without -passes: the plan runs the graph as it is; "
             "-passes='default<cpu>' forms the int8 units first\n";
    // Built with the portable kernels' packing: the file holds the weights
    // unpacked, and the reader packs them for the CPU that runs it.
    auto plan = [&] {
      auto timer = timePhase("plan", "build the CPU plan");
      return buildPlan(**model,
                       PlanBuildOptions{rt::Isa::Scalar, *planPassOptions,
                                        floatPlanAllowed()});
    }();
    if (!plan)
      return reportError(plan.takeError(), inputPath);
    auto bytes = emitKind == EmitKind::PlanText ? rt::printPlanText(**plan)
                                                : rt::serializePlan(**plan);
    if (!bytes)
      return reportError(bytes.takeError(), inputPath);
    auto saveTimer = timePhase("save", "write the plan file");
    if (auto err = writeFileAtomically(outputPath, [&](llvm::raw_ostream &os) {
          os << *bytes;
          return llvm::Error::success();
        }))
      return reportError(std::move(err), outputPath == "-"
                                             ? "<stdout>"
                                             : outputPath.getValue());
    return 0;
  }
  ModelFormat format = emitKind == EmitKind::Onnx  ? ModelFormat::Onnx
                       : emitKind == EmitKind::Qir ? ModelFormat::Qir
                       : outputPath == "-"         ? ModelFormat::Qir
                                                   : formatForPath(outputPath);
  PrintOptions printOptions;
  printOptions.inlineElementsLimit = inlineElementsLimit;
  printOptions.elideResourceData = elideResourceData;
  auto saveTimer = timePhase("save", "write the output model");
  if (auto err = saveModelFile(**model, outputPath, format, printOptions,
                               externalData ? ExternalData::Always
                                            : ExternalData::Auto))
    return reportError(std::move(err),
                       outputPath == "-" ? "<stdout>" : outputPath.getValue());
  return 0;
}
