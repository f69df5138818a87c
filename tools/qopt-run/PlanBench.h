//===- PlanBench.h - qopt-run --bench and --profile of a plan ---*- C++ -*-===//

#ifndef QOPT_TOOLS_QOPT_RUN_PLANBENCH_H
#define QOPT_TOOLS_QOPT_RUN_PLANBENCH_H

#include "qopt/Interpreter/Interpreter.h"
#include "qopt/Plan/Plan.h"

#include <chrono>

namespace qopt {

using BenchClock = std::chrono::steady_clock;

/// Wall-clock milliseconds from `start` to now.
inline double millisecondsSince(BenchClock::time_point start) {
  return std::chrono::duration<double, std::milli>(BenchClock::now() - start)
      .count();
}

struct PlanBenchOptions {
  unsigned runs = 0;    ///< timed runs after one warm-up run
  unsigned threads = 0; ///< 0: every core
  bool profile = false; ///< time each step
};

/// Runs `plan` as `options` say and prints the median and minimum run time
/// and, with profile, each step's share: time, % of the run, GMAC/s for
/// int8 convs, then the time by kind of step and the plan's memory.
llvm::Error benchPlan(const plan::Plan &plan, const interp::TensorMap &inputs,
                      const PlanBenchOptions &options, llvm::raw_ostream &os);

} // namespace qopt

#endif // QOPT_TOOLS_QOPT_RUN_PLANBENCH_H
