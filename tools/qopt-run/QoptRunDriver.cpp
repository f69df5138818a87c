//===- QoptRunDriver.cpp - What qopt-run does with a model ----------------===//

#include "QoptRunDriver.h"
#include "../common/PlanPassFlags.h"
#include "../common/RunPipeline.h"
#include "PlanBench.h"
#include "qopt/CodeGen/PlanBuilder.h"
#include "qopt/IR/AsmParser.h"
#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/Onnx/ModelIO.h"
#include "qopt/Plan/PlanFile.h"
#include "qopt/Plan/Steps/ReformatStep.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/FileOutput.h"
#include "qopt/Support/FloatFormat.h"
#include "qopt/Support/ResourceLimits.h"
#include "qopt/ToolSupport/Compare.h"
#include "qopt/ToolSupport/NpyIO.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA1.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

using namespace qopt;

/// Whether `head` starts with a plan file's magic, or as a plan's text form
/// (after comment lines).
static bool startsAsPlan(llvm::StringRef head) {
  return plan::isPlanFile(head) || plan::isPlanText(head);
}

/// The same for the file at `path`, within its first 64 KiB.
static bool startsAsPlanFile(llvm::StringRef path) {
  std::ifstream in(path.str(), std::ios::binary);
  std::string head(size_t(64) << 10, '\0');
  in.read(head.data(), head.size());
  head.resize(in.gcount());
  return startsAsPlan(head);
}

/// Whether `path` is stdin or a pipe, FIFO or device: what can be read once.
static bool isStream(llvm::StringRef path) {
  llvm::sys::fs::file_status status;
  return path == "-" || (!llvm::sys::fs::status(path, status) &&
                         !llvm::sys::fs::is_regular_file(status) &&
                         !llvm::sys::fs::is_directory(status));
}

/// The whole text form: every constant's bytes, bit-exact by design.
static std::string printWhole(const Model &m) {
  std::string text;
  llvm::raw_string_ostream os(text);
  PrintOptions opts;
  opts.inlineElementsLimit = 0;
  printModel(m, os, opts);
  return text;
}

/// SHA-1 of a model's whole text form: two models that print the same
/// compute the same outputs on the reference interpreter.
static std::string textFingerprint(llvm::StringRef text) {
  return llvm::toHex(llvm::SHA1::hash(llvm::arrayRefFromStringRef(text)));
}

namespace {

/// One unit in the last place of a float16 or bfloat16 tensor at its
/// largest magnitude `scale` (0 for other kinds): what a float16 kernel
/// that sums in float16 (ONNX Runtime's MatMul on CPU) may differ by from
/// one that rounds once, as the reference does.
double ulpAtScaleOf16Bit(ElementKind kind, double scale) {
  if (kind != ElementKind::F16 && kind != ElementKind::BF16)
    return 0;
  int mantissaBits = kind == ElementKind::F16 ? 10 : 7;
  int minExponent = kind == ElementKind::F16 ? -14 : -126;
  int exponent =
      scale > 0 ? std::max(minExponent, std::ilogb(scale)) : minExponent;
  return std::ldexp(1.0, exponent - mantissaBits);
}

/// Tensors compared one by one against the reference's: integer ones may
/// differ by --max-lsb, float ones by --atol relative to the largest
/// magnitude of the reference tensor (float16 and bfloat16 ones at least by
/// one unit in their last place at that magnitude).
class OpByOpTally {
public:
  explicit OpByOpTally(const RunOptions &options) : options(options) {}

  void add(llvm::StringRef what, llvm::StringRef name,
           const interp::Tensor &got, const interp::Tensor &want) {
    OutputComparison c = compareTensors(name, got, want);
    ++compared;
    double scale = 0;
    for (int64_t e = 0; !c.integer && e < want.numElements(); ++e)
      scale = std::max(scale, std::fabs(want.getDouble(e)));
    double rel = scale > 0 ? c.maxAbsDiff / scale : c.maxAbsDiff;
    bool ok =
        !c.shapeOrTypeDiffers &&
        (c.integer ? c.maxLsbDiff <= options.maxLsb
                   : rel <= options.absTolerance ||
                         c.maxAbsDiff <= ulpAtScaleOf16Bit(want.kind(), scale));
    if (c.integer) {
      worstLsb = std::max(worstLsb, c.maxLsbDiff);
      flipped += c.differing;
      quantElements += c.elements;
    } else {
      worstRel = std::max(worstRel, rel);
    }
    if (ok)
      return;
    ++bad;
    llvm::outs() << "DIFF " << what << " output '" << toPrintableLine(c.name)
                 << "': ";
    ComparisonReport one;
    one.outputs.push_back(c);
    one.print(llvm::outs());
  }

