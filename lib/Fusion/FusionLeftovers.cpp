//===- FusionLeftovers.cpp - What a fusion plan leaves outside INT8 -------===//
//
// After the units form: float ops joined into islands, every DQ followed
// through the int8 copies to where it meets a Q (a requantize when the
// grids differ) or a float op (a reformat), every Q not absorbed by a unit,
// and the hints about Q/DQ that split a conv from its epilogue.
//
//===----------------------------------------------------------------------===//

#include "FusionPlanner.h"

#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/QdqUtils.h"
#include "qopt/Support/FloatFormat.h"

#include "llvm/ADT/EquivalenceClasses.h"

using namespace qopt;
using namespace qopt::fusion;

/// Members of a float island whose causes its reason spells out.
static constexpr size_t kIslandReasonLines = 16;

void Planner::collectIslands() {
  // Float ops joined by float edges form one island.
  llvm::EquivalenceClasses<const Node *> classes;
  for (const Node *n : floatOrder)
    classes.insert(n);
  for (const Node *n : floatOrder)
    for (const Value *v : n->getOperands())
      if (v && v->getDefiningNode() && floatNodes.count(v->getDefiningNode()))
        classes.unionSets(n, v->getDefiningNode());
  llvm::DenseMap<const Node *, size_t> leaderIsland;
  llvm::DenseSet<size_t> mixedFix, hasOwnCause;
  for (const Node *n : floatOrder) {
    const Node *leader = classes.getLeaderValue(n);
    auto it = leaderIsland.find(leader);
    if (it == leaderIsland.end()) {
      Leftover l;
      l.kind = LeftoverKind::FloatIsland;
      it = leaderIsland.try_emplace(leader, plan.leftovers.size()).first;
      plan.leftovers.push_back(std::move(l));
    }
    islandOf[n] = it->second;
    Leftover &l = plan.leftovers[it->second];
    l.nodes.push_back(n);
    const FloatCause &c = floatNodes.find(n)->second;
    // A long island's reason names its first members' causes and counts
    // the rest (the nodes list stays whole).
    if (l.nodes.size() <= kIslandReasonLines)
      l.reason +=
          (l.reason.empty() ? "" : "; ") + nodeRef(*n) + ": " + c.reason;
    // A pipeline fixes the island only when it fixes each of its ops (an
    // op float only because its input is has no fix of its own).
    if (!c.inherited) {
      if (!hasOwnCause.insert(it->second).second) {
        if (l.fixPipeline != c.fixPipeline)
          mixedFix.insert(it->second);
      } else {
        l.fixPipeline = c.fixPipeline;
      }
    }
    if (l.fixInModel.empty())
      l.fixInModel = c.fixInModel;
    if (hasTrait(*n, OpTrait::Weighted) || n->isa(ops::MatMulInteger) ||
        n->isa(ops::ConvInteger) || n->isa(ops::MsMatMulIntegerToFloat) ||
        n->isa(ops::MsDynamicQuantizeMatMul))
      l.floatMacs += countMacs(*n);
  }
  for (size_t i : mixedFix)
    plan.leftovers[i].fixPipeline.clear();
  for (Leftover &l : plan.leftovers)
    if (l.kind == LeftoverKind::FloatIsland &&
        l.nodes.size() > kIslandReasonLines)
      l.reason += "; and " +
                  std::to_string(l.nodes.size() - kIslandReasonLines) +
                  " more ops in float";
}

void Planner::takeFixOf(const Node &n, Leftover &l) const {
  // The fix of the op the edge touches (an island's first fix may be for
  // another of its ops).
  const FloatCause &own = floatNodes.find(&n)->second;
  const Leftover &island = plan.leftovers[islandOf.lookup(&n)];
  if (l.fixPipeline.empty())
    l.fixPipeline = own.inherited ? island.fixPipeline : own.fixPipeline;
  l.fixInModel = own.inherited || own.fixInModel.empty() ? island.fixInModel
                                                         : own.fixInModel;
}

