//===- FloatRegions.cpp - Float data movement between quantized ops -------===//
//
// Union-find over the data operands and results of every float data
// movement op, then one look at each region's members and the nodes that
// read them (qopt/Passes/FloatRegions.h).
//
//===----------------------------------------------------------------------===//

#include "qopt/Passes/FloatRegions.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"
#include "qopt/Passes/QdqUtils.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/STLExtras.h"

using namespace qopt;

bool qopt::joinsFloatRegion(const Node &n) {
  if (n.getDialect() == "q" || !carriesIntegers(n))
    return false;
  for (unsigned i : getDataOperands(n))
    if (!n.getOperand(i) || getStoredQuantType(n.getOperand(i)))
      return false;
  return true;
}

/// The entries, exits and grid of `region`, and why it is refused.
static void inspect(FloatRegion &region) {
  llvm::DenseSet<const Value *> members(region.members.begin(),
                                        region.members.end());
  auto refuse = [&](std::string why) {
    if (region.refused.empty())
      region.refused = std::move(why);
  };
  for (Value *v : region.members) {
    if (v->isGraphInput() || v->isGraphOutput() || isConstantValue(v)) {
      refuse("'" + v->getName().str() +
             "' is a graph input, output or constant");
      continue;
    }
    const Node *def = v->getDefiningNode();
    if (!joinsFloatRegion(*def) && !def->isa(ops::QDequantize))
      region.entries.push_back(v);
    for (auto [user, index] : getUsers(v)) {
      if (joinsFloatRegion(*user))
        continue;
      if (user->isa(ops::QQuantize)) {
        region.exitQs.push_back(user);
        const QuantType *q = getStoredQuantType(user->getResult());
        if (q && !q->isPerAxis() &&
            (!region.grid || q->getScale() > region.grid->getScale())) {
          region.grid = q;
          region.gridFrom = user;
        }
        continue;
      }
      if (user->isa(ops::Add)) {
        const Value *sum = user->getResult();
        if (members.count(sum) || (sum->hasUses() && !sum->isGraphOutput() &&
                                   allUsersAre(sum, ops::QQuantize)))
          continue;
      }
      refuse(describeNode(*user) + " reads '" + v->getName().str() +
             "' in float");
    }
  }
  if (!region.grid)
    refuse("no per-tensor Q reads it");
  if (region.entries.empty())
    refuse("every tensor entering it is quantized already");
}

std::vector<FloatRegion> qopt::findFloatRegions(Graph &g) {
  llvm::EquivalenceClasses<Value *> classes;
  for (Node &n : g.getNodes()) {
    if (!joinsFloatRegion(n))
      continue;
    Value *first = nullptr;
    auto join = [&](Value *v) {
      if (!v || v->isAbsent())
        return;
      classes.insert(v);
      if (first)
        classes.unionSets(first, v);
      else
        first = v;
    };
    for (unsigned i : getDataOperands(n))
      join(n.getOperand(i));
    for (unsigned r = 0; r < n.getNumResults(); ++r)
      if (isDataResult(n, r))
        join(n.getResult(r));
  }
  std::vector<FloatRegion> regions;
  llvm::DenseMap<Value *, size_t> regionOf;
  llvm::DenseSet<Value *> seen;
  auto visit = [&](Value *v) {
    if (!v || classes.findValue(v) == classes.end() || !seen.insert(v).second)
      return;
    Value *leader = classes.getLeaderValue(v);
    auto [it, inserted] = regionOf.try_emplace(leader, regions.size());
    if (inserted)
      regions.emplace_back();
    regions[it->second].members.push_back(v);
  };
  for (Value *in : g.getInputs())
    visit(in);
  for (Node &n : g.getNodes()) {
    for (Value *v : n.getOperands())
      visit(v);
    for (Value *v : n.getResults())
      visit(v);
  }
  for (FloatRegion &region : regions)
    inspect(region);
  return regions;
}
