//===- PlanBudget.cpp - A plan's memory and work against the limits -------===//
//
// A plan file states its tensors, arena and steps; the verifier checks that
// they agree, this checks that they are affordable (ResourceLimits) before
// anything is allocated or run:
//
//   memory  the arena + the largest scratch of one step + the constants
//   work    per step, its getWork(): an int8 conv, gemm or matmul its
//           MACs; a pool its outputs x the window's taps inside the input;
//           a float step of a conv, matmul, gemm or pool the same from its
//           shapes; any other step the elements it reads and writes
//
// Sums saturate: a step past 2^64 is past every limit.
//
//===----------------------------------------------------------------------===//

#include "PlanWork.h"
#include "qopt/IR/OpNames.h"
#include "qopt/Plan/Steps/FloatStep.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/ResourceLimits.h"

#include <optional>

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

uint64_t planwork::elementsOf(const Shape &shape) {
  uint64_t n = 1;
  for (int64_t d : shape)
    n = saturatingProduct({n, uint64_t(std::max<int64_t>(d, 0))});
  return n;
}

uint64_t planwork::tapsInside(int64_t kernelH, int64_t kernelW, int64_t inH,
                              int64_t inW) {
  return saturatingProduct(
      {uint64_t(std::min(kernelH, inH)), uint64_t(std::min(kernelW, inW))});
}

uint64_t PlanStep::getElementsTouched(const Plan &plan) const {
  uint64_t touched = 0;
  for (const std::vector<int> *ids : {&inputs, &outputs})
    for (int id : *ids)
      if (id >= 0)
        touched = saturatingSum(touched,
                                planwork::elementsOf(plan.tensors[id].shape));
  return touched;
}

uint64_t PlanStep::getWork(const Plan &plan) const {
  // The int8 conv, gemm and matmul steps count their MACs (> 0 in any plan
  // that passes the verifier); the rest count none.
  int64_t macs = getMacs();
  return macs > 0 ? uint64_t(macs) : getElementsTouched(plan);
}

llvm::Error plan::checkPlanBudget(const Plan &plan) {
  ResourceLimits limits = getResourceLimits();
  uint64_t constants = 0, scratch = 0;
  for (const PlanTensor &t : plan.tensors)
    if (t.constant)
      constants = saturatingSum(constants, t.byteSize());
  for (const auto &s : plan.steps)
    scratch = std::max<uint64_t>(
        scratch, saturatingSum(s->getScratchBytes(), s->getSharedBytes()));
  uint64_t memory =
      saturatingSum(saturatingSum(plan.arenaBytes, scratch), constants);
  if (memory > limits.memoryBytes)
    return makeLimitError(
        "the plan (an arena of " + formatResourceSize(plan.arenaBytes, true) +
            ", scratch of " + formatResourceSize(scratch, true) +
            ", constants of " + formatResourceSize(constants, true) + ")",
        memory, /*bytes=*/true);
  uint64_t work = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep &s = *plan.steps[i];
    uint64_t units = s.getWork(plan);
    if (units > limits.work - std::min(work, limits.work))
      return makeLimitError(
          "step " + llvm::Twine(i) + " (" + s.getKindName() +
              (s.op.empty() ? "" : " " + s.op) +
              (s.getName().empty() ? "" : " '" + s.getName().str() + "'") + ")",
          units, /*bytes=*/false,
          work ? "after " + formatResourceSize(work, false) +
                     " in the steps before it"
               : "");
    work += units;
  }
  return llvm::Error::success();
}

/// Whether tensor `id` is the dequantization of a float8 tensor (an FP8
/// model's activation: its products are FP8 arithmetic the plan runs in
/// f32, not a float island).
static bool isFloat8Dequantized(const Plan &plan,
                                llvm::ArrayRef<const PlanStep *> producers,
                                int id) {
  const auto *dq = id >= 0 && size_t(id) < producers.size()
                       ? llvm::dyn_cast_or_null<FloatStep>(producers[id])
                       : nullptr;
  if (!dq ||
      (dq->getOp().op != ops::DequantizeLinear &&
       dq->getOp().op != ops::QDequantize) ||
      dq->inputs.empty() || dq->inputs[0] < 0)
    return false;
  return isMinifloatKind(plan.tensors[dq->inputs[0]].kind);
}

llvm::Error plan::checkMostlyInt8(const Plan &plan) {
  uint64_t int8Macs = 0, floatTotal = 0;
  const FloatStep *largest = nullptr;
  uint64_t largestMacs = 0;
  std::vector<const PlanStep *> producers(plan.tensors.size(), nullptr);
  for (const auto &s : plan.steps)
    for (int id : s->outputs)
      if (id >= 0 && size_t(id) < producers.size())
        producers[id] = s.get();
  for (const auto &s : plan.steps) {
    // Float steps count no MACs of their own (getMacs 0).
    int8Macs =
        saturatingSum(int8Macs, uint64_t(std::max<int64_t>(s->getMacs(), 0)));
    const auto *f = llvm::dyn_cast<FloatStep>(s.get());
    if (!f)
      continue;
    const std::string &op = f->getOp().op;
    if (op == ops::MaxPool || op == ops::AveragePool || op == ops::QPool ||
        op == ops::MsQLinearAveragePool)
      continue; // window taps, not multiply-accumulates
    std::optional<uint64_t> macs = f->getFloatMacs(plan);
    if (!macs)
      continue;
    if (!f->inputs.empty() &&
        isFloat8Dequantized(plan, producers, f->inputs[0])) {
      int8Macs = saturatingSum(int8Macs, *macs); // FP8, run in f32
      continue;
    }
    floatTotal = saturatingSum(floatTotal, *macs);
    if (*macs > largestMacs) {
      largestMacs = *macs;
      largest = f;
    }
  }
  if (!largest || floatTotal <= int8Macs)
    return llvm::Error::success();
  return makeError(
      "most of the plan's arithmetic is float: " +
      formatResourceSize(floatTotal, false) + " of " +
      formatResourceSize(saturatingSum(floatTotal, int8Macs), false) +
      " multiply-accumulates run in float steps, on neither int8 nor FP8 "
      "operands (the largest " +
      largest->getOp().op +
      (largest->getName().empty() ? ""
                                  : " '" + largest->getName().str() + "'") +
      "); the plan is an int8 compiler: give the convs and matmuls Q/DQ "
      "inputs (or run the model in ONNX Runtime), or build it anyway with "
      "--allow-float-plan");
}