  /// The summary line; the exit status.
  int finish(llvm::StringRef title) const {
    llvm::outs() << title << ": " << compared << " tensors compared, " << bad
                 << " beyond tolerance; integer tensors: " << flipped << " of "
                 << quantElements << " elements differ, max " << worstLsb
                 << " LSB; float tensors: max diff " << formatDouble(worstRel)
                 << " of the tensor's largest magnitude\n";
    return bad ? 1 : 0;
  }

private:
  const RunOptions &options;
  unsigned compared = 0, bad = 0;
  int64_t worstLsb = 0, flipped = 0, quantElements = 0;
  double worstRel = 0;
};

} // namespace

/// Op-by-op comparison: every node computes from the reference's values of
/// its operands, so each node's difference is its own (no propagation).
/// Integer outputs may differ by --max-lsb, float ones by --atol relative to
/// the largest magnitude of that output.
static llvm::Expected<int> runOpByOp(const RunOptions &options,
                                     const interp::Interpreter &interp,
                                     const interp::TensorMap &inputs) {
  auto members = readNpz(options.opByOp);
  if (!members)
    return members.takeError();
  std::map<std::string, interp::Tensor> reference(members->begin(),
                                                  members->end());
  interp::Interpreter::Hooks hooks;
  hooks.operandOverride = [&](const Value &v) -> const interp::Tensor * {
    auto it = reference.find(v.getName().str());
    return it == reference.end() ? nullptr : &it->second;
  };
  OpByOpTally tally(options);
  hooks.afterNode = [&](const Node &n, llvm::ArrayRef<interp::Tensor> outs) {
    for (unsigned i = 0; i < n.getNumResults(); ++i) {
      auto it = reference.find(n.getResult(i)->getName().str());
      if (it != reference.end() && outs[i].isValid())
        tally.add(n.describe(), n.getResult(i)->getName(), outs[i], it->second);
    }
  };
  auto outputs = interp.run(inputs, &hooks);
  if (!outputs)
    return outputs.takeError();
  return tally.finish("op-by-op");
}

/// --plan --compare-reference: every step of the plan runs on the
/// reference's values of its inputs and its outputs are compared with the
/// reference's (so each step's difference is its own); then the plan runs
/// end to end and its outputs are compared too, for information.
static llvm::Expected<int>
comparePlanWithReference(const RunOptions &options, const plan::Plan &plan,
                         const interp::Interpreter &interp,
                         const interp::TensorMap &inputs) {
  std::map<std::string, interp::Tensor> reference(inputs.begin(), inputs.end());
  interp::Interpreter::Hooks hooks;
  hooks.afterNode = [&](const Node &n, llvm::ArrayRef<interp::Tensor> outs) {
    for (unsigned i = 0; i < n.getNumResults(); ++i)
      if (outs[i].isValid())
        reference[n.getResult(i)->getName().str()] = outs[i];
  };
  auto expected = interp.run(inputs, &hooks);
  if (!expected)
    return expected.takeError();

  OpByOpTally tally(options);
  plan::PlanRunOptions runOptions;
  runOptions.threads = options.threads;
  runOptions.beforeStep = [&](const plan::PlanStep &step, plan::PlanRun &run) {
    for (int id : step.inputs) {
      auto it = id < 0 ? reference.end() : reference.find(run.tensor(id).name);
      if (it != reference.end() && !run.tensor(id).constant)
        run.writeValue(id, it->second);
    }
  };
  // The last step writing each tensor: one that several steps write (the
  // reformats placed in a Concat's result) is compared once all have.
  std::vector<const plan::PlanStep *> lastWriter(plan.tensors.size(), nullptr);
  for (const auto &step : plan.steps)
    for (int id : step->outputs)
      if (id >= 0)
        lastWriter[id] = step.get();
  runOptions.afterStep = [&](const plan::PlanStep &step, plan::PlanRun &run) {
    // A reformat's result is its operand's value in the other layout,
    // unless it is placed in a larger result (a Reshape's or a Concat's).
    const auto *reformat = llvm::dyn_cast<plan::ReformatStep>(&step);
    if (reformat && !reformat->rowStride)
      return;
    for (int id : step.outputs) {
      if (id >= 0 && lastWriter[id] != &step)
        continue;
      auto it = id < 0 ? reference.end() : reference.find(run.tensor(id).name);
      if (it != reference.end())
        tally.add((step.getKindName() + " step '" + step.getName() + "'").str(),
                  it->first, run.readValue(id), it->second);
    }
  };
  if (auto outs = plan.run(inputs, runOptions); !outs)
    return outs.takeError();
  int status = tally.finish("plan vs reference, step by step");

  auto outputs = plan.run(inputs, plan::PlanRunOptions{options.threads});
  if (!outputs)
    return outputs.takeError();
  ComparisonReport endToEnd;
  const Graph &graph = interp.getGraph();
  for (size_t i = 0; i < outputs->size(); ++i)
    endToEnd.outputs.push_back(compareTensors(graph.getOutput(i)->getName(),
                                              (*outputs)[i], (*expected)[i]));
  llvm::outs() << "plan vs reference, end to end (differences accumulate "
                  "through the layers):\n";
  endToEnd.print(llvm::outs());
  return status;
}

