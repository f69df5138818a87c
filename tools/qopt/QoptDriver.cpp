//===- QoptDriver.cpp - What qopt does with a model -----------------------===//

#include "QoptDriver.h"
#include "qopt/CodeGen/PlanBuilder.h"
#include "qopt/Fusion/FusionPlan.h"
#include "qopt/IR/AsmParser.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/ModelSummary.h"
#include "qopt/IR/OpsetSpellings.h"
#include "qopt/IR/Verifier.h"
#include "qopt/Onnx/ModelIO.h"
#include "qopt/Onnx/OnnxImporter.h"
#include "qopt/Passes/PassRegistry.h"
#include "qopt/Plan/PlanFile.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/FileOutput.h"
#include "qopt/ToolSupport/Compare.h"
#include "qopt/ToolSupport/FusionReport.h"

#include "llvm/Pass.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Timer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace qopt;

llvm::Error qopt::errorInFile(llvm::Error err, llvm::StringRef file) {
  llvm::Error result = llvm::Error::success();
  llvm::handleAllErrors(
      std::move(err),
      [&](std::unique_ptr<ParseError> pe) {
        result =
            llvm::joinErrors(std::move(result), llvm::Error(std::move(pe)));
      },
      [&](const llvm::ErrorInfoBase &e) {
        std::string msg =
            (file == "-" ? llvm::StringRef("<stdin>") : file).str() + ": " +
            e.message();
        result = llvm::joinErrors(std::move(result), makeError(msg));
      });
  return result;
}

int qopt::reportError(llvm::Error err) {
  std::string located;
  llvm::handleAllErrors(
      std::move(err), [&](const ParseError &pe) { located = pe.message(); },
      [&](const llvm::ErrorInfoBase &e) {
        llvm::errs() << "qopt: error: " << toPrintableLine(e.message()) << "\n";
      });
  if (!located.empty())
    llvm::errs() << located << "\n";
  return 1;
}

