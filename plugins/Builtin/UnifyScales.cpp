//===- UnifyScales.cpp - One grid around Concat, Split, MaxPool, ... -----===//
//
// Lossy, reported. Backends run Concat, Split, Slice, MaxPool, Resize
// (nearest), Pad and the other data-movement ops of the op table (Reshape,
// Transpose, ...) on int8 only when their inputs and outputs share one
// grid; otherwise each differing Q around them is a requantize (TensorRT's
// "Scale" layers, ONNX Runtime's float islands). This pass gives each such
// group of tensors one grid:
//
//   %a = q.quantize(%x) : !quant.uniform<i8:f32, 0.05>     (same, 0.2)
//   %b = q.quantize(%y) : !quant.uniform<i8:f32, 0.2>      (same, 0.2)
//   %da = q.dequantize(%a)                            =>   ...
//   %db = q.dequantize(%b)
//   %c = onnx.Concat(%da, %db)
//   %o = q.quantize(%c) : !quant.uniform<i8:f32, 0.1>      (same, 0.2)
//
// Groups are built with union-find over values:
//   - the data inputs and outputs of each op that carries stored integers
//     (QdqUtils' carriesIntegers: the table's DataMovement ops, MaxPool)
//     are one group, so chains such as Concat -> Reshape -> Q -> DQ ->
//     Concat become one group;
//   - a float input produced by q.dequantize joins the stored tensor it
//     reads (the Q that produced the input: `Q -> DQ -> Concat`, or after
//     sink-qdq `Q -> Concat` on int8), walking back through int8 data
//     movement; the walk stops at the first Q or q.requantize;
//   - an output joins the Qs that consume it: `Concat -> Q`, `Concat ->
//     DQ -> Q` (int8 Concat, then a requantize) and q.requantize, and
//     further along Q -> DQ -> Q chains (so that the groups are the same
//     before and after remove-redundant-qdq turns DQ -> Q into
//     q.requantize);
// A Q whose result also feeds other ops (a Conv) is one tensor: its change
// reaches them too, but it pulls nothing else in.
//
// Policies: `widest` (default) takes the union of the members' ranges
// (quant::representableRange), so nothing clips; a member whose range
// already covers the union is taken as it is (with symmetric zp 0 members
// that is the largest scale: scale = hi / 127 rather than max(|lo|, hi) /
// 127, which would grow the scale by 128/127 for no gain); otherwise
// symmetric members give scale = max(|lo|, hi) / qmax with zp 0, and other
// members an asymmetric grid over [min(lo, 0), max(hi, 0)] with zp chosen
// so that 0 is exact. `output` takes the grid of the Q at the group's exit
// (the consumer's grid: the output Qs that feed no further group member;
// when those disagree, the widest of them).
//
// Only per-tensor grids of one storage kind and expressed type are
// unified; a group with per-axis or mixed grids, or with a quantized tensor
// the pass cannot retype (a graph input, a constant, the result of an
// opaque op), is left alone with a note saying why. q.requantize nodes
// whose input and output end up on one grid are removed. Every retyped
// tensor is recorded in the cost report.
//
// backend=trt|ort|cpu (default<trt> passes trt): a lossy step must pay for
// itself. A group keeps its one grid only where that backend's fusion plan
// gets better: INT8 MACs up, or leftovers down with INT8 MACs not down,
// judged on a copy of the graph after the cleanup default<trt> runs next
// (remove-redundant-qdq<merge-requantize>, sink-qdq, remove-redundant-qdq,
// dce), since a group's gain often shows only once the DQ -> Q pairs it
// made equal are gone (YOLO's SPPF MaxPools). The declined groups are tried
// once more all together; those that still do not pay keep their grids,
// each with a note (ShuffleNetV2's channel-shuffle Slices under TensorRT). The
// group building repeats until nothing changes, at most max-iterations times
// (hitting the bound is noted).
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/Fusion/FusionPlan.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/CostReport.h"
#include "qopt/Passes/PassRegistry.h"
#include "qopt/Passes/QdqUtils.h"
#include "qopt/Support/Error.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <optional>
#include <set>