/// The outputs of `other` on the reference interpreter.
static llvm::Expected<std::vector<interp::Tensor>>
runReference(const Model &other, const interp::TensorMap &inputs) {
  auto reference = interp::Interpreter::create(other);
  if (!reference)
    return reference.takeError();
  return (*reference)->run(inputs);
}

/// One comparison per output, each named `label` + the output's name.
static llvm::Error addComparisons(llvm::StringRef label,
                                  const std::vector<interp::Tensor> &got,
                                  const std::vector<interp::Tensor> &reference,
                                  llvm::ArrayRef<std::string> outputNames,
                                  ComparisonReport &report) {
  if (got.size() != reference.size())
    return makeError("the models have " + llvm::Twine(reference.size()) +
                     " and " + llvm::Twine(got.size()) + " outputs");
  for (size_t i = 0; i < reference.size(); ++i)
    report.outputs.push_back(
        compareTensors((label + outputNames[i]).str(), got[i], reference[i]));
  return llvm::Error::success();
}

static llvm::Error compareRuns(const Model &other,
                               const interp::TensorMap &inputs,
                               const std::vector<interp::Tensor> &reference,
                               llvm::ArrayRef<std::string> outputNames,
                               ComparisonReport &report) {
  auto got = runReference(other, inputs);
  if (!got)
    return got.takeError();
  return addComparisons("", *got, reference, outputNames, report);
}

/// --compare-passes: the model after each pipeline against the model. A
/// result that prints as the model does, or as an earlier pipeline's result,
/// shares that graph's outputs instead of running again (exact-pass checks
/// give one model many pipelines, most of which change nothing).
static llvm::Error
compareAfterPipelines(const RunOptions &options, const Model &model,
                      Context &ctx, const interp::TensorMap &inputs,
                      const std::vector<interp::Tensor> &reference,
                      llvm::ArrayRef<std::string> outputNames,
                      ComparisonReport &report) {
  // The model prints once: its text gives its fingerprint and each copy.
  std::string text = printWhole(model);
  std::map<std::string, std::vector<interp::Tensor>> outputsByGraph;
  outputsByGraph[textFingerprint(text)] = reference;
  for (const std::string &pipeline : options.comparePasses) {
    auto after = parseModel(text, "<copy>", ctx);
    if (!after)
      return after.takeError();
    if (auto err = runPipelineWithPlugins(**after, pipeline, options.plugins))
      return err;
    auto [it, isNew] =
        outputsByGraph.try_emplace(textFingerprint(printWhole(**after)));
    if (isNew) {
      auto got = runReference(**after, inputs);
      if (!got)
        return got.takeError();
      it->second = std::move(*got);
    }
    std::string label = options.comparePasses.size() > 1 ? "[" + pipeline + "] "
                                                         : std::string();
    if (auto err =
            addComparisons(label, it->second, reference, outputNames, report))
      return err;
  }
  return llvm::Error::success();
}