void qopt::printPipelineText(const PassManager &pipeline,
                             llvm::raw_ostream &os) {
  pipeline.printPipeline(os);
  os << "\n";
  std::vector<std::string> lossy;
  pipeline.collectLossy(lossy);
  if (!lossy.empty()) {
    os << "lossy steps (their cost is reported after the run):";
    for (const std::string &p : lossy)
      os << " " << p;
    os << "\n";
  }
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

static llvm::Error errorIn(llvm::StringRef file, const llvm::Twine &msg) {
  return errorInFile(makeError(msg), file);
}

namespace {

/// One run of qopt on one model, phase by phase.
class Driver {
public:
  Driver(const QoptOptions &options, const PassRegistry &registry,
         PassManager &pipeline)
      : options(options), registry(registry), pipeline(pipeline) {}

  /// Every phase in turn; --explain or --report without -o exit in between.
  llvm::Error run();

private:
  llvm::Error loadInput();
  llvm::Error bindInputShapes();
  llvm::Error prepareReports();
  llvm::Error prepareExplanation();
  llvm::Error runPipeline();
  llvm::Error measureCost();
  llvm::Error retargetOpset();
  llvm::Error writeReports();
  void explain();
  llvm::Error writePlan();
  llvm::Error writeModel();
  /// A plan as explain and reports show it: every fix they name as a
  /// pipeline checked by running it.
  FusionPlan explainedPlan(Graph &graph, const BackendRules &rules);
  /// The output path as errors name it.
  llvm::StringRef outputName() const {
    return options.outputPath == "-" ? "<stdout>"
                                     : llvm::StringRef(options.outputPath);
  }

  const QoptOptions &options;
  const PassRegistry &registry;
  PassManager &pipeline;
  Context ctx;
  std::unique_ptr<Model> model;
  /// A plan is built for static shapes, which the pipeline should see too.
  bool emitPlan = false;
  /// The plan of the final graph, when --report computed it for the rules
  /// --explain uses too.
  std::optional<FusionPlan> finalPlan;
  const BackendRules *explainRules = nullptr;
  std::optional<PlanSnapshot> planBefore;
  std::vector<ReportSection> reportSections;
  const BackendRules *reportRules = nullptr;
};

} // namespace

llvm::Error Driver::run() {
  if (auto err = loadInput())
    return err;
  if (auto err = prepareReports())
    return err;
  if (auto err = prepareExplanation())
    return err;
  if (!pipeline.empty())
    if (auto err = runPipeline())
      return err;
  if (auto err = retargetOpset())
    return err;
  if (reportRules) {
    if (auto err = writeReports())
      return err;
    if (!explainRules && !options.outputGiven)
      exitWithoutTeardown();
  }
  if (explainRules) {
    explain();
    if (!options.outputGiven)
      exitWithoutTeardown();
  }
  if (options.printSummary) {
    llvm::errs() << "qopt: " << options.inputPath << "\n";
    printModelSummary(*model, llvm::errs());
  }
  if (options.disableOutput)
    return llvm::Error::success();
  return emitPlan ? writePlan() : writeModel();
}

llvm::Error Driver::loadInput() {
  auto loaded = [&] {
    auto timer = timePhase("load", "load and verify the input model");
    return loadModelFile(options.inputPath, ctx);
  }();
  if (!loaded)
    return errorInFile(loaded.takeError(), options.inputPath);
  model = std::move(*loaded);
  emitPlan = options.emit == EmitKind::Plan ||
             options.emit == EmitKind::PlanText ||
             (options.emit == EmitKind::Default &&
              llvm::sys::path::extension(options.outputPath) == ".qplan");
  if (emitPlan || !options.dims.empty())
    return bindInputShapes();
  return llvm::Error::success();
}

/// -dim name=N binds dynamic input dims; a plan binds every other to 1.
llvm::Error Driver::bindInputShapes() {
  std::map<std::string, int64_t> dims;
  for (llvm::StringRef d : options.dims) {
    auto [name, value] = d.split('=');
    int64_t v;
    if (value.getAsInteger(10, v) || v < 0)
      return errorIn("-dim", "expected name=N, got '" + d + "'");
    dims[name.str()] = v;
  }
  if (auto err = bindStaticInputShapes(*model, dims, {}, emitPlan))
    return errorInFile(std::move(err), options.inputPath);
  return llvm::Error::success();
}

FusionPlan Driver::explainedPlan(Graph &graph, const BackendRules &rules) {
  FusionPlan plan;
  {
    auto timer = timePhase("fusion-plan", "compute the fusion plan");
    plan = computeFusionPlan(graph, rules);
    plan.importProblems =
        versionProblems(graph, model->getDefaultOpsetVersion(), rules);
  }
  if (options.checkFixes) {
    auto timer = timePhase("check-fixes", "run the fixes explain names");
    confirmFixes(graph, plan, registry);
  }
  return plan;
}

/// --report: the rules (those of --explain), the formats, and the input's
/// plan when a pipeline will change it.
llvm::Error Driver::prepareReports() {
  if (options.reportPaths.empty())
    return llvm::Error::success();
  reportRules = lookupBackendRules(
      options.explainBackend.empty() ? "trt"
                                     : llvm::StringRef(options.explainBackend));
  for (const std::string &path : options.reportPaths) {
    llvm::StringRef ext = llvm::sys::path::extension(path);
    if (ext != ".html" && ext != ".svg" && ext != ".json")
      return errorIn(path, "unknown report format '" + ext +
                               "' (expected .html, .svg or .json)");
  }
  if (reportRules && !pipeline.empty())
    reportSections.push_back(
        captureReportSection(explainedPlan(model->getGraph(), *reportRules),
                             model->getGraph(), "input model", "before"));
  return llvm::Error::success();
}

/// --explain: the backend's rules, and the input's plan when a pipeline will
/// change it.
llvm::Error Driver::prepareExplanation() {
  if (!options.explain)
    return llvm::Error::success();
  llvm::StringRef name = options.explainBackend.empty()
                             ? "trt"
                             : llvm::StringRef(options.explainBackend);
  explainRules = lookupBackendRules(name);
  if (!explainRules) {
    std::string known;
    for (const BackendRules *r : getAllBackendRules()) {
      known += (known.empty() ? "" : ", ") + r->name.str();
      for (const std::string &v : getBackendVersions(r->name))
        known += ", " + r->name.str() + ":" + v;
    }
    return errorIn("-explain", "unknown backend '" + name +
                                   "' (expected one of " + known + ")");
  }
  if (!pipeline.empty())
    planBefore =
        snapshotPlan(computeFusionPlan(model->getGraph(), *explainRules));
  return llvm::Error::success();
}

/// The pipeline with the instrumentation the flags ask for, then the cost
/// report of its lossy steps (and with -measure-cost, the measured cost).
llvm::Error Driver::runPipeline() {
  const InstrumentationOptions &io = options.instrumentation;
  PassInstrumentation pi;
  StandardInstrumentations si(io);
  si.registerCallbacks(pi);
  AnalysisManager am(&pi);
  registry.nameAnalyses(am);
  if (auto err = pipeline.runAndCheck(model->getGraph(), am)) {
    si.discardTimeReport();
    return errorInFile(std::move(err), options.inputPath);
  }
  if (!io.stopAfter.empty() && !si.stopAfterReached()) {
    si.discardTimeReport();
    return errorIn("-stop-after",
                   "pass '" + io.stopAfter + "' is not in the pipeline");
  }
  // Without -verify-each, still never write invalid IR (with it, the IR
  // after the last pass has been verified already).
  if (!io.verifyEach)
    if (auto err = verifyModel(*model)) {
      si.discardTimeReport();
      return errorIn(options.inputPath, "the pipeline produced invalid IR: " +
                                            llvm::toString(std::move(err)));
    }
  si.printTimeReport();
  // What the lossy rewrites cost, in one summary after the run.
  am.getCostReport().print(llvm::errs());
  return options.measureCost ? measureCost() : llvm::Error::success();
}

/// -measure-cost: the input model against the result on the reference
/// interpreter.
llvm::Error Driver::measureCost() {
  Context beforeCtx;
  auto before = loadModelFile(options.inputPath, beforeCtx);
  if (!before)
    return errorInFile(before.takeError(), options.inputPath);
  CompareOptions compare;
  compare.seed = options.measureSeed;
  compare.distribution = options.measureDist;
  auto report = compareModels(**before, *model, compare);
  if (!report)
    return errorInFile(report.takeError(), "-measure-cost");
  llvm::errs() << "measured cost (reference interpreter, seed "
               << options.measureSeed << "):\n";
  report->print(llvm::errs());
  return llvm::Error::success();
}

llvm::Error Driver::retargetOpset() {
  if (!options.targetOpset)
    return llvm::Error::success();
  int64_t opset = *options.targetOpset;
  if (opset < 1 || opset > kMaxSupportedOpset)
    return errorIn("-target-opset", "opset " + llvm::Twine(opset) +
                                        " is not between 1 and " +
                                        llvm::Twine(kMaxSupportedOpset));
  if (auto err = qopt::retargetOpset(*model, opset))
    return errorInFile(std::move(err), options.inputPath);
  return llvm::Error::success();
}

/// --report: the final graph's plan next to the input's, in each file.
llvm::Error Driver::writeReports() {
  Graph &graph = model->getGraph();
  finalPlan = explainedPlan(graph, *reportRules);
  reportSections.push_back(captureReportSection(
      *finalPlan, graph,
      pipeline.empty() ? "input model"
                       : "after -passes='" + options.passPipeline + "'",
      pipeline.empty() ? "plan" : "after"));
  // All of them or none: a report that cannot be written leaves no other.
  if (auto err = writeFusionReports(options.reportPaths, options.inputPath,
                                    *reportRules, reportSections)) {
    DiagLocation where = getLocation(err);
    return errorInFile(std::move(err), where.name);
  }
  return llvm::Error::success();
}

/// --explain: the leftovers of the final graph, and what the pipeline
/// changed.
void Driver::explain() {
  Graph &graph = model->getGraph();
  std::optional<FusionPlan> &plan = finalPlan;
  if (!plan || plan->rules != explainRules)
    plan = explainedPlan(graph, *explainRules);
  auto timer = timePhase("explain", "print the explanation");
  printExplanation(*plan, graph, llvm::outs());
  if (planBefore)
    printPlanChanges(*planBefore, *plan, options.passPipeline, llvm::outs());
}

llvm::Error Driver::writePlan() {
  if (pipeline.empty() && options.emit != EmitKind::PlanText)
    llvm::WithColor::note(llvm::errs(), "qopt")
        << "-emit=plan without -passes: the plan runs the graph as it is; "
           "-passes='default<cpu>' forms the int8 units first\n";
  // Built with the portable kernels' packing: the file holds the weights
  // unpacked, and the reader packs them for the CPU that runs it.
  auto plan = [&] {
    auto timer = timePhase("plan", "build the CPU plan");
    return buildPlan(*model,
                     PlanBuildOptions{kernels::Isa::Scalar, options.planPasses,
                                      options.allowFloatPlan,
                                      options.int8ActivationsForInt4});
  }();
  if (!plan)
    return errorInFile(plan.takeError(), options.inputPath);
  auto bytes = options.emit == EmitKind::PlanText ? plan::printPlanText(**plan)
                                                  : plan::serializePlan(**plan);
  if (!bytes)
    return errorInFile(bytes.takeError(), options.inputPath);
  auto saveTimer = timePhase("save", "write the plan file");
  if (auto err =
          writeFileAtomically(options.outputPath, [&](llvm::raw_ostream &os) {
            os << *bytes;
            return llvm::Error::success();
          }))
    return errorInFile(std::move(err), outputName());
  return llvm::Error::success();
}

llvm::Error Driver::writeModel() {
  const std::string &out = options.outputPath;
  ModelFormat format = options.emit == EmitKind::Onnx  ? ModelFormat::Onnx
                       : options.emit == EmitKind::Qir ? ModelFormat::Qir
                       : out == "-"                    ? ModelFormat::Qir
                                                       : formatForPath(out);
  auto saveTimer = timePhase("save", "write the output model");
  if (auto err = saveModelFile(*model, out, format, options.print,
                               options.externalData ? ExternalData::Always
                                                    : ExternalData::Auto))
    return errorInFile(std::move(err), outputName());
  return llvm::Error::success();
}

int qopt::runQopt(const QoptOptions &options, const PassRegistry &registry,
                  PassManager &pipeline) {
  Driver driver(options, registry, pipeline);
  if (auto err = driver.run())
    return reportError(std::move(err));
  return 0;
}
