//===- qopt-run.cpp - Run models on the reference interpreter -------------===//
//
//   qopt-run model.onnx|model.qir [--input name=x.npy]... [--seed=N]
//            [--dim N=1]... [--dist=uniform|image|imagenet] [-o out.npz]
//            [--compare=other.onnx] [--compare-passes=<pipeline>]...
//            [--expect name=y.npy]... [--atol=X] [--max-lsb=N]
//            [--min-cosine=C]
//   qopt-run model.onnx --plan [--plan-passes=<pipeline>] [--threads=N]
//            [--compare-reference | --bench=N [--profile]] ...
//   qopt-run model.qplan [--threads=N] [--bench=N [--profile]] ...
//
// Inputs come from .npy files or are seeded random data (shapes from the
// model, symbolic dims from --dim). Outputs go to .npz (or .npy for one
// output). With --compare / --compare-passes / --expect it prints, per
// output, max and mean abs difference, cosine similarity and, for integer
// outputs, how many elements differ and by how many LSB; the exit status is
// 1 when a difference exceeds the tolerance (exact by default).
//
// --plan runs the model as qopt's INT8 CPU plan instead: the graph inputs
// get static shapes (an --input file's, else each dynamic dim's --dim value
// or 1, as the random inputs), the model goes through --plan-passes
// (default<cpu>), the plan is built from the result and run;
// --compare-reference compares it with the reference interpreter on that
// same graph. A plan file (qopt -emit=plan) runs the same way without the
// model, on the shapes it was built for.
//
//===----------------------------------------------------------------------===//

#include "../common/PlanPassFlags.h"
#include "../common/RunPipeline.h"
#include "PlanBench.h"
#include "qopt/CodeGen/PlanBuilder.h"
#include "qopt/IR/AsmParser.h"
#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/Verifier.h"
#include "qopt/Interpreter/Interpreter.h"
#include "qopt/Onnx/ModelIO.h"
#include "qopt/Passes/PassPlugin.h"
#include "qopt/Passes/PassRegistry.h"
#include "qopt/Passes/StandardInstrumentations.h"
#include "qopt/Plan/PlanFile.h"
#include "qopt/Plan/Steps/ReformatStep.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/FileOutput.h"
#include "qopt/Support/FloatFormat.h"
#include "qopt/Support/ResourceLimits.h"
#include "qopt/ToolSupport/Compare.h"
#include "qopt/ToolSupport/InputDistributionOption.h"
#include "qopt/ToolSupport/NpyIO.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA1.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <map>

using namespace qopt;
namespace cl = llvm::cl;

static cl::OptionCategory runCategory("qopt-run options");
static ResourceLimitOptions resourceLimits(runCategory);
static cl::opt<std::string> modelPath(cl::Positional, cl::desc("<model>"),
                                      cl::Required, cl::cat(runCategory));
static cl::list<std::string> inputFiles("input",
                                        cl::desc("Input from a .npy file"),
                                        cl::value_desc("name=file.npy"),
                                        cl::cat(runCategory));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed for random inputs"),
                              cl::init(1), cl::cat(runCategory));
static cl::list<std::string>
    dimValues("dim", cl::desc("Value of a symbolic dimension ('?' = unnamed)"),
              cl::value_desc("name=N"), cl::cat(runCategory));
static cl::opt<rt::InputDistribution>
    distribution("dist", cl::desc("Random input distribution"),
                 rt::inputDistributionValues(),
                 cl::init(rt::InputDistribution::Uniform),
                 cl::cat(runCategory));
static cl::opt<std::string> outputPath("o",
                                       cl::desc("Write outputs (.npz or .npy)"),
                                       cl::value_desc("file"),
                                       cl::cat(runCategory));
static cl::opt<std::string>
    compareWith("compare",
                cl::desc("Run this model on the same inputs and compare"),
                cl::value_desc("model"), cl::cat(runCategory));
static cl::list<std::string> comparePasses(
    "compare-passes",
    cl::desc("Compare the model before and after this pipeline; repeat it "
             "for several (the model runs once, and each distinct result "
             "once; each output line then begins with [pipeline])"),
    cl::value_desc("pipeline"), cl::cat(runCategory));