using Clock = BenchClock;

namespace {

/// One qopt-run: a model or a plan file, its inputs, and what runs them.
class Runner {
public:
  explicit Runner(const RunOptions &options) : options(options) {}

  llvm::Expected<int> run();

private:
  llvm::Error loadPlanFile();
  llvm::Expected<int> runPlanPassesOnFile();
  llvm::Error loadModel();
  llvm::Error checkFlagCombinations() const;
  llvm::Error readGivenInputs();
  llvm::Error prepareModelForPlan();
  llvm::Error makeInputs();
  llvm::Error createInterpreter();
  llvm::Error buildModelPlan();
  llvm::Expected<int> runAndCompare();
  llvm::Error writeOutputs(const std::vector<interp::Tensor> &outputs) const;
  /// `err` as an error about the model file.
  llvm::Error inModel(llvm::Error err) const {
    return makeError(llvm::Twine(options.modelPath) + ": " +
                     llvm::toString(std::move(err)));
  }

  const RunOptions &options;
  Context ctx;
  /// The model or plan file's bytes, when it is a stream (isStream).
  std::unique_ptr<llvm::MemoryBuffer> streamed;
  std::unique_ptr<Model> model;
  std::unique_ptr<plan::Plan> plan;
  /// The reference interpreter, where it runs: a plan that only runs (or is
  /// timed) does without it, so its memory is not the plan's. It is made
  /// after the plan is built, since building folds constants in the graph.
  std::unique_ptr<interp::Interpreter> interp;
  std::map<std::string, int64_t> dims;
  interp::TensorMap given;
  interp::TensorMap inputs;
  /// Named as the graph the outputs come from names them (after the
  /// pipeline, for --plan).
  std::vector<std::string> outputNames;
  Clock::time_point phaseStart = Clock::now();
  double importMs = 0;
  double pipelineMs = 0;
};

} // namespace

llvm::Expected<int> Runner::run() {
  // A pipe (qopt-run <(cat m.onnx)), FIFO or stdin is read once, whole,
  // and sniffed and loaded from those bytes.
  if (isStream(options.modelPath)) {
    auto bytes = readFileWithinLimit(options.modelPath);
    if (!bytes)
      return inModel(bytes.takeError());
    streamed = std::move(*bytes);
  }
  // A plan file runs as it is: no graph, so nothing that needs one.
  bool planFile = streamed ? startsAsPlan(streamed->getBuffer())
                           : startsAsPlanFile(options.modelPath);
  if (planFile) {
    if (auto err = loadPlanFile())
      return err;
    if (!options.runPlanPassNames.empty())
      return runPlanPassesOnFile();
    if (options.benchRuns || options.profilePlan)
      llvm::outs() << llvm::format("plan file: read and packed in %.1f ms\n",
                                   millisecondsSince(phaseStart));
  } else if (auto err = loadModel()) {
    return err;
  }
  importMs = millisecondsSince(phaseStart);
  if (auto err = checkFlagCombinations())
    return err;
  unsigned available = plan::PlanRunOptions::getAvailableThreads();
  if (options.threads > available)
    llvm::errs() << "qopt-run: note: --threads=" << options.threads
                 << ": this process may run on " << available
                 << " cores; the plan uses " << available << "\n";
  if (auto err = readGivenInputs())
    return err;
  if (options.runPlan)
    if (auto err = prepareModelForPlan())
      return err;
  if (auto err = makeInputs())
    return err;

  if (!options.opByOp.empty()) {
    if (auto err = createInterpreter())
      return inModel(std::move(err));
    return runOpByOp(options, *interp, inputs);
  }
  if (options.runPlan)
    if (auto err = buildModelPlan())
      return err;
  if (auto err = createInterpreter())
    return inModel(std::move(err));
  if (plan && options.printPlan)
    plan->print(llvm::outs());
  if (plan && options.compareReference)
    return comparePlanWithReference(options, *plan, *interp, inputs);
  if (plan && (options.benchRuns || options.profilePlan)) {
    // The plan holds what it runs on: the graph's memory goes before the
    // timed runs, so the process's peak is the plan's.
    interp.reset();
    model.reset();
    if (auto err =
            benchPlan(*plan, inputs,
                      PlanBenchOptions{options.benchRuns, options.threads,
                                       options.profilePlan},
                      llvm::outs()))
      return inModel(std::move(err));
    return 0;
  }
  return runAndCompare();
}

