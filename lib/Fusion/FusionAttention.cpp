//===- FusionAttention.cpp - Attention as one INT8 unit (TensorRT) --------===//
//
// TensorRT fuses multi-head attention into one kernel. In INT8 it does so
// only with Q/DQ before the first batched MatMul, after the Softmax and
// after the second MatMul, a head size of 16, 32 or 64 and sequence lengths
// of at most 512 (the Developer Guide's MHA fusion section, as quoted in
// TensorRT issues #2981 and #4167; Model Optimizer's
// find_nodes_from_mha_to_exclude drops INT8 attention Q/DQ above 512):
//
//   %q = q.dequantize(%q8)   %k = q.dequantize(%k8)       ┐
//   %s = onnx.MatMul(%q, %k)                               │ unit "attention":
//   [%s = onnx.Mul/Div(%s, scale)] [%s = onnx.Add(%s, mask)] │ reads %q8, %k8,
//   %p = onnx.Softmax(%s)                                  │ %v8 (int8),
//   %p8 = q.quantize(%p)   %pd = q.dequantize(%p8)         │ writes %o8
//   %o = onnx.MatMul(%pd, q.dequantize(%v8))               │
//   %o8 = q.quantize(%o)  (or after Transpose/Reshape)     ┘
//
// Outside those conditions TensorRT runs the two MatMuls as INT8 GEMMs and
// the Softmax in float (issue #3714): the Softmax's cause names the failed
// condition.
//
//===----------------------------------------------------------------------===//

#include "FusionPlanner.h"

#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"
#include "qopt/Passes/QdqUtils.h"

#include <optional>

using namespace qopt;