/// Follows the float value `v` (on `grid`) that DQ `dq` produces, through
/// the copies that read it as int8, to where it meets a Q (a requantize
/// when the grids differ) or a float consumer (a reformat).
void Planner::followDequantized(const Node &dq, const Value *v,
                                const QuantType *grid,
                                std::vector<const Node *> path) {
  bool weight = !isActivationDequantize(dq);
  if (v->isGraphOutput() && !path.empty()) {
    Leftover l;
    l.kind = LeftoverKind::UnfusedDequantize;
    l.nodes = path;
    l.reason = "graph output '" + v->getName().str() + "' is float";
    if (path.size() > 1)
      l.reason += ": the DQ moves after " + nodeRef(*path.back());
    l.fixInModel = "none needed: the model returns float";
    plan.leftovers.push_back(std::move(l));
  }
  for (const Use &u : v->getUses()) {
    const Node *user = u.user;
    if (!user)
      continue;
    if (foldedWeightMoves.count(user)) {
      // Data movement folded into the weight: the op after it tells.
      std::vector<const Node *> next = path;
      next.push_back(user);
      followDequantized(dq, user->getResult(),
                        copyGrid.lookup(user->getResult()), next);
      continue;
    }
    if (int8Reads.count({user, u.index})) {
      auto it = plan.unitOf.find(user);
      if (it != plan.unitOf.end() && plan.units[it->second].isCopy()) {
        if (reportedRequantize.count({user, u.index}))
          continue;
        std::vector<const Node *> next = path;
        next.push_back(user);
        for (const FusionUnit::Port &p : plan.units[it->second].outputs)
          followDequantized(dq, p.value, p.grid, next);
      }
      continue;
    }
    if (user->isa(ops::QQuantize) && !isMinifloatQdq(*user)) {
      const QuantType *qg = getStoredQuantType(user->getResult());
      if (sameGrid(qg, grid) || plan.unitOf.count(user))
        continue; // the pair cancels, or the Q belongs to a unit
      Leftover l;
      l.kind = LeftoverKind::Requantize;
      l.nodes = path;
      l.nodes.push_back(user);
      l.reason = path.size() > 1
                     ? nodeRef(*path.back()) + " carries " + scaleText(grid) +
                           " from " + nodeRef(*path.front()) + "; " +
                           nodeRef(*user) + " requantizes it to " +
                           scaleText(qg)
                     : "DQ -> Q with different parameters: " + scaleText(grid) +
                           " -> " + scaleText(qg);
      if (path.size() > 1) {
        l.fixPipeline = "unify-scales,remove-redundant-qdq";
        l.fixInModel = "give the quantizers before and after " +
                       nodeRef(*path.back()) + " one shared amax";
      } else {
        l.fixPipeline = "remove-redundant-qdq<merge-requantize>";
        l.fixInModel = "delete one of the two back-to-back quantizers";
      }
      plan.leftovers.push_back(std::move(l));
      continue;
    }
    auto unit = plan.unitOf.find(user);
    if (unit != plan.unitOf.end() && !floatNodes.count(user)) {
      // Read by a unit as float. TensorRT runs the DQ of a residual that
      // a float-output unit reads as a layer of its own.
      if (!rules.floatResidualAddEpilogue || weight || !user->isa(ops::Add))
        continue;
      const FusionUnit &u = plan.units[unit->second];
      Leftover l;
      l.kind = LeftoverKind::Reformat;
      l.nodes = path;
      l.nodes.push_back(user);
      l.reason = "int8 -> float before " + nodeRef(*user) + ": unit #" +
                 std::to_string(u.id) + " (" + nodeRef(*u.getAnchor()) +
                 ") writes float, so " + rules.title.str() +
                 " reads its residual in float";
      l.fixInModel =
          "add an output quantizer after " + nodeRef(*u.members.back());
      plan.leftovers.push_back(std::move(l));
      continue;
    }
    Leftover l;
    l.kind = weight ? LeftoverKind::UnfusedDequantize : LeftoverKind::Reformat;
    l.nodes = path;
    l.nodes.push_back(user);
    auto fc = floatNodes.find(user);
    if (weight) {
      l.reason = "weight DQ feeds " + nodeRef(*user) + ", which runs in float";
      if (fc != floatNodes.end() && carriesIntegers(*user))
        l.fixPipeline = "fold-weights";
    } else {
      l.reason = "int8 -> float before " + nodeRef(*user);
      if (fc != floatNodes.end())
        l.reason += " (" + fc->second.reason + ")";
    }
    if (fc != floatNodes.end())
      takeFixOf(*user, l);
    plan.leftovers.push_back(std::move(l));
  }
}

