//===- PlanPassFlags.cpp - The plan pass flags of qopt and qopt-run -------===//

#include "PlanPassFlags.h"

#include "llvm/Pass.h"
#include "llvm/Support/CommandLine.h"

#include <memory>

using namespace qopt;
namespace cl = llvm::cl;

static cl::opt<bool> printPlanPassesFlag(
    "print-plan-passes",
    cl::desc("Print the plan passes that run after lowering, then exit"));
static cl::opt<bool> printPlanAfterAll(
    "print-plan-after-all",
    cl::desc("Print the plan's text form after lowering and each plan pass"));
static cl::list<std::string> printPlanAfter(
    "print-plan-after",
    cl::desc("Print the plan's text form after these plan passes ('lower': "
             "after lowering)"),
    cl::CommaSeparated, cl::value_desc("pass"));
static cl::list<std::string> disablePlanPass("disable-plan-pass",
                                             cl::desc("Skip these plan passes"),
                                             cl::CommaSeparated,
                                             cl::value_desc("pass"));
static cl::opt<bool>
    verifyPlanEach("verify-plan-each",
                   cl::desc("Verify the plan after each plan pass"));
static cl::opt<bool> allowFloatPlanFlag(
    "allow-float-plan",
    cl::desc("Build a plan even when most of its multiply-accumulates are "
             "float (an fp32 model): those run on the reference kernels, "
             "many times slower than a float runtime"));

namespace {
enum class Int4Activations { F32, Int8 };
} // namespace
static cl::opt<Int4Activations> int4ActivationsFlag(
    "int4-activations",
    cl::desc("What the f32 rows of a weight-only int4 MatMul are multiplied "
             "as"),
    cl::values(clEnumValN(Int4Activations::F32, "f32",
                          "f32, the model's function (default)"),
               clEnumValN(Int4Activations::Int8, "int8",
                          "rounded to int8 per 128 rows of K and multiplied "
                          "in integers, as ONNX Runtime's MatMulNBits at "
                          "accuracy level 4: faster, lossy")),
    cl::init(Int4Activations::F32));

void qopt::setPlanPassFlagCategory(cl::OptionCategory &category) {
  cl::Option *flags[] = {&printPlanPassesFlag,
                         &printPlanAfterAll,
                         std::addressof(printPlanAfter),
                         std::addressof(disablePlanPass),
                         &verifyPlanEach,
                         &allowFloatPlanFlag,
                         &int4ActivationsFlag};
  for (cl::Option *o : flags)
    o->addCategory(category);
}

bool qopt::printPlanPassesRequested() { return printPlanPassesFlag; }

bool qopt::floatPlanAllowed() { return allowFloatPlanFlag; }

bool qopt::int8ActivationsForInt4() {
  return int4ActivationsFlag == Int4Activations::Int8;
}

llvm::Expected<PlanPassOptions> qopt::getPlanPassOptionsFromFlags() {
  PlanPassOptions options;
  options.disabled.assign(disablePlanPass.begin(), disablePlanPass.end());
  options.printAfter.assign(printPlanAfter.begin(), printPlanAfter.end());
  options.printAfterAll = printPlanAfterAll;
  options.verifyEach = verifyPlanEach;
  options.timePasses = llvm::TimePassesIsEnabled;
  if (auto err = checkPlanPassOptions(options))
    return err;
  return options;
}