namespace qopt {
namespace fusion {

Node *soleUser(const Value *v) {
  if (v->isGraphOutput() || !v->hasOneUse())
    return nullptr;
  return v->getUses().front().user;
}

namespace {

/// Static dims of `v`, or empty.
std::vector<int64_t> staticDims(const Value *v) {
  const TensorType *t = v->getType();
  return t ? t->getStaticDims().value_or(std::vector<int64_t>{})
           : std::vector<int64_t>{};
}

} // namespace

const QuantType *Planner::int8GridAhead(const Value *v) const {
  // The ops between the DQ and `v` may come after the first MatMul in node
  // order, so they are not classified yet: follow them back to the DQ.
  std::vector<const Node *> moves;
  const Value *cur = v;
  const QuantType *grid = nullptr;
  for (unsigned depth = 0; depth < 8 && !grid; ++depth) {
    if (Node *dq = getProducer(cur, ops::QDequantize))
      if (!isActivationDequantize(*dq))
        return nullptr; // a weight
    if (isConstantValue(cur))
      return nullptr;
    if ((grid = readGrid(cur)))
      break;
    const Node *p = cur->getDefiningNode();
    if (!p || !carriesIntegers(*p) || p->getNumResults() != 1)
      return nullptr;
    llvm::SmallVector<unsigned, 4> data = getDataOperands(*p);
    if (data.size() != 1 || data[0] != 0)
      return nullptr;
    moves.push_back(p);
    cur = p->getOperand(0);
  }
  for (auto it = moves.rbegin(); grid && it != moves.rend(); ++it) {
    if (!whyGridCannotCross(**it, grid).empty())
      return nullptr;
    auto across = quantTypeAcross(**it, grid, 0);
    if (!across) {
      llvm::consumeError(across.takeError());
      return nullptr;
    }
    grid = *across;
  }
  return grid;
}

std::optional<AttentionScores> matchAttentionScores(Node &bmm1) {
  // The chain to the Softmax: an optional scale, an optional mask.
  std::vector<Node *> members = {&bmm1};
  Node *cur = soleUser(bmm1.getResult());
  if (cur && (cur->isa(ops::Mul) || cur->isa(ops::Div)) &&
      isConstantValue(cur->getOperand(1))) {
    members.push_back(cur);
    cur = soleUser(cur->getResult());
  }
  const Value *maskInput = nullptr;
  Node *maskAdd = nullptr;
  unsigned maskOperand = 0;
  if (cur && cur->isa(ops::Add) && cur->getNumOperands() == 2) {
    const Value *prev = members.back()->getResult();
    maskOperand = cur->getOperand(0) == prev ? 1 : 0;
    maskInput = cur->getOperand(maskOperand);
    if (maskInput == prev)
      return std::nullopt;
    maskAdd = cur;
    members.push_back(cur);
    cur = soleUser(cur->getResult());
  }
  if (!cur || !cur->isa(ops::Softmax))
    return std::nullopt;
  Node *softmax = cur;
  // Over the last axis (an absent axis is 1 before opset 13, -1 after).
  std::optional<int64_t> axis = softmax->getIntAttr("axis");
  int64_t rank = static_cast<int64_t>(staticDims(softmax->getResult()).size());
  if (!axis || !(*axis == -1 || (rank && *axis == rank - 1)))
    return std::nullopt;
  members.push_back(softmax);
  return AttentionScores{std::move(members), softmax, maskAdd, maskInput,
                         maskOperand};
}

bool Planner::tryAttention(Node &bmm1, const OpRule &rule) {
  if (rules.int8AttentionHeadSizes.empty() || !bmm1.isa(ops::MatMul) ||
      bmm1.getNumOperands() != 2)
    return false;
  // Both operands are activations on int8 grids.
  const QuantType *qGrid = readGrid(bmm1.getOperand(0));
  const QuantType *kGrid = readGrid(bmm1.getOperand(1));
  if (!qGrid || !kGrid || isConstantValue(bmm1.getOperand(1)) ||
      weightValues.count(bmm1.getOperand(1)))
    return false;
  std::optional<AttentionScores> scores = matchAttentionScores(bmm1);
  if (!scores)
    return false;
  std::vector<Node *> members = scores->members;
  Node *softmax = scores->softmax, *maskAdd = scores->maskAdd;
  const Value *maskInput = scores->maskInput;
  unsigned maskOperand = scores->maskOperand;
  // Softmax -> Q -> DQ -> the second MatMul's first operand.
  Node *q = soleUser(softmax->getResult());
  Node *dq = q && q->isa(ops::QQuantize) ? soleUser(q->getResult()) : nullptr;
  Node *bmm2 =
      dq && dq->isa(ops::QDequantize) ? soleUser(dq->getResult()) : nullptr;
  if (!bmm2 || !bmm2->isa(ops::MatMul) ||
      bmm2->getOperand(0) != dq->getResult())
    return false;
  const QuantType *pGrid = getStoredQuantType(q->getResult());
  const Value *v = bmm2->getOperand(1);
  // Null also for a weight (a constant V is no attention).
  const QuantType *vGrid = int8GridAhead(v);
  if (!vGrid && getProducer(v, ops::QDequantize))
    return false;
  auto notFused = [&](std::string why) {
    attentionCauses[softmax] =
        "TensorRT fuses attention (" + nodeRef(bmm1) + " -> " +
        nodeRef(*softmax) + " -> " + nodeRef(*bmm2) +
        ") into one INT8 kernel only " + why +
        " (Developer Guide, MHA fusion; TensorRT issues #2981, #3714)";
    return false;
  };
  if (!vGrid)
    return notFused("with Q/DQ on both inputs of the second MatMul");
  for (const QuantType *g : {qGrid, kGrid, pGrid, vGrid})
    if (std::string problem = activationGridProblem(g); !problem.empty())
      return notFused("on INT8 grids with zero point 0 (" + problem + ")");
  // Head size and sequence lengths: Q is [..., Sq, H], K^T [..., H, Skv].
  std::vector<int64_t> qDims = staticDims(bmm1.getOperand(0));
  std::vector<int64_t> kDims = staticDims(bmm1.getOperand(1));
  if (qDims.size() < 2 || kDims.size() < 2)
    return notFused("with static shapes (the head size is unknown here)");
  int64_t head = qDims.back(), sq = qDims[qDims.size() - 2], skv = kDims.back();
  if (!llvm::is_contained(rules.int8AttentionHeadSizes, head))
    return notFused("with a head size of 16, 32 or 64 (here " +
                    std::to_string(head) + ")");
  if (sq > rules.int8AttentionMaxSequence ||
      skv > rules.int8AttentionMaxSequence)
    return notFused("with sequence lengths of at most " +
                    std::to_string(rules.int8AttentionMaxSequence) + " (here " +
                    std::to_string(std::max(sq, skv)) + ")");

  FusionUnit unit;
  unit.kind = "attention";
  unit.members = members;
  unit.macs = countMacs(bmm1) + countMacs(*bmm2);
  readAsInt8(unit, bmm1, 0, qGrid);
  readAsInt8(unit, bmm1, 1, kGrid);
  if (maskInput) {
    // Read as it comes: a dequantized mask's DQ runs in the kernel.
    const QuantType *g = readGrid(maskInput);
    unit.inputs.push_back({storedOrSelf(maskInput), g});
    if (Node *mdq = getProducer(maskInput, ops::QDequantize)) {
      unit.absorbed.push_back(mdq);
      pendingReads.push_back({maskAdd, maskOperand});
    }
  }
  // The Softmax's Q/DQ stay inside the kernel: no port.
  unit.absorbed.push_back(q);
  unit.absorbed.push_back(dq);
  pendingReads.push_back({bmm2, 0});
  unit.members.push_back(bmm2);
  readAsInt8(unit, *bmm2, 1, vGrid);
  FloatCause why;
  if (!finishUnit(unit, rule, why) || unit.outputs.empty() ||
      !unit.outputs.front().grid) {
    pendingReads.clear();
    floatResidual = false;
    residualRead.reset();
    return notFused("with a Q after the second MatMul");
  }
  addUnit(std::move(unit));
  return true;
}

} // namespace fusion
} // namespace qopt
