//===- CoreAnalyses.cpp - Registration of the core analyses ---------------===//

#include "qopt/Fusion/FusionPlan.h"
#include "qopt/Passes/PassRegistry.h"
#include "qopt/Passes/ScaleAnalysis.h"

using namespace qopt;

void qopt::registerCoreAnalyses(PassRegistry &registry) {
#define ANALYSIS(NAME, CLASS, DESCRIPTION)                                     \
  registry.registerAnalysis<CLASS>(NAME, DESCRIPTION);
#include "qopt/Passes/Passes.def"
}