using namespace qopt;

static constexpr llvm::StringLiteral kUnifyScalesPass = "unify-scales";

llvm::Expected<UnifyScalesPass> UnifyScalesPass::parse(llvm::StringRef params) {
  UnifyScalesPass p;
  auto kv = parsePassParams(kUnifyScalesPass, params,
                            {"policy", "max-iterations", "backend"});
  if (!kv)
    return kv.takeError();
  if (kv->count("backend")) {
    auto backend = parseBackendParam(kUnifyScalesPass, (*kv)["backend"]);
    if (!backend)
      return backend.takeError();
    p.backend = *backend;
  }
  if (kv->count("policy")) {
    const std::string &v = (*kv)["policy"];
    if (v == "widest")
      p.policy = Policy::Widest;
    else if (v == "output")
      p.policy = Policy::Output;
    else
      return makeError("invalid policy '" + v +
                       "' for 'unify-scales'; expected widest or output");
  }
  if (kv->count("max-iterations")) {
    const std::string &v = (*kv)["max-iterations"];
    if (llvm::StringRef(v).getAsInteger(10, p.maxIterations) ||
        p.maxIterations == 0)
      return makeError("invalid max-iterations '" + v +
                       "' for 'unify-scales'; expected a positive integer");
  }
  return p;
}

void UnifyScalesPass::printPipeline(llvm::raw_ostream &os) const {
  os << kUnifyScalesPass
     << "<policy=" << (policy == Policy::Widest ? "widest" : "output")
     << ";max-iterations=" << maxIterations;
  if (!backend.empty())
    os << ";backend=" << backend;
  os << ">";
}

namespace {

/// Ops whose data inputs and outputs must share one grid: the op table's
/// data-movement ops and MaxPool (QdqUtils' carriesIntegers).
bool isGroupOp(const Node &n) { return carriesIntegers(n); }

llvm::SmallVector<unsigned, 4> dataOperands(const Node &n) {
  llvm::SmallVector<unsigned, 4> out;
  for (unsigned i : getDataOperands(n))
    if (i < n.getNumOperands() && n.getOperand(i))
      out.push_back(i);
  return out;
}

llvm::SmallVector<unsigned, 4> dataResults(const Node &n) {
  llvm::SmallVector<unsigned, 4> out;
  for (unsigned i = 0; i < n.getNumResults(); ++i)
    if (!n.getResult(i)->isAbsent() && isDataResult(n, i))
      out.push_back(i);
  return out;
}

std::string opLabel(const Node &n) { return describeNode(n); }

class GroupBuilder {
public:
  explicit GroupBuilder(Graph &g) : g(g) {}

  llvm::DenseMap<Value *, Value *> parent;
  /// Where each member sits, for the report ("Concat 'cat' input 2").
  llvm::DenseMap<Value *, std::string> detail;
  /// Members reached from an op's output (the consumers' Qs).
  llvm::DenseSet<Value *> outputSide;
  llvm::DenseSet<Value *> hasGroupOp;

  Value *find(Value *v) {
    auto it = parent.find(v);
    if (it == parent.end()) {
      parent[v] = v;
      return v;
    }
    Value *root = v;
    while (parent[root] != root)
      root = parent[root];
    while (parent[v] != root) {
      Value *next = parent[v];
      parent[v] = root;
      v = next;
    }
    return root;
  }
  void unite(Value *a, Value *b) {
    Value *ra = find(a), *rb = find(b);
    if (ra != rb)
      parent[ra] = rb;
  }
  void note(Value *v, std::string text) {
    if (!detail.count(v))
      detail[v] = std::move(text);
  }

