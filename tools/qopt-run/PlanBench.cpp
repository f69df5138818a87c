//===- PlanBench.cpp - qopt-run --bench and --profile of a plan -----------===//
//
// One warm-up run, then the timed runs one after another; each run's time
// is the whole Plan::run (arena, inputs in, steps, outputs out). With
// --profile each step is timed between the executor's beforeStep and
// afterStep hooks, which costs two clock reads per step, and the table
// lists every step by its mean over the timed runs. After the runs, the
// ISA's register-only multiply-add loop is timed (KernelPeak.h, about 50
// ms) and each int8 step's GMAC/s is given as a share of that peak times
// the threads the run used.
//
//===----------------------------------------------------------------------===//

#include "PlanBench.h"
#include "qopt/Kernels/KernelPeak.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <map>

using namespace qopt;
using Clock = BenchClock;

llvm::Error qopt::benchPlan(const plan::Plan &plan,
                            const interp::TensorMap &inputs,
                            const PlanBenchOptions &options,
                            llvm::raw_ostream &os) {
  unsigned runs = std::max(1u, options.runs);
  std::vector<double> stepMs(plan.steps.size(), 0.0);
  std::map<const plan::PlanStep *, size_t> stepIndex;
  for (size_t i = 0; i < plan.steps.size(); ++i)
    stepIndex[plan.steps[i].get()] = i;

  plan::PlanRunOptions warmUp{options.threads};
  if (auto out = plan.run(inputs, warmUp); !out)
    return out.takeError();

  plan::PlanRunOptions timed{options.threads};
  Clock::time_point stepStart;
  std::vector<bool> onReference(plan.steps.size(), false);
  if (options.profile) {
    timed.beforeStep = [&](const plan::PlanStep &, plan::PlanRun &) {
      stepStart = Clock::now();
    };
    timed.afterStep = [&](const plan::PlanStep &step, plan::PlanRun &run) {
      size_t i = stepIndex[&step];
      stepMs[i] += millisecondsSince(stepStart);
      onReference[i] = step.runsReferenceKernel(run);
    };
  }
  bool progress = llvm::errs().is_displayed();
  std::vector<double> runMs;
  for (unsigned i = 0; i < runs; ++i) {
    Clock::time_point start = Clock::now();
    if (auto out = plan.run(inputs, timed); !out)
      return out.takeError();
    runMs.push_back(millisecondsSince(start));
    if (progress)
      llvm::errs() << "\rqopt-run: run " << (i + 1) << "/" << runs;
  }
  if (progress)
    llvm::errs() << "\r\033[K";

  std::vector<double> sorted = runMs;
  std::sort(sorted.begin(), sorted.end());
  double median =
      sorted.size() % 2
          ? sorted[sorted.size() / 2]
          : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  unsigned threads = timed.getThreadCount();
  os << "plan: " << runs << " runs, " << threads << " threads, isa "
     << kernels::getIsaName(plan.isa) << ": median "
     << llvm::format("%.3f", median) << " ms, min "
     << llvm::format("%.3f", sorted.front()) << " ms"
     << (options.profile ? " (with per-step timing)" : "") << "\n";
  if (!options.profile)
    return llvm::Error::success();

  double total = 0;
  for (double &ms : stepMs) {
    ms /= runs;
    total += ms;
  }
  double peak = kernels::measurePeakGmacs(plan.isa) * threads;
  if (peak > 0)
    os << "peak: " << llvm::format("%.1f", peak / threads)
       << " GMAC/s per core (" << kernels::getIsaName(plan.isa)
       << " register-only loop); % peak is of " << threads
       << (threads == 1 ? " core" : " cores") << "\n";
  os << "step  kind          op                         ms   share   "
        "GMAC/s  %peak  name\n";
  // A step on the reference interpreter's kernel is its own kind ("float
  // ref"): the time left to the slowest way there is, in one figure.
  std::map<std::string, double> byKind;
  size_t referenceSteps = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const plan::PlanStep &s = *plan.steps[i];
    std::string kind = s.getKindName().str();
    if (onReference[i]) {
      kind += " ref";
      ++referenceSteps;
    }
    byKind[kind] += stepMs[i];
    os << llvm::format("%4zu  %-12s  %-20s %9.3f  %5.1f%%  ", i, kind.c_str(),
                       s.op.c_str(), stepMs[i],
                       total > 0 ? 100 * stepMs[i] / total : 0.0);
    double gmacs =
        s.getMacs() && stepMs[i] > 0 ? s.getMacs() / (stepMs[i] * 1e6) : 0;
    if (gmacs > 0)
      os << llvm::format("%6.1f", gmacs);
    else
      os << "      ";
    if (gmacs > 0 && peak > 0)
      os << llvm::format("  %4.0f%%", 100 * gmacs / peak);
    else
      os << "       ";
    os << "  " << s.getName() << "\n";
  }
  os << "by kind:";
  for (auto &[kind, ms] : byKind)
    os << llvm::format("  %s %.3f ms (%.1f%%)", kind.c_str(), ms,
                       total > 0 ? 100 * ms / total : 0.0);
  if (referenceSteps)
    os << "\n"
       << referenceSteps << " of " << plan.steps.size()
       << " steps run on the reference interpreter's kernels (kind '... "
          "ref'): in double, on copies of their operands";
  os << "\nsteps " << llvm::format("%.3f", total) << " ms of the median run's "
     << llvm::format("%.3f", median) << " ms; arena " << plan.arenaBytes
     << " bytes\n";
  return llvm::Error::success();
}