void Planner::collectDequantizeLeftovers() {
  for (Node &n : graph.getNodes()) {
    if (n.isa(ops::QRequantize)) {
      if (plan.unitOf.count(&n))
        continue; // an int8 step of its own (requantizeIsInt8Step)
      Leftover l;
      l.kind = LeftoverKind::Requantize;
      l.nodes.push_back(&n);
      l.reason = "requantize " +
                 scaleText(getStoredQuantType(n.getOperand(0))) + " -> " +
                 scaleText(getStoredQuantType(n.getResult()));
      l.fixPipeline = "remove-redundant-qdq<merge-requantize>";
      l.fixInModel = "delete one of the two back-to-back quantizers";
      plan.leftovers.push_back(std::move(l));
      continue;
    }
    if (!n.isa(ops::QDequantize) || isMinifloatQdq(n) ||
        constantValues.count(n.getResult()))
      continue;
    followDequantized(n, n.getResult(), getStoredQuantType(n.getOperand(0)),
                      {&n});
  }
}

void Planner::collectQuantizeLeftovers() {
  // (input, grid) of the standalone Qs seen, where equal Qs are one layer.
  llvm::DenseSet<std::pair<const Value *, const QuantType *>> standalone;
  for (Node &n : graph.getNodes()) {
    if (!n.isa(ops::QQuantize) || isMinifloatQdq(n) || plan.unitOf.count(&n) ||
        extraQuantizes.count(&n))
      continue;
    const Value *in = n.getOperand(0);
    if (rules.mergesEqualQuantizes &&
        !standalone.insert({in, getStoredQuantType(n.getResult())}).second)
      continue; // the same layer as the first such Q
    if (constantValues.count(in) || isConstantValue(in))
      continue; // a weight, folded
    if (readGrid(in))
      continue; // after a DQ or a copy: reported from the DQ side
    Leftover l;
    l.nodes.push_back(&n);
    if (in->isGraphInput()) {
      l.kind = LeftoverKind::UnfusedQuantize;
      l.reason = "quantizes graph input '" + in->getName().str() + "'";
      l.fixInModel = "none needed: the model takes float input";
    } else {
      const Node *p = in->getDefiningNode();
      l.kind = LeftoverKind::Reformat;
      auto fc = floatNodes.find(p);
      auto unit = plan.unitOf.find(p);
      if (fc != floatNodes.end()) {
        l.reason = "float -> int8 after " + nodeRef(*p) + " (" +
                   fc->second.reason + ")";
        takeFixOf(*p, l);
      } else if (unit != plan.unitOf.end() &&
                 floatResidualUnits.count(unit->second)) {
        l.reason = "unit #" + std::to_string(unit->second) + " (" +
                   nodeRef(*plan.units[unit->second].getAnchor()) +
                   ") reads its residual in float, so " + rules.title.str() +
                   " writes its output in float";
        for (const Node *m : plan.units[unit->second].members)
          if (m->isa(ops::Add))
            l.fixInModel = "add a quantizer on the residual (skip) input of " +
                           nodeRef(*m);
      } else if (unit != plan.unitOf.end()) {
        l.reason = "unit #" + std::to_string(unit->second) + " (" +
                   nodeRef(*plan.units[unit->second].getAnchor()) +
                   ") writes float: its output " + in->getName().str() +
                   (in->isGraphOutput() ? " is also a graph output"
                                        : " also feeds ops other than Qs");
        // Data movement among those consumers runs on int8 once the output
        // has a grid: borrow-scales gives it the Q's.
        if (borrowableValues.count(in))
          l.fixPipeline = "borrow-scales<" + rules.name.str() + ">";
        l.fixInModel = "quantize the output of " +
                       nodeRef(*plan.units[unit->second].members.back()) +
                       " for all its consumers (one Q/DQ after it)";
      } else {
        l.reason = "float -> int8 after " + nodeRef(*p);
      }
      l.nodes.insert(l.nodes.begin(), p);
    }
    plan.leftovers.push_back(std::move(l));
  }
}