  void build() {
    for (Node &n : g.getNodes()) {
      if (!isGroupOp(n))
        continue;
      std::string label = opLabel(n);
      Value *anchor = nullptr;
      auto ins = dataOperands(n);
      auto outs = dataResults(n);
      bool many = ins.size() > 1;
      for (unsigned i : ins) {
        Value *v = n.getOperand(i);
        std::string where =
            label + " input" + (many ? " " + std::to_string(i) : "");
        note(v, where);
        if (anchor)
          unite(anchor, v);
        anchor = v;
        walkInput(v, where);
      }
      bool manyOut = outs.size() > 1;
      for (unsigned i : outs) {
        Value *v = n.getResult(i);
        std::string where =
            label + " output" + (manyOut ? " " + std::to_string(i) : "");
        note(v, where);
        if (anchor)
          unite(anchor, v);
        anchor = v;
        walkOutput(v, where);
      }
      if (anchor)
        groupAnchors.push_back(anchor);
    }
    for (Value *a : groupAnchors)
      hasGroupOp.insert(find(a));
  }

  std::vector<Value *> groupAnchors;

private:
  /// Back from an input to the Q (or q.requantize) that stores it.
  void walkInput(Value *v, const std::string &where) {
    while (v) {
      Node *p = v->getDefiningNode();
      if (const QuantType *g = getStoredQuantType(v);
          g && !g->hasIntegerStorage())
        return; // a float8/float4 grid: not unified (isMinifloatQdq)
      if (!getStoredQuantType(v)) {
        if (!p || !p->isa(ops::QDequantize) || isMinifloatQdq(*p))
          return; // float input: nothing to unify
        Value *stored = p->getOperand(0);
        unite(v, stored);
        note(stored, where);
        v = stored;
        continue;
      }
      note(v, where);
      return; // Q, q.requantize, group op (which joins its own inputs), or a
              // tensor we cannot retype
    }
  }

  /// Forward from an output to the Qs that store it.
  void walkOutput(Value *v, const std::string &where) {
    std::vector<Value *> work{v};
    llvm::DenseSet<Value *> seen;
    while (!work.empty()) {
      Value *cur = work.back();
      work.pop_back();
      if (!seen.insert(cur).second)
        continue;
      for (auto [user, idx] : getUsers(cur)) {
        (void)idx;
        Value *next = nullptr;
        if (isMinifloatQdq(*user)) {
          // A float8/float4 grid is not unified: it ends the walk.
        } else if (user->isa(ops::QQuantize) || user->isa(ops::QRequantize)) {
          next = user->getResult();
          outputSide.insert(next);
        } else if (user->isa(ops::QDequantize)) {
          next = user->getResult();
        }
        if (!next)
          continue; // group ops reading `cur` join it themselves
        unite(cur, next);
        note(next,
             (outputSide.count(next) && cur != v ? "after " : "") + where);
        work.push_back(next);
      }
    }
  }

