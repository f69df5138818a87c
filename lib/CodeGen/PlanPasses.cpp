//===- PlanPasses.cpp - The plan pipeline and its instrumentation ---------===//
//
// The table of plan passes (one file each in this directory) and the loop
// that runs them, printing, timing, skipping and verifying as asked.
//
//===----------------------------------------------------------------------===//

#include "qopt/CodeGen/PlanPasses.h"
#include "PlanBuilderImpl.h"
#include "qopt/Plan/PlanFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Timer.h"
#include "llvm/Support/raw_ostream.h"

using namespace qopt;
using namespace qopt::codegen;

static const PlanPassInfo kPlanPasses[] = {
    {"fuse-table-chains",
     "a table step whose operand another table step writes for it alone "
     "becomes one table",
     fuseTableChains},
    {"fuse-tables-into-convs",
     "a table step reading an int8 conv's result alone becomes the conv's "
     "output or pair table",
     fuseTablesIntoConvs},
    {"fuse-relu-into-float-arithmetic",
     "a float Relu of an Add, Sub, Mul or Div step's result alone is done "
     "by that step",
     fuseReluIntoFloatArithmetic},
    {"fuse-bias-into-dynamic-gemms",
     "a float bias Add (and its Relu) of a dynamic int8 gemm's result alone "
     "is done by the gemm's epilogue",
     fuseBiasIntoDynamicGemms},
    {"fuse-quantize-into-copies",
     "a quantize step of a channel copy's result is done by the copy",
     fuseQuantizeIntoCopies},
    {"forward-copied-channels",
     "copy pieces read channels from where an earlier copy took them",
     forwardCopiedChannels},
    {"place-reformats-in-concats",
     "reformats into ONNX layout write straight into the last-axis Concat "
     "they feed",
     placeReformatsInConcats},
    {"assign-arena",
     "every tensor gets its place in the arena by liveness (required)",
     assignArena, /*required=*/true},
};

llvm::ArrayRef<PlanPassInfo> qopt::getPlanPasses() { return kPlanPasses; }

const PlanPassInfo *qopt::lookupPlanPass(llvm::StringRef name) {
  for (const PlanPassInfo &p : kPlanPasses)
    if (p.name == name)
      return &p;
  return nullptr;
}

void qopt::printPlanPasses(llvm::raw_ostream &os) {
  size_t width = 0;
  for (const PlanPassInfo &p : kPlanPasses)
    width = std::max(width, p.name.size());
  for (const PlanPassInfo &p : kPlanPasses)
    os << "  " << llvm::left_justify(p.name, width) << "  " << p.summary
       << "\n";
}

static std::string knownPasses() {
  std::string names;
  for (const PlanPassInfo &p : kPlanPasses)
    names += (names.empty() ? "" : ", ") + p.name.str();
  return names;
}

llvm::Error qopt::checkPlanPassOptions(const PlanPassOptions &options) {
  for (const std::string &name : options.disabled) {
    const PlanPassInfo *p = lookupPlanPass(name);
    if (!p)
      return makeError("unknown plan pass '" + name +
                       "' (plan passes: " + knownPasses() + ")");
    if (p->required)
      return makeError("plan pass '" + name +
                       "' is required and cannot be disabled");
  }
  for (const std::string &name : options.printAfter)
    if (name != "lower" && !lookupPlanPass(name))
      return makeError("unknown plan pass '" + name +
                       "' (plan passes: lower, " + knownPasses() + ")");
  return llvm::Error::success();
}

namespace {

/// The options' dumps, timers and checks around each pass.
class PlanPassInstrumentation {
public:
  explicit PlanPassInstrumentation(const PlanPassOptions &options)
      : options(options), os(options.log ? *options.log : llvm::errs()),
        timers("plan-passes", "Plan pass execution timing report") {}
  // The timers' group prints its report when they go (LLVM's habit: to
  // stderr, or -info-output-file).

  llvm::Error after(llvm::StringRef name, const plan::Plan &plan) {
    if (options.printAfterAll ||
        llvm::is_contained(options.printAfter, name.str())) {
      os << "# *** Plan after " << name << " ***\n";
      auto text = plan::printPlanText(plan);
      if (!text)
        return text.takeError();
      os << *text;
    }
    if (options.verifyEach && name != "lower")
      if (auto err = plan::verifyPlan(plan, plan.isPlaced()))
        return makeError("plan pass '" + name + "' produced an invalid plan: " +
                         llvm::toString(std::move(err)));
    return llvm::Error::success();
  }

  llvm::Timer &timer(const PlanPassInfo &p) {
    auto &t = passTimers[p.name];
    if (!t)
      t = std::make_unique<llvm::Timer>(p.name, p.name, timers);
    return *t;
  }

private:
  const PlanPassOptions &options;
  llvm::raw_ostream &os;
  llvm::TimerGroup timers;
  llvm::StringMap<std::unique_ptr<llvm::Timer>> passTimers;
};

} // namespace

llvm::Error qopt::runPlanPasses(plan::Plan &plan,
                                llvm::ArrayRef<std::string> passes,
                                const PlanPassOptions &options) {
  if (auto err = checkPlanPassOptions(options))
    return err;
  std::vector<const PlanPassInfo *> pipeline;
  if (passes.empty())
    for (const PlanPassInfo &p : kPlanPasses)
      pipeline.push_back(&p);
  for (const std::string &name : passes) {
    const PlanPassInfo *p = lookupPlanPass(name);
    if (!p)
      return makeError("unknown plan pass '" + name +
                       "' (plan passes: " + knownPasses() + ")");
    pipeline.push_back(p);
  }
  PlanPassInstrumentation instrumentation(options);
  if (auto err = instrumentation.after("lower", plan))
    return err;
  for (const PlanPassInfo *p : pipeline) {
    if (llvm::is_contained(options.disabled, p->name.str()))
      continue;
    {
      std::optional<llvm::TimeRegion> timing;
      if (options.timePasses)
        timing.emplace(instrumentation.timer(*p));
      p->run(plan);
    }
    if (auto err = instrumentation.after(p->name, plan))
      return err;
  }
  return llvm::Error::success();
}
