//===- FuseQuantize.cpp - Quantize steps done by the copies feeding them --===//
//
// A quantize step whose f32 operand a channel copy step writes (a Concat or
// Split of f32 tensors, as YOLO's C2f blocks leave them before a conv's
// input quantizer) becomes part of that copy: each piece that wrote the
// operand's channels quantizes the same channels of its source straight
// into the quantize's result. Quantizing is element by element, so the
// bytes are the quantize step's; the f32 tensor is neither written whole
// nor read back.
//
//   %c = channel copy (%a -> %c[0, m),    =>   %y = channel copy
//                      %b -> %c[m, n))              (%a -> %y[0, m) on g,
//   %y = quantize %c on g                            %b -> %y[m, n) on g)
//
// When another step reads %c too (the half of a Split that a residual Add
// also reads), the copy writes both %c, as before, and %y.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderImpl.h"

#include "llvm/Support/Casting.h"

#include <algorithm>

using namespace qopt;
using namespace qopt::codegen;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

namespace {

/// Whether `copy`'s pieces into `id` copy f32 channels from other tensors
/// with nothing on the way, and write each of its channels once.
bool copiesEveryChannelOf(const Plan &plan, const ChannelCopyStep &copy,
                          int id) {
  const PlanTensor &t = plan.tensors[id];
  int64_t channels =
      t.layout == PlanLayout::Nhwc
          ? t.shape[1]
          : t.numElements() / std::max<int64_t>(copy.getNumTiles(), 1);
  std::vector<bool> written(std::max<int64_t>(channels, 0), false);
  for (const ChannelCopyStep::Piece &p : copy.getPieces()) {
    if (p.to != id)
      continue;
    if (p.from == id || !p.table.empty() || p.grid ||
        plan.tensors[p.from].kind != ElementKind::F32 || p.toChannel < 0 ||
        p.channels < 0 || p.toChannel + p.channels > channels)
      return false;
    for (int64_t c = p.toChannel; c < p.toChannel + p.channels; ++c) {
      if (written[c])
        return false;
      written[c] = true;
    }
  }
  return llvm::all_of(written, [](bool w) { return w; });
}

} // namespace

void codegen::fuseQuantizeIntoCopies(Plan &plan) {
  Readers readers(plan);
  std::vector<int> producer = findProducers(plan);
  bool fused = false;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const auto *quantize =
        llvm::dyn_cast_or_null<QuantizeStep>(plan.steps[i].get());
    if (!quantize || quantize->isToNhwc())
      continue;
    int operand = quantize->inputs[0], result = quantize->outputs[0];
    int at = producer[operand];
    const auto *copy =
        at < 0 ? nullptr
               : llvm::dyn_cast<ChannelCopyStep>(plan.steps[at].get());
    const PlanTensor &from = plan.tensors[operand];
    const PlanTensor &to = plan.tensors[result];
    if (!copy || from.layout != to.layout || from.shape != to.shape ||
        !copiesEveryChannelOf(plan, *copy, operand))
      continue;
    bool keepOperand = !readers.onlyReader(operand, 1);
    std::vector<ChannelCopyStep::Piece> pieces;
    for (const ChannelCopyStep::Piece &p : copy->getPieces()) {
      if (p.to != operand || keepOperand)
        pieces.push_back(p);
      if (p.to != operand)
        continue;
      ChannelCopyStep::Piece quantized = p;
      quantized.to = result;
      quantized.grid = quantize->getGrid();
      pieces.push_back(std::move(quantized));
    }
    std::string name = copy->getName().str();
    if (!quantize->getName().empty())
      name += (name.empty() ? "" : "+") + quantize->getName().str();
    auto step = std::make_unique<ChannelCopyStep>(
        std::move(name), std::move(pieces), copy->getNumTiles());
    step->op = copy->op + "+" + quantize->op;
    step->inputs = copy->inputs;
    step->outputs = copy->outputs;
    if (!keepOperand)
      llvm::erase_value(step->outputs, operand);
    step->outputs.push_back(result);
    producer[result] = at;
    plan.steps[at] = std::move(step);
    plan.steps[i].reset();
    fused = true;
  }
  if (fused)
    plan.steps.erase(std::remove(plan.steps.begin(), plan.steps.end(), nullptr),
                     plan.steps.end());
}
