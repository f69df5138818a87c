//===- PlanPassFlags.h - The plan pass flags of qopt and qopt-run -*- C++
//-*-===//
//
//   -print-plan-passes            list the plan passes, then exit
//   -print-plan-after-all         print the plan's text form after each
//   -print-plan-after=P[,P...]    ... after these ("lower": after lowering)
//   -disable-plan-pass=P[,P...]   skip these
//   -verify-plan-each             verify the plan after each pass
//   -allow-float-plan             build a plan of mostly float arithmetic
//   -int4-activations=f32|int8    int4 weight-only MatMuls' rows as int8
//   -time-passes                  (LLVM's flag) times them too
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_TOOLS_COMMON_PLANPASSFLAGS_H
#define QOPT_TOOLS_COMMON_PLANPASSFLAGS_H

#include "qopt/CodeGen/PlanPasses.h"

namespace llvm {
namespace cl {
class OptionCategory;
}
} // namespace llvm

namespace qopt {

/// Puts the plan pass flags in `category` (for -help).
void setPlanPassFlagCategory(llvm::cl::OptionCategory &category);
/// Whether -print-plan-passes was given.
bool printPlanPassesRequested();
/// Whether -allow-float-plan was given (PlanBuildOptions::allowFloatPlan).
bool floatPlanAllowed();
/// Whether -int4-activations=int8 was given
/// (PlanBuildOptions::int8ActivationsForInt4).
bool int8ActivationsForInt4();
/// The options the flags give (checked: an unknown pass is an error).
llvm::Expected<PlanPassOptions> getPlanPassOptionsFromFlags();

} // namespace qopt

#endif // QOPT_TOOLS_COMMON_PLANPASSFLAGS_H
