//===- PlanBudget.cpp - A plan's memory and work against the limits -------===//
//
// A plan file states its tensors, arena and steps; the verifier checks that
// they agree, this checks that they are affordable (ResourceLimits) before
// anything is allocated or run:
//
//   memory  the arena + the largest scratch of one step + the constants
//   work    per step: an int8 conv, gemm or matmul its MACs; a pool its
//           outputs x the window's taps inside the input; a float step of
//           a conv, matmul, gemm or pool the same from its shapes; any other
//           step the elements it reads and writes
//
// Sums saturate: a step past 2^64 is past every limit.
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/OpNames.h"
#include "qopt/Plan/Plan.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/ResourceLimits.h"

#include <optional>

using namespace qopt;
using namespace qopt::rt;

namespace {

uint64_t elementsOf(const Shape &shape) {
  uint64_t n = 1;
  for (int64_t d : shape)
    n = saturatingProduct({n, uint64_t(std::max<int64_t>(d, 0))});
  return n;
}

/// Taps of a window that lie inside the input, per output.
uint64_t tapsInside(int64_t kernelH, int64_t kernelW, int64_t inH,
                    int64_t inW) {
  return saturatingProduct(
      {uint64_t(std::min(kernelH, inH)), uint64_t(std::min(kernelW, inW))});
}

uint64_t poolWork(const PoolStep::Window &w) {
  return saturatingProduct({uint64_t(w.batch), uint64_t(w.channels),
                            uint64_t(w.outH), uint64_t(w.outW),
                            tapsInside(w.kernelH, w.kernelW, w.inH, w.inW)});
}

/// The multiply-accumulates of a float step of a conv, matmul or gemm
/// (and a pool's window taps), from its shapes; none for other ops.
std::optional<uint64_t> floatMacs(const Plan &plan, const FloatStep &step) {
  const KernelOp &op = step.getOp();
  auto shapeOf = [&](size_t i, bool result) -> const Shape * {
    const std::vector<int> &ids = result ? step.outputs : step.inputs;
    if (i >= ids.size() || ids[i] < 0)
      return nullptr;
    return &plan.tensors[ids[i]].shape;
  };
  const Shape *y = shapeOf(0, true);
  uint64_t results = y ? elementsOf(*y) : 0;
  llvm::StringRef name = op.op;
  // Convolutions: each output sums weight elements / output channels.
  int weight = -1;
  if (name == ops::Conv || name == ops::ConvInteger || name == ops::QConv)
    weight = 1;
  else if (name == ops::QLinearConv)
    weight = 3;
  if (weight >= 0)
    if (const Shape *w = shapeOf(weight, false); w && !w->empty())
      return saturatingProduct(
          {results, elementsOf(*w) / uint64_t(std::max<int64_t>((*w)[0], 1))});
  if (name == ops::ConvTranspose || name == ops::QConvTranspose) {
    const Shape *x = shapeOf(0, false), *w = shapeOf(1, false);
    if (x && w && !w->empty())
      return saturatingProduct(
          {elementsOf(*x),
           elementsOf(*w) / uint64_t(std::max<int64_t>((*w)[0], 1))});
  }
  // Products: each output sums K, at most the larger of A's last two dims.
  if (name == ops::MatMul || name == ops::MatMulInteger ||
      name == ops::QLinearMatMul || name == ops::QMatmul || name == ops::Gemm ||
      name == ops::QGemm || name == ops::MsQGemm) {
    const Shape *a = shapeOf(0, false);
    int64_t depth = 1;
    if (a)
      for (size_t i = a->size() >= 2 ? a->size() - 2 : 0; i < a->size(); ++i)
        depth = std::max(depth, (*a)[i]);
    return saturatingProduct({results, uint64_t(depth)});
  }
  if (name == ops::MaxPool || name == ops::AveragePool || name == ops::QPool ||
      name == ops::MsQLinearAveragePool) {
    const Shape *x = shapeOf(0, false);
    const Attribute *kernel = op.getAttr("kernel_shape");
    if (x && kernel) {
      uint64_t taps = 1;
      std::vector<int64_t> k = kernel->getInts();
      for (size_t i = 0; i < k.size() && i + 2 < x->size(); ++i)
        taps = saturatingProduct({taps, uint64_t(std::max<int64_t>(
                                            std::min(k[i], (*x)[i + 2]), 1))});
      return saturatingProduct({results, taps});
    }
  }
  return std::nullopt;
}

/// The elements a step reads and writes.
uint64_t elementsTouched(const Plan &plan, const PlanStep &s) {
  uint64_t touched = 0;
  for (const std::vector<int> *ids : {&s.inputs, &s.outputs})
    for (int id : *ids)
      if (id >= 0)
        touched = saturatingSum(touched, elementsOf(plan.tensors[id].shape));
  return touched;
}

uint64_t stepWork(const Plan &plan, const PlanStep &s) {
  if (llvm::isa<ConvStep, GemmStep, MatMulStep>(&s))
    return uint64_t(std::max<int64_t>(s.getMacs(), 0));
  if (const auto *pool = llvm::dyn_cast<PoolStep>(&s))
    return poolWork(pool->getWindow());
  if (const auto *pool = llvm::dyn_cast<AveragePoolStep>(&s))
    return poolWork(pool->getParams().window);
  if (const auto *f = llvm::dyn_cast<FloatStep>(&s))
    if (auto macs = floatMacs(plan, *f))
      return *macs;
  return elementsTouched(plan, s);
}

} // namespace

llvm::Error rt::checkPlanBudget(const Plan &plan) {
  ResourceLimits limits = getResourceLimits();
  uint64_t constants = 0, scratch = 0;
  for (const PlanTensor &t : plan.tensors)
    if (t.constant)
      constants = saturatingSum(constants, t.byteSize());
  for (const auto &s : plan.steps)
    scratch = std::max<uint64_t>(scratch, s->getScratchBytes());
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
    uint64_t units = stepWork(plan, s);
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

llvm::Error rt::checkMostlyInt8(const Plan &plan) {
  uint64_t int8Macs = 0, floatTotal = 0;
  const FloatStep *largest = nullptr;
  uint64_t largestMacs = 0;
  for (const auto &s : plan.steps) {
    if (llvm::isa<ConvStep, GemmStep, MatMulStep>(s.get()))
      int8Macs =
          saturatingSum(int8Macs, uint64_t(std::max<int64_t>(s->getMacs(), 0)));
    const auto *f = llvm::dyn_cast<FloatStep>(s.get());
    if (!f)
      continue;
    const std::string &op = f->getOp().op;
    if (op == ops::MaxPool || op == ops::AveragePool || op == ops::QPool ||
        op == ops::MsQLinearAveragePool)
      continue; // window taps, not multiply-accumulates
    std::optional<uint64_t> macs = floatMacs(plan, *f);
    if (!macs)
      continue;
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
      " multiply-accumulates run in float steps on the reference kernels "
      "(the largest " +
      largest->getOp().op +
      (largest->getName().empty() ? ""
                                  : " '" + largest->getName().str() + "'") +
      "); the plan is an int8 compiler: give the convs and matmuls Q/DQ "
      "inputs (or run the model in ONNX Runtime), or build it anyway with "
      "--allow-float-plan");
}