static cl::list<std::string>
    expectFiles("expect", cl::desc("Compare an output with a .npy file"),
                cl::value_desc("name=file.npy"), cl::cat(runCategory));
static cl::opt<double> absTolerance("atol",
                                    cl::desc("Max abs difference allowed"),
                                    cl::init(0.0), cl::cat(runCategory));
static cl::opt<int64_t>
    maxLsb("max-lsb", cl::desc("Max LSB difference for integer outputs"),
           cl::init(0), cl::cat(runCategory));
static cl::opt<double> minCosine("min-cosine",
                                 cl::desc("Min cosine similarity required"),
                                 cl::init(-2.0), cl::cat(runCategory));
static cl::list<std::string> pluginPaths("load-pass-plugin",
                                         cl::desc("Load passes from a plugin"),
                                         cl::value_desc("file.so"),
                                         cl::cat(runCategory));
static cl::opt<bool> printTime("time", cl::desc("Print the run time to stderr"),
                               cl::cat(runCategory));
static cl::opt<std::string> opByOp(
    "op-by-op",
    cl::desc("Run each node on the reference's values of its inputs and "
             "compare its outputs with the reference's (an .npz of tensors "
             "by name, e.g. every intermediate of another runtime)"),
    cl::value_desc("reference.npz"), cl::cat(runCategory));

static cl::opt<bool> runPlan("plan",
                             cl::desc("Run the model as the INT8 CPU plan"),
                             cl::cat(runCategory));
static cl::opt<std::string>
    planPasses("plan-passes", cl::desc("Pipeline run before the plan is built"),
               cl::value_desc("pipeline"), cl::init("default<cpu>"),
               cl::cat(runCategory));
static cl::opt<bool>
    printPlan("print-plan",
              cl::desc("With --plan or a plan file: print the plan's steps"),
              cl::cat(runCategory));
static cl::list<std::string> runPlanPassNames(
    "run-plan-pass",
    cl::desc("On a plan file or text plan: run these plan passes, print the "
             "plan's text form to stdout and exit"),
    cl::CommaSeparated, cl::value_desc("pass"), cl::cat(runCategory));
static cl::opt<bool> compareReference(
    "compare-reference",
    cl::desc("With --plan: run each step on the reference interpreter's "
             "values of its inputs and compare its outputs with the "
             "reference's (--max-lsb, --atol relative), then the outputs "
             "end to end. The reference runs the graph after "
             "--plan-passes; to check those passes too, compare the plan "
             "with the input model: --plan --compare MODEL"),
    cl::cat(runCategory));

static cl::opt<unsigned> benchRuns(
    "bench",
    cl::desc("With --plan or a plan file: one warm-up run, then N timed "
             "runs; prints the median and the minimum"),
    cl::value_desc("N"), cl::init(0), cl::cat(runCategory));
static cl::opt<bool> profilePlan(
    "profile",
    cl::desc("With --plan or a plan file: time each step (over the --bench "
             "runs, or one run) and print its share, GMAC/s for int8 "
             "convs, and the time by kind of step"),
    cl::cat(runCategory));

/// --threads: libLLVM registers an option of that name itself, so it is
/// renamed out of the way before qopt-run's own is made.
static cl::opt<unsigned> &threadCountOption() {
  auto &registered = cl::getRegisteredOptions();
  auto it = registered.find("threads");
  if (it != registered.end())
    it->second->setArgStr("llvm-threads");
  static cl::opt<unsigned> threads("threads",
                                   cl::desc("Plan threads (0 = every core)"),
                                   cl::init(0), cl::cat(runCategory));
  return threads;
}

static int fail(llvm::Error err) {
  llvm::errs() << "qopt-run: error: "
               << toPrintableLine(llvm::toString(std::move(err))) << "\n";
  return 1;
}

/// Whether the file at `path` starts with a plan file's magic, or as a
/// plan's text form (after comment lines, within its first 64 KiB).
static bool startsAsPlanFile(llvm::StringRef path) {
  std::ifstream in(path.str(), std::ios::binary);
  std::string head(size_t(64) << 10, '\0');
  in.read(head.data(), head.size());
  head.resize(in.gcount());
  return rt::isPlanFile(head) || rt::isPlanText(head);
}

static int fail(const llvm::Twine &msg) { return fail(makeError(msg)); }

