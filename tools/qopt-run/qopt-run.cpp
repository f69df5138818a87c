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
#include "QoptRunDriver.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/ResourceLimits.h"
#include "qopt/ToolSupport/InputDistributionOption.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

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
static cl::opt<interp::InputDistribution> distribution(
    "dist", cl::desc("Random input distribution"), inputDistributionValues(),
    cl::init(interp::InputDistribution::Uniform), cl::cat(runCategory));
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

/// What the flags ask of the run.
static RunOptions optionsFromFlags(const char *argv0, unsigned threads,
                                   PlanPassOptions planPassOptions) {
  RunOptions o;
  o.modelPath = modelPath;
  o.inputFiles.assign(inputFiles.begin(), inputFiles.end());
  o.dims.assign(dimValues.begin(), dimValues.end());
  o.expectFiles.assign(expectFiles.begin(), expectFiles.end());
  o.seed = seed;
  o.distribution = distribution;
  o.outputPath = outputPath;
  o.compareWith = compareWith;
  o.comparePasses.assign(comparePasses.begin(), comparePasses.end());
  o.absTolerance = absTolerance;
  o.maxLsb = maxLsb;
  o.minCosine = minCosine;
  o.plugins.argv0 = argv0;
  o.plugins.anchor = reinterpret_cast<void *>(&optionsFromFlags);
  o.plugins.libraries.assign(pluginPaths.begin(), pluginPaths.end());
  o.printTime = printTime;
  o.opByOp = opByOp;
  o.runPlan = runPlan;
  o.planPasses = planPasses;
  o.planPassesGiven = planPasses.getNumOccurrences() > 0;
  o.printPlan = printPlan;
  o.runPlanPassNames.assign(runPlanPassNames.begin(), runPlanPassNames.end());
  o.compareReference = compareReference;
  o.benchRuns = benchRuns;
  o.profilePlan = profilePlan;
  o.threads = threads;
  o.planPassOptions = std::move(planPassOptions);
  o.allowFloatPlan = floatPlanAllowed();
  o.int8ActivationsForInt4 = int8ActivationsForInt4();
  return o;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::opt<unsigned> &threadCount = threadCountOption();
  setPlanPassFlagCategory(runCategory);
  if (cl::Option *timePasses = cl::getRegisteredOptions().lookup("time-passes"))
    timePasses->addCategory(runCategory);
  cl::HideUnrelatedOptions(runCategory);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "qopt-run (qopt) version " QOPT_VERSION "\n";
  });
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
  auto status = runModel(
      optionsFromFlags(argv[0], threadCount, std::move(*planPassOptions)));
  if (!status)
    return fail(status.takeError());
  return *status;
}
