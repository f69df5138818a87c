//===- CommonSubexpressionElimination.cpp - Merge identical nodes (cse) ---===//
//
// Exact: a node with the same op, operands, attributes and result types as
// an earlier node is replaced by it.
//
//   %a = onnx.Relu(%x)            %a = onnx.Relu(%x)
//   %b = onnx.Relu(%x)      =>    %c = onnx.Add(%a, %a)
//   %c = onnx.Add(%a, %b)
//
// Q/DQ parameter records (param_names, param_ranks: the ONNX names their
// scale and zero point had) do not keep two Qs apart: two Qs of one tensor
// onto one grid are one Q, whatever their initializers were called.
//
// Not merged: q.dequantize (a node unit needs its own DQ per consumer, see
// ensure-unique-dq), constants (large payload compares; dce handles unused
// ones), random ops, and nodes whose results are graph outputs or are read
// by name from a subgraph.
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/Passes/QdqUtils.h"

#include "llvm/ADT/Hashing.h"

#include <unordered_map>

using namespace qopt;

static bool isMergeable(const Node &n) {
  if (n.getNumResults() == 0 || n.isa(ops::QDequantize) || n.isa(ops::Constant))
    return false;
  llvm::StringRef type = n.getOpType();
  if (type.startswith("Random") || type == "Multinomial" ||
      type == "Bernoulli" || type == "Dropout")
    return false;
  // A graph output keeps its producer; a result a subgraph reads by name
  // must keep its name.
  for (const Value *r : n.getResults())
    if (r->isGraphOutput() || r->isCaptured())
      return false;
  return true;
}

/// Attributes that say what a node computes (not a parameter record).
static std::vector<const NamedAttribute *> computingAttrs(const Node &n) {
  std::vector<const NamedAttribute *> attrs;
  for (const NamedAttribute &a : n.getAttrs())
    if (!isQdqParamRecordAttr(a.name))
      attrs.push_back(&a);
  return attrs;
}

static bool sameNode(const Node &a, const Node &b) {
  if (a.getOp() != b.getOp() || a.getNumOperands() != b.getNumOperands() ||
      a.getNumResults() != b.getNumResults())
    return false;
  std::vector<const NamedAttribute *> attrsA = computingAttrs(a),
                                      attrsB = computingAttrs(b);
  if (attrsA.size() != attrsB.size())
    return false;
  for (unsigned i = 0; i < a.getNumOperands(); ++i)
    if (a.getOperand(i) != b.getOperand(i))
      return false;
  for (unsigned i = 0; i < a.getNumResults(); ++i)
    if (a.getResult(i)->getType() != b.getResult(i)->getType() ||
        a.getResult(i)->isAbsent() != b.getResult(i)->isAbsent())
      return false;
  for (size_t i = 0; i < attrsA.size(); ++i)
    if (attrsA[i]->name != attrsB[i]->name ||
        attrsA[i]->value != attrsB[i]->value)
      return false;
  return true;
}

/// Hashes everything sameNode compares, so that nodes differing only in an
/// attribute value or a result type land in different buckets (hashing the
/// attribute names alone made N LeakyRelus with N alphas quadratic).
static size_t hashNode(const Node &n) {
  llvm::hash_code h = llvm::hash_value(n.getOp());
  for (const Value *v : n.getOperands())
    h = llvm::hash_combine(h, v);
  for (const Value *r : n.getResults()) // types are uniqued in the Context
    h = llvm::hash_combine(h, r->getType(), r->isAbsent());
  for (const NamedAttribute *a : computingAttrs(n))
    h = llvm::hash_combine(h, hash_value(*a));
  return h;
}

PreservedAnalyses CommonSubexpressionEliminationPass::run(Graph &g,
                                                          AnalysisManager &) {
  std::unordered_multimap<size_t, Node *> seen;
  bool changed = false;
  for (auto it = g.getNodes().begin(); it != g.getNodes().end();) {
    Node &n = *it++;
    if (!isMergeable(n))
      continue;
    size_t h = hashNode(n);
    Node *existing = nullptr;
    auto range = seen.equal_range(h);
    for (auto e = range.first; e != range.second && !existing; ++e)
      if (sameNode(*e->second, n))
        existing = e->second;
    if (!existing) {
      seen.emplace(h, &n);
      continue;
    }
    for (unsigned i = 0; i < n.getNumResults(); ++i)
      n.getResult(i)->replaceAllUsesWith(existing->getResult(i));
    g.eraseNode(&n);
    changed = true;
  }
  return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