/// The whole text form: every constant's bytes, bit-exact by design.
static std::string printWhole(const Model &m) {
  std::string text;
  llvm::raw_string_ostream os(text);
  PrintOptions opts;
  opts.inlineElementsLimit = 0;
  printModel(m, os, opts);
  return text;
}

/// Deep copy through the text form.
static llvm::Expected<std::unique_ptr<Model>> cloneModel(const Model &m,
                                                         Context &ctx) {
  return parseModel(printWhole(m), "<copy>", ctx);
}

/// SHA-1 of a model's whole text form: two models that print the same
/// compute the same outputs on the reference interpreter.
static std::string textFingerprint(llvm::StringRef text) {
  return llvm::toHex(llvm::SHA1::hash(llvm::arrayRefFromStringRef(text)));
}

static llvm::Error runPipeline(Model &m, llvm::StringRef pipeline,
                               const char *argv0) {
  return runPipelineWithPlugins(
      m, pipeline, argv0, reinterpret_cast<void *>(&cloneModel), pluginPaths);
}

/// Tensors compared one by one against the reference's: integer ones may
/// differ by --max-lsb, float ones by --atol relative to the largest
/// magnitude of the reference tensor.
class OpByOpTally {
public:
  void add(llvm::StringRef what, llvm::StringRef name, const rt::Tensor &got,
           const rt::Tensor &want) {
    rt::OutputComparison c = rt::compareTensors(name, got, want);
    ++compared;
    double scale = 0;
    for (int64_t e = 0; !c.integer && e < want.numElements(); ++e)
      scale = std::max(scale, std::fabs(want.getDouble(e)));
    double rel = scale > 0 ? c.maxAbsDiff / scale : c.maxAbsDiff;
    bool ok = !c.shapeOrTypeDiffers &&
              (c.integer ? c.maxLsbDiff <= maxLsb : rel <= absTolerance);
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
    llvm::outs() << "DIFF " << what << " output '" << c.name << "': ";
    rt::ComparisonReport one;
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
  unsigned compared = 0, bad = 0;
  int64_t worstLsb = 0, flipped = 0, quantElements = 0;
  double worstRel = 0;
};

/// Op-by-op comparison: every node computes from the reference's values of
/// its operands, so each node's difference is its own (no propagation).
/// Integer outputs may differ by --max-lsb, float ones by --atol relative to
/// the largest magnitude of that output.
static int runOpByOp(const rt::Interpreter &interp,
                     const rt::TensorMap &inputs) {
  auto members = rt::readNpz(opByOp);
  if (!members)
    return fail(members.takeError());
  std::map<std::string, rt::Tensor> reference(members->begin(), members->end());
  rt::Interpreter::Hooks hooks;
  hooks.operandOverride = [&](const Value &v) -> const rt::Tensor * {
    auto it = reference.find(v.getName().str());
    return it == reference.end() ? nullptr : &it->second;
  };
  OpByOpTally tally;
  hooks.afterNode = [&](const Node &n, llvm::ArrayRef<rt::Tensor> outs) {
    for (unsigned i = 0; i < n.getNumResults(); ++i) {
      auto it = reference.find(n.getResult(i)->getName().str());
      if (it != reference.end() && outs[i].isValid())
        tally.add(n.describe(), n.getResult(i)->getName(), outs[i], it->second);
    }
  };
  auto outputs = interp.run(inputs, &hooks);
  if (!outputs)
    return fail(outputs.takeError());
  return tally.finish("op-by-op");
}

/// --plan --compare-reference: every step of the plan runs on the
/// reference's values of its inputs and its outputs are compared with the
/// reference's (so each step's difference is its own); then the plan runs
/// end to end and its outputs are compared too, for information.
static int comparePlanWithReference(const rt::Plan &plan,
                                    const rt::Interpreter &interp,
                                    const rt::TensorMap &inputs,
                                    unsigned threads) {
  std::map<std::string, rt::Tensor> reference(inputs.begin(), inputs.end());
  rt::Interpreter::Hooks hooks;
  hooks.afterNode = [&](const Node &n, llvm::ArrayRef<rt::Tensor> outs) {
    for (unsigned i = 0; i < n.getNumResults(); ++i)
      if (outs[i].isValid())
        reference[n.getResult(i)->getName().str()] = outs[i];
  };
  auto expected = interp.run(inputs, &hooks);
  if (!expected)
    return fail(expected.takeError());

  OpByOpTally tally;
  rt::PlanRunOptions options;
  options.threads = threads;
  options.beforeStep = [&](const rt::PlanStep &step, rt::PlanRun &run) {
    for (int id : step.inputs) {
      auto it = id < 0 ? reference.end() : reference.find(run.tensor(id).name);
      if (it != reference.end() && !run.tensor(id).constant)
        run.writeValue(id, it->second);
    }
  };
  // The last step writing each tensor: one that several steps write (the
  // reformats placed in a Concat's result) is compared once all have.
  std::vector<const rt::PlanStep *> lastWriter(plan.tensors.size(), nullptr);
  for (const auto &step : plan.steps)
    for (int id : step->outputs)
      if (id >= 0)
        lastWriter[id] = step.get();
  options.afterStep = [&](const rt::PlanStep &step, rt::PlanRun &run) {
    // A reformat's result is its operand's value in the other layout,
    // unless it is placed in a larger result (a Reshape's or a Concat's).
    const auto *reformat = llvm::dyn_cast<rt::ReformatStep>(&step);
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
  if (auto outs = plan.run(inputs, options); !outs)
    return fail(outs.takeError());
  int status = tally.finish("plan vs reference, step by step");

  auto outputs = plan.run(inputs, rt::PlanRunOptions{threads});
  if (!outputs)
    return fail(outputs.takeError());
  rt::ComparisonReport endToEnd;
  const Graph &graph = interp.getGraph();
  for (size_t i = 0; i < outputs->size(); ++i)
    endToEnd.outputs.push_back(rt::compareTensors(
        graph.getOutput(i)->getName(), (*outputs)[i], (*expected)[i]));
  llvm::outs() << "plan vs reference, end to end (differences accumulate "
                  "through the layers):\n";
  endToEnd.print(llvm::outs());
  return status;
}

/// The outputs of `other` on the reference interpreter.
static llvm::Expected<std::vector<rt::Tensor>>
runReference(const Model &other, const rt::TensorMap &inputs) {
  auto interp = rt::Interpreter::create(other);
  if (!interp)
    return interp.takeError();
  return (*interp)->run(inputs);
}

/// One comparison per output, each named `label` + the output's name.
static llvm::Error addComparisons(llvm::StringRef label,
                                  const std::vector<rt::Tensor> &got,
                                  const std::vector<rt::Tensor> &reference,
                                  llvm::ArrayRef<std::string> outputNames,
                                  rt::ComparisonReport &report) {
  if (got.size() != reference.size())
    return makeError("the models have " + llvm::Twine(reference.size()) +
                     " and " + llvm::Twine(got.size()) + " outputs");
  for (size_t i = 0; i < reference.size(); ++i)
    report.outputs.push_back(rt::compareTensors((label + outputNames[i]).str(),
                                                got[i], reference[i]));
  return llvm::Error::success();
}

static llvm::Error compareRuns(const Model &other, const rt::TensorMap &inputs,
                               const std::vector<rt::Tensor> &reference,
                               llvm::ArrayRef<std::string> outputNames,
                               rt::ComparisonReport &report) {
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
compareAfterPipelines(const Model &model, Context &ctx,
                      const rt::TensorMap &inputs,
                      const std::vector<rt::Tensor> &reference,
                      llvm::ArrayRef<std::string> outputNames,
                      const char *argv0, rt::ComparisonReport &report) {
  // The model prints once: its text gives its fingerprint and each copy.
  std::string text = printWhole(model);
  std::map<std::string, std::vector<rt::Tensor>> outputsByGraph;
  outputsByGraph[textFingerprint(text)] = reference;
  for (const std::string &pipeline : comparePasses) {
    auto after = parseModel(text, "<copy>", ctx);
    if (!after)
      return after.takeError();
    if (auto err = runPipeline(**after, pipeline, argv0))
      return err;
    auto [it, isNew] =
        outputsByGraph.try_emplace(textFingerprint(printWhole(**after)));
    if (isNew) {
      auto got = runReference(**after, inputs);
      if (!got)
        return got.takeError();
      it->second = std::move(*got);
    }
    std::string label =
        comparePasses.size() > 1 ? "[" + pipeline + "] " : std::string();
    if (auto err =
            addComparisons(label, it->second, reference, outputNames, report))
      return err;
  }
  return llvm::Error::success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::opt<unsigned> &threadCount = threadCountOption();
  setPlanPassFlagCategory(runCategory);
  if (cl::Option *timePasses = cl::getRegisteredOptions().lookup("time-passes"))
    timePasses->addCategory(runCategory);
  cl::HideUnrelatedOptions(runCategory);
  cl::ParseCommandLineOptions(argc, argv,
                              "qopt-run: run a model on qopt's reference "
                              "interpreter\n");
  installResourceErrorHandlers("qopt-run");
  if (auto err = resourceLimits.apply())
    return fail(std::move(err));
  if (printPlanPassesRequested()) {
    llvm::outs() << "Plan passes (after lowering, in this order):\n";
    printPlanPasses(llvm::outs());
    return 0;
  }
  auto planPassOptions = getPlanPassOptionsFromFlags();
  if (!planPassOptions)
    return fail(planPassOptions.takeError());
  using Clock = std::chrono::steady_clock;
  auto millisecondsSince = [](Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start)
        .count();
  };
  Clock::time_point phaseStart = Clock::now();
  Context ctx;
  // A plan file runs as it is: no graph, so nothing that needs one.
  bool planFile = startsAsPlanFile(modelPath);
  std::unique_ptr<Model> model;
  std::unique_ptr<rt::Plan> plan;
  if (planFile) {
    for (auto [given, name] :
         {std::pair<bool, const char *>{runPlan, "--plan"},
          {planPasses.getNumOccurrences() > 0, "--plan-passes"},
          {compareReference, "--compare-reference"},
          {!compareWith.empty(), "--compare"},
          {!comparePasses.empty(), "--compare-passes"},
          {!opByOp.empty(), "--op-by-op"},
          {!dimValues.empty(), "--dim"}})
      if (given)
        return fail(llvm::Twine(modelPath) + ": " + name +
                    " needs a model; a plan file runs as it is");
    auto isa = rt::selectIsa();
    if (!isa)
      return fail(isa.takeError());
    auto loaded = rt::loadPlanFile(modelPath, *isa);
    if (!loaded)
      return fail(llvm::Twine(modelPath) + ": " +
                  llvm::toString(loaded.takeError()));
    plan = std::move(*loaded);
    if (!runPlanPassNames.empty()) {
      if (!outputPath.empty() || benchRuns || profilePlan || printPlan)
        return fail("--run-plan-pass prints the plan's text form to stdout; "
                    "it takes no -o, --bench, --profile or --print-plan");
      if (auto err = runPlanPasses(*plan, runPlanPassNames, *planPassOptions))
        return fail(llvm::Twine(modelPath) + ": " +
                    llvm::toString(std::move(err)));
      auto text = rt::printPlanText(*plan);
      if (!text)
        return fail(text.takeError());
      llvm::outs() << *text;
      return 0;
    }
    if (benchRuns || profilePlan)
      llvm::outs() << llvm::format("plan file: read and packed in %.1f ms\n",
                                   millisecondsSince(phaseStart));
  } else {
    auto loaded = loadModelFile(modelPath, ctx);
    if (!loaded)
      return fail(llvm::Twine(modelPath) + ": " +
                  llvm::toString(loaded.takeError()));
    model = std::move(*loaded);
  }
  if (!runPlanPassNames.empty())
    return fail("--run-plan-pass needs a plan file or a text plan; --plan "
                "runs every plan pass on a model");
  double importMs = millisecondsSince(phaseStart);
  if (compareReference && !runPlan)
    return fail("--compare-reference needs --plan");
  if ((benchRuns || profilePlan || printPlan) && !runPlan && !planFile)
    return fail("--bench, --profile and --print-plan need --plan or a plan "
                "file");
  // These runs end without the outputs being written or compared: say so
  // instead of exiting 0 with nothing written.
  bool writesOrCompares = !outputPath.empty() || !expectFiles.empty() ||
                          !compareWith.empty() || !comparePasses.empty();
  if ((benchRuns || profilePlan || compareReference) && writesOrCompares)
    return fail(std::string(compareReference ? "--compare-reference"
                                             : "--bench and --profile") +
                " cannot be combined with -o, --expect, --compare or "
                "--compare-passes; run them separately");
  std::map<std::string, int64_t> dims;
  for (llvm::StringRef d : dimValues) {
    auto [name, value] = d.split('=');
    int64_t v;
    if (value.getAsInteger(10, v) || v < 0)
      return fail("--dim expects name=N, got '" + d + "'");
    dims[name.str()] = v;
  }
  rt::TensorMap given;
  for (llvm::StringRef spec : inputFiles) {
    auto [name, file] = spec.split('=');
    bool known = false;
    if (plan)
      for (int id : plan->inputs)
        known |= plan->tensors[id].name == name;
    else if (const Value *in = model->getGraph().lookupValue(name))
      known = in->isGraphInput();
    if (!known)
      return fail("--input: the model has no input named '" + name + "'");
    auto t = rt::readNpy(file);
    if (!t)
      return fail(t.takeError());
    given[name.str()] = std::move(*t);
  }
  double pipelineMs = 0;
  if (runPlan) {
    // A plan is built for static shapes: the inputs' it will run on.
    std::map<std::string, rt::Shape> givenShapes;
    for (auto &[name, t] : given)
      givenShapes[name] = t.shape();
    if (auto err = bindStaticInputShapes(*model, dims, givenShapes))
      return fail(llvm::Twine(modelPath) + ": " +
                  (given.empty() ? "" : "--input: ") +
                  llvm::toString(std::move(err)));
    phaseStart = Clock::now();
    if (auto err = runPipeline(*model, planPasses, argv[0]))
      return fail(llvm::Twine(modelPath) + ": " +
                  llvm::toString(std::move(err)));
    pipelineMs = millisecondsSince(phaseStart);
  }
  // The reference interpreter, where it runs: a plan that only runs (or is
  // timed) does without it, so its memory is not the plan's. It is made
  // after the plan is built, since building folds constants in the graph.
  std::unique_ptr<rt::Interpreter> interp;
  auto createInterpreter = [&]() -> llvm::Error {
    if (!model || interp || (runPlan && !compareReference && opByOp.empty()))
      return llvm::Error::success();
    auto created = rt::Interpreter::create(*model);
    if (!created)
      return created.takeError();
    interp = std::move(*created);
    return llvm::Error::success();
  };
  // Named as the graph the outputs come from names them (after the
  // pipeline, for --plan).
  std::vector<std::string> outputNames;
  if (plan)
    for (int id : plan->outputs)
      outputNames.push_back(plan->tensors[id].name);
  else
    for (const Value *out : model->getGraph().getOutputs())
      outputNames.push_back(out->getName().str());
  std::vector<rt::InputSpec> planInputs;
  if (plan)
    for (int id : plan->inputs)
      planInputs.push_back({plan->tensors[id].name, plan->tensors[id].kind,
                            plan->tensors[id].shape});
  auto inputs =
      plan ? rt::makeRandomInputs(planInputs, seed, distribution)
           : rt::makeRandomInputs(model->getGraph(), seed, dims, distribution);
  size_t numInputs =
      plan ? planInputs.size() : model->getGraph().getNumInputs();
  if (!inputs) {
    if (given.size() != numInputs)
      return fail(inputs.takeError());
    llvm::consumeError(inputs.takeError());
    inputs = rt::TensorMap();
  }
  for (auto &[name, t] : given)
    (*inputs)[name] = std::move(t);

  if (!opByOp.empty()) {
    if (auto err = createInterpreter())
      return fail(llvm::Twine(modelPath) + ": " +
                  llvm::toString(std::move(err)));
    return runOpByOp(*interp, *inputs);
  }

  if (runPlan) {
    auto isa = rt::selectIsa();
    if (!isa)
      return fail(isa.takeError());
    phaseStart = Clock::now();
    auto built = buildPlan(
        *model, PlanBuildOptions{*isa, *planPassOptions, floatPlanAllowed()});
    if (!built)
      return fail(llvm::Twine(modelPath) + ": " +
                  llvm::toString(built.takeError()));
    plan = std::move(*built);
    double buildMs = millisecondsSince(phaseStart);
    if (benchRuns || profilePlan)
      llvm::outs() << llvm::format("plan build: import %.1f ms, %s %.1f ms, "
                                   "plan %.1f ms; total %.1f ms\n",
                                   importMs, planPasses.c_str(), pipelineMs,
                                   buildMs, importMs + pipelineMs + buildMs);
  }
  if (auto err = createInterpreter())
    return fail(llvm::Twine(modelPath) + ": " + llvm::toString(std::move(err)));
  if (plan && printPlan)
    plan->print(llvm::outs());
  if (plan && compareReference)
    return comparePlanWithReference(*plan, *interp, *inputs, threadCount);
  if (plan && (benchRuns || profilePlan)) {
    // The plan holds what it runs on: the graph's memory goes before the
    // timed runs, so the process's peak is the plan's.
    interp.reset();
    model.reset();
    if (auto err =
            benchPlan(*plan, *inputs,
                      PlanBenchOptions{benchRuns, threadCount, profilePlan},
                      llvm::outs()))
      return fail(llvm::Twine(modelPath) + ": " +
                  llvm::toString(std::move(err)));
    return 0;
  }

  auto start = std::chrono::steady_clock::now();
  auto outputs = plan ? plan->run(*inputs, rt::PlanRunOptions{threadCount})
                      : interp->run(*inputs);
  auto elapsed = std::chrono::steady_clock::now() - start;
  if (!outputs)
    return fail(llvm::Twine(modelPath) + ": " +
                llvm::toString(outputs.takeError()));
  if (printTime)
    llvm::errs()
        << "qopt-run: "
        << llvm::format(
               "%.1f",
               std::chrono::duration<double, std::milli>(elapsed).count())
        << " ms\n";

  if (!outputPath.empty()) {
    std::vector<std::pair<std::string, rt::Tensor>> named;
    for (size_t i = 0; i < outputs->size(); ++i)
      named.push_back({outputNames[i], (*outputs)[i]});
    bool npy = llvm::sys::path::extension(outputPath) == ".npy";
    if (npy && named.size() != 1)
      return fail("-o " + outputPath + ": .npy holds one output; use .npz");
    if (auto err = writeFileAtomically(outputPath, [&](llvm::raw_ostream &os) {
          os << (npy ? rt::serializeNpy(named[0].second)
                     : rt::serializeNpz(named));
          return llvm::Error::success();
        }))
      return fail(std::move(err));
  }

  rt::ComparisonReport report;
  bool comparing = false;
  if (!compareWith.empty()) {
    auto other = loadModelFile(compareWith, ctx);
    if (!other)
      return fail(llvm::Twine(compareWith) + ": " +
                  llvm::toString(other.takeError()));
    if (auto err = compareRuns(**other, *inputs, *outputs, outputNames, report))
      return fail(std::move(err));
    comparing = true;
  }
  if (!comparePasses.empty()) {
    if (auto err = compareAfterPipelines(*model, ctx, *inputs, *outputs,
                                         outputNames, argv[0], report))
      return fail(std::move(err));
    comparing = true;
  }
  for (llvm::StringRef spec : expectFiles) {
    auto [name, file] = spec.split('=');
    size_t index = llvm::find(outputNames, name) - outputNames.begin();
    if (index == outputNames.size())
      return fail("--expect: the model has no output named '" + name + "'");
    auto t = rt::readNpy(file);
    if (!t)
      return fail(t.takeError());
    report.outputs.push_back(rt::compareTensors(name, (*outputs)[index], *t));
    comparing = true;
  }
  if (!comparing) {
    for (size_t i = 0; i < outputs->size(); ++i)
      llvm::outs() << outputNames[i] << ": "
                   << getElementKindName((*outputs)[i].kind()) << " "
                   << rt::shapeToString((*outputs)[i].shape()) << "\n";
    return 0;
  }
  report.print(llvm::outs());
  rt::CompareTolerance tol{absTolerance, maxLsb, minCosine};
  if (!report.within(tol)) {
    llvm::errs() << "qopt-run: outputs differ beyond the tolerance (atol="
                 << formatDouble(absTolerance) << ", max-lsb=" << maxLsb
                 << ")\n";
    return 1;
  }
  return 0;
}
