//===- PlanPasses.h - The plan's rewrites as named passes -------*- C++ -*-===//
//
// After lowering (PlanBuilder.h: one step per node, in graph order), the
// plan goes through a fixed pipeline of plan passes, each a rewrite of the
// plan alone (no graph, no model), so each can run on a plan read back from
// its text form (`qopt-run x.plan.txt --run-plan-pass=NAME`), as `llc
// -run-pass` runs one machine pass on a .mir file:
//
//   fuse-table-chains          table steps composed with the table steps
//                              feeding them
//   fuse-tables-into-convs     table steps reading a conv alone as its
//                              output or pair table
//   fuse-quantize-into-copies  quantize steps done by the copies feeding them
//   forward-copied-channels    copies read from where their channels came
//   place-reformats-in-concats reformats written into the Concat they feed
//   assign-arena               every tensor's place in the arena (required)
//
// The instrumentation follows the IR pass manager's: print the plan after
// all or some passes, disable a pass, time them.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_CODEGEN_PLANPASSES_H
#define QOPT_CODEGEN_PLANPASSES_H

#include "qopt/Plan/Plan.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace qopt {

struct PlanPassInfo {
  llvm::StringRef name;
  /// One line for -print-plan-passes.
  llvm::StringRef summary;
  void (*run)(plan::Plan &plan);
  /// A pass the plan cannot run without (it may not be disabled).
  bool required = false;
};

/// The plan pipeline, in the order it runs.
llvm::ArrayRef<PlanPassInfo> getPlanPasses();
/// The pass named `name`, or null.
const PlanPassInfo *lookupPlanPass(llvm::StringRef name);
/// One line per plan pass: name and summary.
void printPlanPasses(llvm::raw_ostream &os);

struct PlanPassOptions {
  /// Passes the pipeline skips (not the required ones).
  std::vector<std::string> disabled;
  /// Print the plan's text form after these passes ("lower": after
  /// lowering, before the first pass), or after every one.
  std::vector<std::string> printAfter;
  bool printAfterAll = false;
  /// Time each pass; the report goes out when the pipeline ends.
  bool timePasses = false;
  /// Verify the plan after each pass (verifyPlan, placement required only
  /// once assign-arena ran).
  bool verifyEach = false;
  /// Where dumps and the time report go (null: stderr).
  llvm::raw_ostream *log = nullptr;
};

/// An error naming the first unknown pass in the options, or a required
/// pass among the disabled ones.
llvm::Error checkPlanPassOptions(const PlanPassOptions &options);

/// Runs `passes` (names; empty: the whole pipeline) on `plan` in order, with
/// the options' instrumentation. "lower" in printAfter prints the plan as
/// it comes in.
llvm::Error runPlanPasses(plan::Plan &plan, llvm::ArrayRef<std::string> passes,
                          const PlanPassOptions &options);

} // namespace qopt

#endif // QOPT_CODEGEN_PLANPASSES_H