  Graph &g;
};

/// True when stored values of `v` reach (through DQ and int8 data
/// movement) another member Q / q.requantize or a group op.
bool feedsFurther(Value *v, const llvm::DenseSet<Value *> &members) {
  std::vector<Value *> work{v};
  llvm::DenseSet<Value *> seen;
  while (!work.empty()) {
    Value *cur = work.back();
    work.pop_back();
    if (!seen.insert(cur).second)
      continue;
    for (auto [user, idx] : getUsers(cur)) {
      (void)idx;
      if (isGroupOp(*user))
        return true;
      if (user->isa(ops::QQuantize) || user->isa(ops::QRequantize)) {
        if (members.count(user->getResult()))
          return true;
        continue;
      }
      if (user->isa(ops::QDequantize))
        work.push_back(user->getResult());
    }
  }
  return false;
}

bool isSymmetric(const QuantType *q) {
  return q->getZeroPoint() == 0 && isSignedIntegerKind(q->getStorageKind());
}

/// The widest grid over the members' ranges (see the file comment).
const QuantType *widestGrid(Context &ctx,
                            llvm::ArrayRef<const QuantType *> grids) {
  double lo = 0, hi = 0;
  bool first = true, allSymmetric = true;
  for (const QuantType *q : grids) {
    auto [l, h] = quant::representableRange(q);
    lo = first ? l : std::min(lo, l);
    hi = first ? h : std::max(hi, h);
    first = false;
    allSymmetric &= isSymmetric(q);
  }
  // A member that already covers the union is taken as it is; among
  // several, the finest.
  const QuantType *best = nullptr;
  for (const QuantType *q : grids) {
    auto [l, h] = quant::representableRange(q);
    if (l <= lo && h >= hi && (!best || q->getScale() < best->getScale()))
      best = q;
  }
  if (best)
    return best;
  const QuantType *like = grids.front();
  ElementKind storage = like->getStorageKind();
  auto [qmin, qmax] = getIntegerRange(storage);
  if (allSymmetric) {
    double scale = std::max(-lo, hi) / static_cast<double>(qmax);
    return withParams(ctx, like, storage, {static_cast<float>(scale)}, {0});
  }
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  double scale = (hi - lo) / static_cast<double>(qmax - qmin);
  float s = static_cast<float>(scale);
  int64_t zp = static_cast<int64_t>(std::nearbyint(qmin - lo / s));
  zp = std::max<int64_t>(qmin, std::min<int64_t>(qmax, zp));
  return withParams(ctx, like, storage, {s}, {zp});
}

std::string gridText(const QuantType *q) { return quant::describeParams(q); }

/// A weighted op reading `v` (through its DQ) whose bias is int32 through a
/// DQ: the QLinear rule wants the bias on s_x * s_w, which a new input
/// scale breaks for backends that take the int32 bias as it is. The float
/// semantics are unchanged, so this is a note, not a rewrite.
void noteInt32Bias(CostReport &report, const Value &v) {
  for (auto [dq, i] : getUsers(&v)) {
    (void)i;
    if (!dq->isa(ops::QDequantize))
      continue;
    for (auto [user, idx] : getUsers(dq->getResult())) {
      if (idx != 0 || !hasTrait(*user, OpTrait::Weighted) ||
          user->getNumOperands() < 3 || !user->getOperand(2))
        continue;
      Node *biasDq = getProducer(user->getOperand(2), ops::QDequantize);
      const QuantType *bq =
          biasDq ? getStoredQuantType(biasDq->getOperand(0)) : nullptr;
      if (bq && bq->getStorageKind() == ElementKind::I32)
        report.recordNote(kUnifyScalesPass,
                          "%" + v.getName().str() + " feeds " + opLabel(*user) +
                              ", whose int32 bias was made for the "
                              "old input scale (s_x * s_w)");
    }
  }
}

} // namespace

/// The backend's fusion plan of `g` after the steps default<trt> runs
/// after this pass to drop what one grid made redundant (DQ -> Q pairs that
/// cancel, requantizes on one grid), on a copy: a group's worth shows only
/// after them (YOLO's SPPF MaxPools: one grid, then the DQ -> Q between
/// them go).
static PlanScore scoreAfterCleanup(const Graph &g, const BackendRules &rules) {
  std::unique_ptr<Graph> copy = g.clone();
  AnalysisManager scratch; // its cost report is thrown away
  RemoveRedundantQdqPass merge;
  merge.mergeRequantize = true;
  merge.run(*copy, scratch);
  SinkQdqPass().run(*copy, scratch);
  RemoveRedundantQdqPass().run(*copy, scratch);
  DeadCodeEliminationPass().run(*copy, scratch);
  return scorePlan(*copy, rules);
}

/// One group's new grid: the members retyped (their old types kept to put
/// back) and the cost report's entries, recorded once the group is kept.
struct GroupChange {
  std::string where;
  size_t members = 0;
  std::vector<std::pair<Value *, const TensorType *>> oldTypes;
  struct Regrid {
    Value *v;
    const QuantType *old, *now;
    std::string detail;
  };
  std::vector<Regrid> regrids;
};