llvm::Error Runner::loadPlanFile() {
  for (auto [given, name] :
       {std::pair<bool, const char *>{options.runPlan, "--plan"},
        {options.planPassesGiven, "--plan-passes"},
        {options.compareReference, "--compare-reference"},
        {!options.compareWith.empty(), "--compare"},
        {!options.comparePasses.empty(), "--compare-passes"},
        {!options.opByOp.empty(), "--op-by-op"},
        {!options.dims.empty(), "--dim"}})
    if (given)
      return makeError(llvm::Twine(options.modelPath) + ": " + name +
                       " needs a model; a plan file runs as it is");
  auto isa = kernels::selectIsa();
  if (!isa)
    return isa.takeError();
  auto loaded = streamed ? plan::loadPlanBytes(streamed->getBuffer(), *isa)
                         : plan::loadPlanFile(options.modelPath, *isa);
  if (!loaded)
    return inModel(loaded.takeError());
  plan = std::move(*loaded);
  return llvm::Error::success();
}

/// --run-plan-pass: the plan file's plan after these passes, as text.
llvm::Expected<int> Runner::runPlanPassesOnFile() {
  if (!options.outputPath.empty() || options.benchRuns || options.profilePlan ||
      options.printPlan)
    return makeError("--run-plan-pass prints the plan's text form to stdout; "
                     "it takes no -o, --bench, --profile or --print-plan");
  if (auto err = runPlanPasses(*plan, options.runPlanPassNames,
                               options.planPassOptions))
    return inModel(std::move(err));
  auto text = plan::printPlanText(*plan);
  if (!text)
    return text.takeError();
  llvm::outs() << *text;
  return 0;
}

llvm::Error Runner::loadModel() {
  auto loaded =
      streamed ? loadModelBytes(streamed->getBuffer(), options.modelPath, ctx)
               : loadModelFile(options.modelPath, ctx);
  if (!loaded)
    return inModel(loaded.takeError());
  model = std::move(*loaded);
  return llvm::Error::success();
}

/// The flags that need others, or cannot go with others.
llvm::Error Runner::checkFlagCombinations() const {
  if (!options.runPlanPassNames.empty())
    return makeError("--run-plan-pass needs a plan file or a text plan; --plan "
                     "runs every plan pass on a model");
  if (options.compareReference && !options.runPlan)
    return makeError("--compare-reference needs --plan");
  bool timed = options.benchRuns || options.profilePlan;
  if ((timed || options.printPlan) && !options.runPlan && !plan)
    return makeError("--bench, --profile and --print-plan need --plan or a "
                     "plan file");
  // These runs end without the outputs being written or compared: say so
  // instead of exiting 0 with nothing written.
  bool writesOrCompares =
      !options.outputPath.empty() || !options.expectFiles.empty() ||
      !options.compareWith.empty() || !options.comparePasses.empty();
  if ((timed || options.compareReference) && writesOrCompares)
    return makeError(std::string(options.compareReference
                                     ? "--compare-reference"
                                     : "--bench and --profile") +
                     " cannot be combined with -o, --expect, --compare or "
                     "--compare-passes; run them separately");
  return llvm::Error::success();
}

