//===- FusionEpilogue.cpp - How a unit ends: epilogue and output Q --------===//
//
// After its anchor, a unit takes the ops the backend runs in the same
// kernel (activations, BatchNormalization, a bias or residual Add, SiLU,
// TensorRT's MaxPool) and ends on the Q of its output: the Q right after
// it, or one after data movement the Q moves backward through. Without
// one it writes float where the rules allow it, and stays float where
// they do not.
//
//===----------------------------------------------------------------------===//

#include "FusionPlanner.h"

#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/QdqUtils.h"

using namespace qopt;

namespace qopt {
namespace fusion {

const Node *Planner::weightedProducer(const Value *v) const {
  const Node *p = v->getDefiningNode();
  while (p && !hasTrait(*p, OpTrait::Weighted)) {
    const OpRule *rule = rules.lookup(p->getOp());
    if (!rule || !(rule->epilogue || rule->role == OpRole::Epilogue) ||
        p->getNumOperands() == 0 || !p->getOperand(0) ||
        !p->getOperand(0)->hasOneUse())
      return nullptr;
    p = p->getOperand(0)->getDefiningNode();
  }
  const OpRule *rule = p ? rules.lookup(p->getOp()) : nullptr;
  return rule && rule->role == OpRole::Weighted ? p : nullptr;
}

void Planner::readResidualInFloat(FusionUnit &unit) {
  if (!residualRead)
    return;
  const ResidualRead &r = *residualRead;
  unit.inputs[r.port] = {r.add->getOperand(r.operand), nullptr};
  llvm::erase_value(pendingReads, std::make_pair(r.add, r.operand));
  if (r.dequantize)
    llvm::erase_value(unit.absorbed, r.dequantize);
  residualRead.reset();
}

/// GELU as exporters write it before opset 20, 0.5 * x * (1 + Erf(x /
/// sqrt(2))): Div(x, c) -> Erf -> Add(., c) and then either Mul(x, .) ->
/// [Mul(., c)] (torch.onnx) or Mul(x, c) -> Mul(., .) (the 0.5 first).
/// Returns its nodes in order, or none.
std::vector<Node *> matchErfGelu(const Value *x) {
  if (x->isGraphOutput() || x->getNumUses() != 2)
    return {};
  auto constantOperand = [](const Node *n, unsigned i) {
    return n->getNumOperands() == 2 && isConstantValue(n->getOperand(i));
  };
  // Mul(a, b) by a constant, either side: the other operand, or null.
  auto byConstant = [&](const Node *n) -> const Value * {
    if (!n->isa(ops::Mul) || n->getNumOperands() != 2)
      return nullptr;
    if (constantOperand(n, 1))
      return n->getOperand(0);
    if (constantOperand(n, 0))
      return n->getOperand(1);
    return nullptr;
  };
  Node *div = nullptr, *other = nullptr;
  for (const Use &u : x->getUses()) {
    if (!u.user)
      return {};
    if (!div && u.user->isa(ops::Div) && u.index == 0 &&
        constantOperand(u.user, 1))
      div = u.user;
    else
      other = u.user;
  }
  if (!div || !other || !other->isa(ops::Mul))
    return {};
  Node *erf = soleUser(div->getResult());
  Node *add = erf && erf->isa(ops::Erf) ? soleUser(erf->getResult()) : nullptr;
  if (!add || !add->isa(ops::Add) || add->getNumOperands() != 2 ||
      !(constantOperand(add, 0) || constantOperand(add, 1)))
    return {};
  const Value *sum = add->getResult();
  std::vector<Node *> nodes = {div, erf, add};
  if (other->getNumOperands() == 2 &&
      llvm::is_contained(other->getOperands(), sum)) {
    // Mul(x, 1 + erf), then the 0.5.
    nodes.push_back(other);
    if (Node *half = soleUser(other->getResult()))
      if (byConstant(half) == other->getResult())
        nodes.push_back(half);
    return soleUser(sum) == other ? nodes : std::vector<Node *>{};
  }
  // Mul(x, 0.5), then Mul(., 1 + erf).
  Node *last = soleUser(other->getResult());
  if (byConstant(other) != x || !last || !last->isa(ops::Mul) ||
      last->getNumOperands() != 2 || soleUser(sum) != last ||
      !llvm::is_contained(last->getOperands(), other->getResult()))
    return {};
  nodes.push_back(other);
  nodes.push_back(last);
  return nodes;
}

void Planner::absorbEpilogue(FusionUnit &unit) {
  bool addSeen = unit.getAnchor()->isa(ops::Add);
  bool weighted = lookupOpDef(unit.getAnchor()->getOp()) &&
                  hasTrait(*unit.getAnchor(), OpTrait::Weighted);
  while (true) {
    Node *last = unit.members.back();
    Value *cur = last->getResult(0);
    if (cur->isGraphOutput())
      return;
    // SiLU exported as x * Sigmoid(x).
    if (rules.siluEpilogue && weighted && cur->getNumUses() == 2) {
      Node *sig = nullptr, *mul = nullptr;
      for (const Use &u : cur->getUses()) {
        if (u.user && u.user->isa(ops::Sigmoid))
          sig = u.user;
        else if (u.user && u.user->isa(ops::Mul))
          mul = u.user;
      }
      if (sig && mul && sig->getResult()->hasOneUse() &&
          !sig->getResult()->isGraphOutput() &&
          sig->getResult()->getUses().front().user == mul) {
        unit.members.push_back(sig);
        unit.members.push_back(mul);
        continue;
      }
    }
    if (rules.geluEpilogue && weighted)
      if (std::vector<Node *> gelu = matchErfGelu(cur); !gelu.empty()) {
        unit.members.insert(unit.members.end(), gelu.begin(), gelu.end());
        continue;
      }
    if (!cur->hasOneUse())
      return;
    Node *user = cur->getUses().front().user;
    const OpRule *rule = rules.lookup(user->getOp());
    if (user->isa(ops::Add) && !addSeen) {
      unsigned other = user->getOperand(0) == cur ? 1 : 0;
      const Value *o = user->getOperand(other);
      if (isConstantValue(o) && weighted) {
        // A bias added after Gemm/MatMul.
        unit.members.push_back(user);
        unit.inputs.push_back({o, nullptr});
        addSeen = true;
        continue;
      }
      if (!rules.residualAddEpilogue || !weighted)
        return;
      const QuantType *g = readGrid(o);
      if (!g || !activationGridProblem(g).empty() ||
          !s8ActivationProblem(g, storedOrSelf(o)).empty()) {
        if (!rules.floatResidualAddEpilogue)
          return;
        // Read in float; of two weighted ops feeding the Add, the later
        // one takes it.
        const Node *peer = weightedProducer(o);
        if (peer && nodeOrder.lookup(peer) > nodeOrder.lookup(unit.getAnchor()))
          return;
        unit.members.push_back(user);
        unit.inputs.push_back({o, nullptr});
        floatResidual = true;
        addSeen = true;
        continue;
      }
      unit.members.push_back(user);
      Node *dq = getProducer(o, ops::QDequantize);
      residualRead = ResidualRead{user, other, unit.inputs.size(), dq};
      unit.inputs.push_back({storedOrSelf(o), g});
      pendingReads.push_back({user, other});
      if (dq)
        unit.absorbed.push_back(dq);
      addSeen = true;
      continue;
    }
    if (!rule || !rule->epilogue)
      return;
    if (user->isa(ops::BatchNormalization) && addSeen)
      return;
    unit.members.push_back(user);
  }
}

/// Ops a Q moves backward through exactly: one data input, its values
/// moved or selected (never padded or interpolated).
static bool commutesWithQuantize(const Node &n, const QuantType *grid) {
  if (!carriesIntegers(n) || n.isa(ops::Resize) || n.isa(ops::Pad) ||
      n.getNumResults() != 1)
    return false;
  llvm::SmallVector<unsigned, 4> data = getDataOperands(n);
  return data.size() == 1 && data[0] == 0 &&
         whyGridCannotCross(n, grid).empty();
}

const Value *Planner::quantizedThroughCopies(const Value *out,
                                             std::vector<Node *> &chain) const {
  const Value *cur = out;
  chain.clear();
  for (unsigned depth = 0; depth < 8; ++depth) {
    if (cur->isGraphOutput() || !cur->hasOneUse())
      return nullptr;
    Node *user = cur->getUses().front().user;
    if (!user || user->getOperand(0) != cur || !carriesIntegers(*user))
      return nullptr;
    chain.push_back(user);
    const Value *next = user->getResult(0);
    if (const Value *q = quantizedOnOneGrid(next)) {
      for (const Node *c : chain)
        if (!commutesWithQuantize(*c, getStoredQuantType(q)))
          return nullptr;
      return q;
    }
    if (!next->isGraphOutput() && next->hasUses() &&
        allUsersAre(next, ops::QQuantize))
      return nullptr; // Qs onto several grids
    cur = next;
  }
  return nullptr;
}

bool Planner::finishUnit(FusionUnit &unit, const OpRule &rule,
                         FloatCause &why) {
  absorbEpilogue(unit);
  Node *last = unit.members.back();
  Value *out = last->getResult(0);
  // ORT drops a Relu (or Clip at 0) before a Q whose zero point is the
  // storage minimum: the Q clamps there already.
  if (rules.reluFoldsIntoQ && out->hasOneUse() && !out->isGraphOutput()) {
    Node *relu = out->getUses().front().user;
    if (relu->isa(ops::Relu) && relu->getResult()->hasOneUse() &&
        !relu->getResult()->isGraphOutput()) {
      Node *q = relu->getResult()->getUses().front().user;
      const QuantType *qg =
          q->isa(ops::QQuantize) ? getStoredQuantType(q->getResult()) : nullptr;
      if (qg && !qg->isPerAxis() &&
          qg->getZeroPoint() ==
              quant::saturateToStorage(-1e300, qg->getStorageKind())) {
        unit.members.push_back(relu);
        last = relu;
        out = relu->getResult();
      }
    }
  }
  const QuantType *outGrid = nullptr;
  std::string problem;
  if (floatResidual) {
    // Its Q stays a layer of its own.
  } else if (!out->isGraphOutput() && out->hasUses() &&
             allUsersAre(out, ops::QQuantize)) {
    outGrid = getStoredQuantType(out->getUses().front().user->getResult());
    problem = activationGridProblem(outGrid);
    if (problem.empty())
      problem = s8ActivationProblem(outGrid,
                                    out->getUses().front().user->getResult());
  } else if (std::vector<Node *> chain;
             const Value *q = quantizedThroughCopies(out, chain)) {
    // The Q moves backward through the data movement after the unit (as
    // TensorRT's and ONNX Runtime's Q/DQ propagation do): the unit writes
    // int8 and the data movement runs on it as copies.
    const QuantType *grid = getStoredQuantType(q);
    if (activationGridProblem(grid).empty() &&
        s8ActivationProblem(grid, q).empty()) {
      if (rules.maxPoolJoinsWeightedUnit && chain.size() == 1 &&
          chain[0]->isa(ops::MaxPool) &&
          hasTrait(*unit.getAnchor(), OpTrait::Weighted)) {
        // TensorRT's ConvActPool: the pool runs in the conv's kernel.
        unit.members.push_back(chain[0]);
        last = chain[0];
        out = last->getResult(0);
        outGrid = grid;
      } else {
        copyGrid[out] = grid;
        unit.outputs.push_back({out, grid});
        return true;
      }
    }
  }
  if (outGrid && problem.empty()) {
    // The unit writes the first Q's grid; a Q onto another grid is a
    // requantize of that output.
    Node *first = out->getUses().front().user;
    for (const Use &u : out->getUses()) {
      const QuantType *g = getStoredQuantType(u.user->getResult());
      if (sameGrid(g, outGrid)) {
        unit.absorbed.push_back(u.user);
        continue;
      }
      Leftover l;
      l.kind = LeftoverKind::Requantize;
      l.nodes = {last, u.user};
      l.reason = "the output of " + nodeRef(*last) +
                 " is quantized twice: " + nodeRef(*first) + " onto " +
                 scaleText(outGrid) + ", " + nodeRef(*u.user) + " onto " +
                 scaleText(g);
      l.fixInModel =
          "quantize it once: one quantizer (amax) after " + nodeRef(*last);
      plan.leftovers.push_back(std::move(l));
      extraQuantizes.insert(u.user);
    }
    unit.outputs.push_back({first->getResult(), outGrid});
    return true;
  }
  if (rule.needsOutputQ) {
    if (!problem.empty())
      why = gridCause("output", problem);
    else if (out->isGraphOutput())
      why.reason = "its output '" + out->getName().str() +
                   "' is a graph output in float; " + rules.title.str() +
                   " fuses it only with a Q on the output";
    else if (!out->hasUses())
      why.reason = "its output is unused";
    else {
      why.reason = "no Q on its output (" + rules.title.str() +
                   " fuses it only with a Q on the output)";
      // quantize-activations quantizes weighted ops' outputs.
      if (hasTrait(*unit.getAnchor(), OpTrait::Weighted))
        why.fixPipeline = "quantize-activations";
      why.fixInModel = "add an output quantizer after " + nodeRef(*last);
    }
    // The epilogue members go back to float with the anchor.
    unit.members.resize(1);
    return false;
  }
  if (rules.floatResidualAddEpilogue)
    readResidualInFloat(unit);
  unit.outputs.push_back({out, nullptr});
  return true;
}

} // namespace fusion
} // namespace qopt