static void undoGroup(Graph &g, const GroupChange &c) {
  PatternRewriter r(g);
  for (auto &[v, type] : llvm::reverse(c.oldTypes))
    r.setType(*v, type);
}

static void recordGroup(CostReport &report, const GroupChange &c) {
  for (const GroupChange::Regrid &e : c.regrids) {
    report.recordRegrid(kUnifyScalesPass, *e.v, e.old, e.now, e.detail);
    noteInt32Bias(report, *e.v);
  }
}

/// One round: builds the groups and retypes them; true when it changed
/// anything. With `rules`, a group keeps its new grid only where the
/// backend's fusion plan gets better (scoreAfterCleanup); the declined
/// ones are tried once more all together, then noted.
static bool unifyOnce(Graph &g, AnalysisManager &am,
                      UnifyScalesPass::Policy policy, const BackendRules *rules,
                      std::set<std::string> &declinedNotes) {
  CostReport &report = am.getCostReport();
  GroupBuilder gb(g);
  gb.build();

  // Members per group, in graph order (inputs, then node results).
  llvm::MapVector<Value *, std::vector<Value *>> groups;
  auto consider = [&](Value *v) {
    if (!gb.parent.count(v))
      return;
    Value *root = gb.find(v);
    if (gb.hasGroupOp.count(root))
      groups[root].push_back(v);
  };
  for (Value *in : g.getInputs())
    consider(in);
  for (Node &n : g.getNodes())
    for (Value *res : n.getResults())
      consider(res);

  bool changed = false;
  Context &ctx = g.getContext();
  std::optional<PlanScore> score;
  if (rules)
    score = scoreAfterCleanup(g, *rules);
  std::vector<GroupChange> declined;
  for (auto &[root, values] : groups) {
    std::vector<Value *> members; // quantized values to retype
    std::string why;
    for (Value *v : values) {
      const QuantType *q = getStoredQuantType(v);
      if (!q)
        continue;
      Node *p = v->getDefiningNode();
      bool retypeable = p && (p->isa(ops::QQuantize) ||
                              p->isa(ops::QRequantize) || isGroupOp(*p));
      if (!retypeable && why.empty())
        why = "%" + v->getName().str() + " (" +
              (p ? p->getOp().str() + " result"
                 : std::string(v->isGraphInput() ? "graph input" : "value")) +
              ") cannot be retyped";
      members.push_back(v);
    }
    if (members.empty())
      continue;
    const QuantType *q0 = getStoredQuantType(members.front());
    bool allSame = llvm::all_of(
        members, [&](Value *v) { return getStoredQuantType(v) == q0; });
    if (allSame)
      continue;
    for (Value *v : members) {
      const QuantType *q = getStoredQuantType(v);
      if (!why.empty())
        break;
      if (q->isPerAxis())
        why = "%" + v->getName().str() + " is per axis (" + gridText(q) + ")";
      else if (q->getStorageKind() != q0->getStorageKind() ||
               q->getExpressedKind() != q0->getExpressedKind())
        why = "mixed storage or expressed types: %" +
              members.front()->getName().str() + " is " + gridText(q0) + ", %" +
              v->getName().str() + " is " + gridText(q);
    }
    std::string where = gb.detail.count(members.front())
                            ? gb.detail[members.front()]
                            : std::string("group");
    if (!why.empty()) {
      report.recordNote(kUnifyScalesPass, "group of " + where + " (" +
                                              std::to_string(members.size()) +
                                              " tensors) left alone: " + why);
      continue;
    }
    std::vector<const QuantType *> grids;
    for (Value *v : members)
      grids.push_back(getStoredQuantType(v));
    const QuantType *target = nullptr;
    if (policy == UnifyScalesPass::Policy::Output) {
      llvm::DenseSet<Value *> memberSet(members.begin(), members.end());
      std::vector<const QuantType *> exits;
      for (Value *v : members)
        if (gb.outputSide.count(v) && !feedsFurther(v, memberSet))
          exits.push_back(getStoredQuantType(v));
      if (exits.empty()) {
        report.recordNote(kUnifyScalesPass,
                          "group of " + where +
                              ": no Q at its output; policy output "
                              "falls back to widest");
        target = widestGrid(ctx, grids);
      } else {
        target = widestGrid(ctx, exits);
        bool disagree = llvm::any_of(
            exits, [&](const QuantType *q) { return q != exits.front(); });
        if (disagree)
          report.recordNote(kUnifyScalesPass,
                            "group of " + where +
                                ": its output Qs disagree; took the "
                                "widest of them, " +
                                gridText(target));
      }
    } else {
      target = widestGrid(ctx, grids);
    }
    GroupChange c;
    c.where = where;
    c.members = members.size();
    for (Value *v : members) {
      const QuantType *old = getStoredQuantType(v);
      if (old == target)
        continue;
      PatternRewriter r(g);
      c.oldTypes.push_back({v, v->getType()});
      r.setType(*v, withElement(v->getType(), target));
      c.regrids.push_back(
          {v, old, target, gb.detail.count(v) ? gb.detail[v] : where});
    }
    if (c.oldTypes.empty())
      continue;
    if (score) {
      PlanScore now = scoreAfterCleanup(g, *rules);
      if (!now.improvesOn(*score)) {
        undoGroup(g, c);
        declined.push_back(std::move(c));
        continue;
      }
      score = now;
    }
    recordGroup(report, c);
    changed = true;
  }
  // Groups that pay only together: all the declined ones at once.
  if (!declined.empty()) {
    PatternRewriter r(g);
    for (const GroupChange &c : declined)
      for (const GroupChange::Regrid &e : c.regrids)
        r.setType(*e.v, withElement(e.v->getType(), e.now));
    PlanScore now = scoreAfterCleanup(g, *rules);
    if (now.improvesOn(*score)) {
      for (const GroupChange &c : declined)
        recordGroup(report, c);
      changed = true;
    } else {
      for (const GroupChange &c : llvm::reverse(declined))
        undoGroup(g, c);
      for (const GroupChange &c : declined) {
        std::string note =
            "group of " + c.where + " (" + std::to_string(c.members) +
            " tensors) kept its grids: one grid leaves " + rules->title.str() +
            "'s fusion plan no better (INT8 MACs and "
            "leftovers, after remove-redundant-qdq)";
        if (declinedNotes.insert(note).second)
          report.recordNote(kUnifyScalesPass, note);
      }
    }
  }

  // q.requantize whose grids now agree.
  std::vector<Node *> dead;
  for (Node &n : g.getNodes())
    if (n.isa(ops::QRequantize) &&
        n.getOperand(0)->getType() == n.getResult()->getType())
      dead.push_back(&n);
  for (Node *n : dead) {
    PatternRewriter r(g);
    r.replaceNode(*n, {n->getOperand(0)});
    changed = true;
  }
  return changed;
}

PreservedAnalyses UnifyScalesPass::run(Graph &g, AnalysisManager &am) {
  const BackendRules *rules =
      backend.empty() ? nullptr : lookupBackendRules(backend);
  bool changed = false;
  unsigned it = 0;
  std::set<std::string> declinedNotes; // each once, whatever the rounds
  for (; it < maxIterations; ++it) {
    if (!unifyOnce(g, am, policy, rules, declinedNotes))
      break;
    changed = true;
  }
  if (it == maxIterations)
    am.getCostReport().recordNote(
        kUnifyScalesPass,
        "stopped after max-iterations=" + std::to_string(maxIterations) +
            " rounds while grids still changed");
  return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