/// --dim and --input: the dims' values and the inputs read from files.
llvm::Error Runner::readGivenInputs() {
  // The dims the model's inputs leave open: their names, and "?" for an
  // unnamed one. A --dim naming none of them would be silently ignored.
  std::set<std::string> open;
  if (model)
    for (const Value *in : model->getGraph().getInputs())
      if (in->getType()->hasRank())
        for (const Dim &dim : in->getType()->getShape())
          if (!dim.isStatic())
            open.insert(dim.isSymbolic() ? dim.symbol : "?");
  for (llvm::StringRef d : options.dims) {
    auto [name, value] = d.split('=');
    int64_t v;
    if (value.getAsInteger(10, v) || v < 0)
      return makeError("--dim expects name=N, got '" + toPrintableLine(d) +
                       "'");
    if (model && !open.count(name.str())) {
      std::string known;
      for (const std::string &o : open)
        known += (known.empty() ? "" : ", ") + toPrintableLine(o);
      return makeError("--dim: no input of the model has a dimension named '" +
                       toPrintableLine(name) + "'" +
                       (known.empty()
                            ? std::string(" (every input is static)")
                            : " (its open dimensions: " + known + ")"));
    }
    dims[name.str()] = v;
  }
  for (llvm::StringRef spec : options.inputFiles) {
    auto [name, file] = spec.split('=');
    bool known = false;
    if (plan)
      for (int id : plan->inputs)
        known |= plan->tensors[id].name == name;
    else if (const Value *in = model->getGraph().lookupValue(name))
      known = in->isGraphInput();
    if (!known)
      return makeError("--input: the model has no input named '" + name + "'");
    auto t = readNpy(file);
    if (!t)
      return t.takeError();
    given[name.str()] = std::move(*t);
  }
  return llvm::Error::success();
}

/// --plan: static input shapes, then --plan-passes.
llvm::Error Runner::prepareModelForPlan() {
  // A plan is built for static shapes: the inputs' it will run on.
  std::map<std::string, interp::Shape> givenShapes;
  for (auto &[name, t] : given)
    givenShapes[name] = t.shape();
  if (auto err = bindStaticInputShapes(*model, dims, givenShapes))
    return makeError(llvm::Twine(options.modelPath) + ": " +
                     (given.empty() ? "" : "--input: ") +
                     llvm::toString(std::move(err)));
  phaseStart = Clock::now();
  if (auto err =
          runPipelineWithPlugins(*model, options.planPasses, options.plugins))
    return inModel(std::move(err));
  pipelineMs = millisecondsSince(phaseStart);
  return llvm::Error::success();
}

/// The output names, and the inputs: seeded random ones, the files' in
/// their place.
llvm::Error Runner::makeInputs() {
  if (plan)
    for (int id : plan->outputs)
      outputNames.push_back(plan->tensors[id].name);
  else
    for (const Value *out : model->getGraph().getOutputs())
      outputNames.push_back(out->getName().str());
  std::vector<interp::InputSpec> planInputs;
  if (plan)
    for (int id : plan->inputs)
      planInputs.push_back({plan->tensors[id].name, plan->tensors[id].kind,
                            plan->tensors[id].shape});
  auto random = plan ? interp::makeRandomInputs(planInputs, options.seed,
                                                options.distribution)
                     : interp::makeRandomInputs(model->getGraph(), options.seed,
                                                dims, options.distribution);
  size_t numInputs =
      plan ? planInputs.size() : model->getGraph().getNumInputs();
  if (random) {
    inputs = std::move(*random);
  } else {
    if (given.size() != numInputs)
      return random.takeError();
    llvm::consumeError(random.takeError());
  }
  for (auto &[name, t] : given)
    inputs[name] = std::move(t);
  return llvm::Error::success();
}

llvm::Error Runner::createInterpreter() {
  if (!model || interp ||
      (options.runPlan && !options.compareReference && options.opByOp.empty()))
    return llvm::Error::success();
  auto created = interp::Interpreter::create(*model);
  if (!created)
    return created.takeError();
  interp = std::move(*created);
  return llvm::Error::success();
}

/// --plan: the plan of the model after --plan-passes.
llvm::Error Runner::buildModelPlan() {
  auto isa = kernels::selectIsa();
  if (!isa)
    return isa.takeError();
  phaseStart = Clock::now();
  auto built =
      buildPlan(*model, PlanBuildOptions{*isa, options.planPassOptions,
                                         options.allowFloatPlan,
                                         options.int8ActivationsForInt4});
  if (!built)
    return inModel(built.takeError());
  plan = std::move(*built);
  double buildMs = millisecondsSince(phaseStart);
  if (options.benchRuns || options.profilePlan)
    llvm::outs() << llvm::format("plan build: import %.1f ms, %s %.1f ms, "
                                 "plan %.1f ms; total %.1f ms\n",
                                 importMs, options.planPasses.c_str(),
                                 pipelineMs, buildMs,
                                 importMs + pipelineMs + buildMs);
  return llvm::Error::success();
}

