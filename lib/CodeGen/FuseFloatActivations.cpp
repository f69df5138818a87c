//===- FuseFloatActivations.cpp - A Relu done by the arithmetic before it -===//
//
// A float Relu step whose operand an Add, Sub, Mul or Div float step writes
// for it alone is done by that step (FloatStep::kReluAfter): each element
// of the op's f32 result goes through the Relu before it is stored, so the
// tensor between them is neither written whole nor read back.
//
//   %s = float onnx.Add (%a, %b)     =>   %y = float onnx.Add (%a, %b)
//   %y = float onnx.Relu (%s)                   {qopt.relu_after = 1}
//
// ResNets as pytorch-quantization exports them end each block in float:
// the residual Add, its Relu, then the next conv's input quantizer. The
// bytes are the two steps': the op's result is rounded to f32 first, as
// the Add step stores it, and the Relu is the reference's.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderImpl.h"
#include "qopt/IR/OpNames.h"
#include "qopt/Interpreter/Kernel.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Casting.h"

#include <algorithm>

using namespace qopt;
using namespace qopt::codegen;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

namespace {

/// Whether an operand or result of the op has a quantized type.
bool hasQuantTypes(const KernelOp &op) {
  auto any = [](const auto &types) {
    return llvm::any_of(types, [](const QuantType *q) { return q; });
  };
  return any(op.operandQuantTypes) || any(op.resultQuantTypes);
}

/// Whether the float step is an op the Relu can follow: one of the four
/// on f32 operands and an f32 result, without quantized types, not fused
/// already.
bool takesRelu(const Plan &plan, const FloatStep &step) {
  const KernelOp &op = step.getOp();
  if (!(op.op == ops::Add || op.op == ops::Sub || op.op == ops::Mul ||
        op.op == ops::Div) ||
      step.inputs.size() != 2 || step.outputs.size() != 1 ||
      step.outputs[0] < 0 || step.hasReluAfter() || hasQuantTypes(op))
    return false;
  for (int id : step.inputs)
    if (id < 0 || plan.tensors[id].kind != ElementKind::F32)
      return false;
  return plan.tensors[step.outputs[0]].kind == ElementKind::F32;
}

/// Whether the float step is a plain Relu of an f32 tensor.
bool isRelu(const Plan &plan, const FloatStep &step) {
  const KernelOp &op = step.getOp();
  if (op.op != ops::Relu || step.inputs.size() != 1 ||
      step.outputs.size() != 1 || step.inputs[0] < 0 || step.outputs[0] < 0 ||
      hasQuantTypes(op))
    return false;
  return plan.tensors[step.outputs[0]].kind == ElementKind::F32;
}

} // namespace

void codegen::fuseReluIntoFloatArithmetic(Plan &plan) {
  std::vector<int> producer = findProducers(plan);
  Readers readers(plan);
  bool fusedAny = false;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const auto *relu = llvm::dyn_cast<FloatStep>(plan.steps[i].get());
    if (!relu || !isRelu(plan, *relu))
      continue;
    int id = relu->inputs[0];
    int at = producer[id];
    const auto *arithmetic =
        at < 0 ? nullptr : llvm::dyn_cast<FloatStep>(plan.steps[at].get());
    if (!arithmetic || !takesRelu(plan, *arithmetic) ||
        !readers.onlyReader(id, 1))
      continue;
    // The Relu's result in the op's place: same shape and layout.
    const PlanTensor &from = plan.tensors[id];
    const PlanTensor &to = plan.tensors[relu->outputs[0]];
    if (from.shape != to.shape || from.layout != to.layout)
      continue;
    KernelOp op = arithmetic->getOp();
    FloatStep::removeReluAfter(op); // one a text plan gave it (0, say)
    op.attributes.push_back({FloatStep::kReluAfter, Attribute(int64_t(1))});
    KernelFn fn = KernelRegistry::get().lookup(op.op);
    if (!fn)
      continue;
    auto fused = std::make_unique<FloatStep>(
        (arithmetic->getName() + "+" + relu->getName()).str(), std::move(op),
        fn, arithmetic->getOpset());
    fused->PlanStep::op = arithmetic->PlanStep::op + "+" + relu->PlanStep::op;
    fused->inputs = arithmetic->inputs;
    fused->outputs = relu->outputs;
    // In the Relu's place: its result is ready where it was.
    plan.steps[i] = std::move(fused);
    plan.steps[at] = nullptr;
    fusedAny = true;
  }
  if (!fusedAny)
    return;
  plan.steps.erase(std::remove(plan.steps.begin(), plan.steps.end(), nullptr),
                   plan.steps.end());
}
