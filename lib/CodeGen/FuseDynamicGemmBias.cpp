//===- FuseDynamicGemmBias.cpp - A float bias Add done by the gemm --------===//
//
// A float Add step of a dynamic int8 gemm step's result alone and a
// constant with one f32 per column (and its Relu, fused into the Add
// before), or a float Relu of it, is done by the gemm step's epilogue: bias
// and Relu follow the scale there as they follow it in the graph.
//
//   %y = dynamic int8 gemm (%q, %s, %z)        =>  %r = dynamic int8 gemm
//   %r = float onnx.Add (%y, %b) [relu after]          (%q, %s, %z)
//                                                      {bias b, relu}
//
// com.microsoft DynamicQuantizeMatMul without a bias input (what the
// exporter's Linear leaves after it) has it as a separate Add: a float step
// over the whole result otherwise. The bits are the two steps': the gemm's
// float(acc) * scale rounded to f32, plus the bias in f32 (the Add step's
// double sum of two f32 rounds to the same f32), then v < 0 ? 0 : v, the
// reference's Relu.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderImpl.h"
#include "qopt/IR/OpNames.h"

#include "llvm/Support/Casting.h"

#include <algorithm>

using namespace qopt;
using namespace qopt::codegen;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

namespace {

/// The f32 values of constant tensor `id` when it holds one per column of
/// a [..., columns] result (its shape all 1s but the last), or none.
std::optional<std::vector<float>> columnBias(const Plan &plan, int id,
                                             int64_t columns) {
  const PlanTensor &t = plan.tensors[id];
  if (!t.constant || t.kind != ElementKind::F32 || t.shape.empty() ||
      t.shape.back() != columns ||
      !std::all_of(t.shape.begin(), t.shape.end() - 1,
                   [](int64_t d) { return d == 1; }))
    return std::nullopt;
  const float *data = t.constant->data<float>();
  return std::vector<float>(data, data + columns);
}

} // namespace

/// The gemm step `steps[at]` with `bias` (when given) and a Relu (when
/// `relu`) in its epilogue, named and writing as `after`, the step it
/// absorbs.
static std::unique_ptr<PlanStep>
withEpilogue(const Plan &plan, const DynamicGemmStep &gemm,
             const PlanStep &after, std::optional<std::vector<float>> bias,
             bool relu) {
  const Int8Conv &conv = gemm.getConv();
  Int8Epilogue e = conv.getEpilogue();
  if (bias)
    e.bias = std::move(*bias);
  if (relu)
    e.activation = Activation::Relu;
  std::vector<int8_t> weights = conv.getWeights();
  auto fused = std::make_unique<DynamicGemmStep>(
      (gemm.getName() + "+" + after.getName()).str(),
      Int8Conv(plan.isa, conv.getShape(), weights.data(), std::move(e)));
  fused->op = gemm.op + "+" + after.op;
  fused->inputs = gemm.inputs;
  fused->outputs = after.outputs;
  return fused;
}

void codegen::fuseBiasIntoDynamicGemms(Plan &plan) {
  std::vector<int> producer = findProducers(plan);
  Readers readers(plan);
  bool fusedAny = false;
  // The dynamic gemm step writing `id` for `step` alone, with no
  // activation yet (and no bias, for one), `step`'s result of its shape and
  // layout in f32; or -1.
  auto plainGemmOf = [&](int id, const PlanStep &step, bool forBias) -> int {
    int at = id < 0 ? -1 : producer[id];
    const auto *gemm =
        at < 0 ? nullptr
               : llvm::dyn_cast_or_null<DynamicGemmStep>(plan.steps[at].get());
    if (!gemm || !readers.onlyReader(id, 1) || step.outputs.size() != 1 ||
        step.outputs[0] < 0)
      return -1;
    const Int8Epilogue &e = gemm->getConv().getEpilogue();
    const PlanTensor &from = plan.tensors[id];
    const PlanTensor &to = plan.tensors[step.outputs[0]];
    if ((forBias && !e.bias.empty()) || e.activation != Activation::None ||
        from.shape != to.shape || from.layout != to.layout ||
        to.kind != ElementKind::F32)
      return -1;
    return at;
  };
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const auto *step = llvm::dyn_cast_or_null<FloatStep>(plan.steps[i].get());
    if (!step)
      continue;
    const KernelOp &op = step->getOp();
    if (op.op == ops::Relu && step->inputs.size() == 1) {
      int at = plainGemmOf(step->inputs[0], *step, false);
      if (at < 0)
        continue;
      plan.steps[i] =
          withEpilogue(plan, llvm::cast<DynamicGemmStep>(*plan.steps[at]),
                       *step, std::nullopt, true);
      plan.steps[at] = nullptr;
      fusedAny = true;
      continue;
    }
    if (op.op != ops::Add || step->inputs.size() != 2)
      continue;
    for (unsigned side = 0; side < 2; ++side) {
      int at = plainGemmOf(step->inputs[side], *step, true);
      if (at < 0 || step->inputs[1 - side] < 0)
        continue;
      const auto &gemm = llvm::cast<DynamicGemmStep>(*plan.steps[at]);
      auto bias = columnBias(plan, step->inputs[1 - side],
                             gemm.getConv().getShape().outC);
      if (!bias)
        continue;
      // In the Add's place: its result is ready where it was.
      plan.steps[i] = withEpilogue(plan, gemm, *step, std::move(bias),
                                   step->hasReluAfter());
      plan.steps[at] = nullptr;
      fusedAny = true;
      break;
    }
  }
  if (!fusedAny)
    return;
  plan.steps.erase(std::remove(plan.steps.begin(), plan.steps.end(), nullptr),
                   plan.steps.end());
}