/// -o: the outputs as .npz, or .npy for one.
llvm::Error
Runner::writeOutputs(const std::vector<interp::Tensor> &outputs) const {
  std::vector<std::pair<std::string, interp::Tensor>> named;
  for (size_t i = 0; i < outputs.size(); ++i)
    named.push_back({outputNames[i], outputs[i]});
  const std::string &path = options.outputPath;
  bool npy = llvm::sys::path::extension(path) == ".npy";
  if (npy && named.size() != 1)
    return makeError("-o " + path + ": .npy holds one output; use .npz");
  std::string bytes;
  if (npy) {
    bytes = serializeNpy(named[0].second);
  } else {
    auto archive = serializeNpz(named);
    if (!archive)
      return makeError("-o " + path + ": " +
                       llvm::toString(archive.takeError()));
    bytes = std::move(*archive);
    // Say where a name went that the archive could not hold as it is.
    for (const auto &[name, tensor] : named) {
      std::string member = npzMemberName(name);
      if (member != name)
        llvm::errs() << "qopt-run: note: output '" << toPrintableLine(name, 256)
                     << "' is the member '" << toPrintableLine(member, 256)
                     << ".npy' of " << path << "\n";
    }
  }
  return writeFileAtomically(path, [&](llvm::raw_ostream &os) {
    os << bytes;
    return llvm::Error::success();
  });
}

/// One run on the interpreter or the plan; its outputs written, compared
/// (--compare, --compare-passes, --expect) or listed.
llvm::Expected<int> Runner::runAndCompare() {
  auto start = Clock::now();
  auto outputs = plan ? plan->run(inputs, plan::PlanRunOptions{options.threads})
                      : interp->run(inputs);
  auto elapsed = Clock::now() - start;
  if (!outputs)
    return inModel(outputs.takeError());
  if (options.printTime)
    llvm::errs()
        << "qopt-run: "
        << llvm::format(
               "%.1f",
               std::chrono::duration<double, std::milli>(elapsed).count())
        << " ms\n";
  if (!options.outputPath.empty())
    if (auto err = writeOutputs(*outputs))
      return err;

  ComparisonReport report;
  bool comparing = false;
  if (!options.compareWith.empty()) {
    auto other = loadModelFile(options.compareWith, ctx);
    if (!other)
      return makeError(llvm::Twine(options.compareWith) + ": " +
                       llvm::toString(other.takeError()));
    if (auto err = compareRuns(**other, inputs, *outputs, outputNames, report))
      return err;
    comparing = true;
  }
  if (!options.comparePasses.empty()) {
    if (auto err = compareAfterPipelines(options, *model, ctx, inputs, *outputs,
                                         outputNames, report))
      return err;
    comparing = true;
  }
  for (llvm::StringRef spec : options.expectFiles) {
    auto [name, file] = spec.split('=');
    size_t index = llvm::find(outputNames, name) - outputNames.begin();
    if (index == outputNames.size())
      return makeError("--expect: the model has no output named '" + name +
                       "'");
    auto t = readNpy(file);
    if (!t)
      return t.takeError();
    report.outputs.push_back(compareTensors(name, (*outputs)[index], *t));
    comparing = true;
  }
  if (!comparing) {
    for (size_t i = 0; i < outputs->size(); ++i)
      llvm::outs() << toPrintableLine(outputNames[i]) << ": "
                   << getElementKindName((*outputs)[i].kind()) << " "
                   << interp::shapeToString((*outputs)[i].shape()) << "\n";
    return 0;
  }
  report.print(llvm::outs());
  CompareTolerance tol{options.absTolerance, options.maxLsb, options.minCosine};
  if (!report.within(tol)) {
    llvm::errs() << "qopt-run: outputs differ beyond the tolerance (atol="
                 << formatDouble(options.absTolerance)
                 << ", max-lsb=" << options.maxLsb << ")\n";
    return 1;
  }
  return 0;
}

llvm::Expected<int> qopt::runModel(const RunOptions &options) {
  return Runner(options).run();
}