void Planner::collectSplitUnits() {
  if (!rules.residualAddEpilogue)
    return; // the backend has no epilogue beyond what it fused
  for (const FusionUnit &u : plan.units) {
    const Node *anchor = u.getAnchor();
    if (!hasTrait(*anchor, OpTrait::Weighted) || u.outputs.empty() ||
        !u.outputs.front().grid)
      continue;
    const Value *stored = u.outputs.front().value;
    const Node *q = stored->getDefiningNode();
    for (const Use &du : stored->getUses()) {
      const Node *dq = du.user;
      if (!dq || !dq->isa(ops::QDequantize))
        continue;
      for (const Use &cu : dq->getResult()->getUses()) {
        auto it = cu.user ? plan.unitOf.find(cu.user) : plan.unitOf.end();
        if (it == plan.unitOf.end())
          continue;
        const FusionUnit &next = plan.units[it->second];
        if (next.getAnchor() != cu.user ||
            !(next.kind == "activation" || next.kind == "silu" ||
              next.kind == "add"))
          continue;
        Leftover h;
        h.kind = LeftoverKind::Requantize;
        h.nodes = {anchor, q, dq, cu.user};
        h.reason = nodeRef(*q) + " -> " + nodeRef(*dq) + " between " +
                   nodeRef(*anchor) + " and " + nodeRef(*cu.user) +
                   " splits one kernel into two (unit #" +
                   std::to_string(u.id) + " and unit #" +
                   std::to_string(next.id) + "): the " + next.kind +
                   " could run in the epilogue of the " + u.kind;
        h.fixPipeline = "quantize-residual";
        h.fixInModel = "drop the quantizer on the output of " +
                       nodeRef(*anchor) +
                       " (TensorRT's placement advice: do not quantize the "
                       "outputs of weighted ops)";
        plan.hints.push_back(std::move(h));
        break;
      }
    }
  }
}

FusionPlan::Summary FusionPlan::summarize() const {
  Summary s;
  for (const FusionUnit &u : units) {
    if (u.isCopy()) {
      ++s.copies;
      continue;
    }
    ++s.units;
    if (u.weightOnly4Bit && u.fp4)
      s.fp4WeightOnlyMacs += u.macs;
    else if (u.weightOnly4Bit)
      s.int4WeightOnlyMacs += u.macs;
    else if (u.fp8)
      s.fp8Macs += u.macs;
    else if (u.macs &&
             (u.dynamicInt8 || (!u.inputs.empty() && u.inputs.front().grid)))
      s.int8Macs += u.macs;
    s.totalMacs += u.macs;
  }
  for (const Leftover &l : leftovers) {
    switch (l.kind) {
    case LeftoverKind::Requantize:
      ++s.requantizes;
      break;
    case LeftoverKind::Reformat:
      ++s.reformats;
      break;
    case LeftoverKind::FloatIsland:
      ++s.floatIslands;
      for (const Node *n : l.nodes)
        if (!carriesIntegers(*n))
          ++s.floatOps;
      s.totalMacs += l.floatMacs;
      break;
    case LeftoverKind::UnfusedQuantize:
    case LeftoverKind::UnfusedDequantize:
      ++s.unfusedQdq;
      break;
    }
  }
  return s;
}
