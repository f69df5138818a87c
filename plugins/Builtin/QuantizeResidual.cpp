//===- QuantizeResidual.cpp - Residual Adds as one INT8 unit ------------===//
//
// Lossy, reported. TensorRT fuses Conv (+ activation) + residual Add into
// one INT8 kernel when the Add reads the conv's output directly and its
// other input (the skip) is quantized; ONNX Runtime forms QLinearAdd only
// when both inputs come from DQ. QAT exporters often leave the skip in
// float (only one branch has Q/DQ) or put Q/DQ between the conv's
// activation and the Add. For an onnx.Add of two inputs of one shape, one
// of them (the branch) coming from a Weighted op (Conv, Gemm, ...),
// possibly through an activation (Relu, Clip, LeakyRelu, SiLU =
// Mul(x, Sigmoid(x))) and through Q/DQ pairs:
//
// 1. A skip that is a float tensor on no grid (not a DQ result, not data
//    movement of one) gets Q/DQ with the grid of the Add's output Q (Add ->
//    Q, or Add -> Relu/Clip/LeakyRelu -> Q when that grid holds negative
//    values), else the grid of the branch's Q/DQ nearest the Add; with
//    neither, the Add is left alone. The new Q is kept only where the
//    backend's fusion plan (TensorRT's rules; ONNX Runtime's with
//    keep-branch-qdq) fuses it: where the skip comes from a float op that
//    cannot write int8, the Q would be one more float -> int8 reformat for
//    one float Add less, so it is taken back, the cost report says why,
//    and the Add's branch is left as it is (step 2 is skipped).
//
//      %d = q.dequantize(%cq)                %d = q.dequantize(%cq)
//      %a = onnx.Add(%d, %skip)       =>     %sq = q.quantize(%skip)
//      %o = q.quantize(%a)                   %sd = q.dequantize(%sq)
//                                            %a = onnx.Add(%d, %sd)
//
// 2. When the Add's output is quantized, Q/DQ pairs between the branch's
//    activation (or the Weighted op when there is none) and the Add are
//    bypassed: the Add reads the float activation, and the unit
//    requantizes once at its output. Pairs left without users are erased.
//    A pair that other nodes read too (the block's output Q/DQ feeding the
//    next block and the Add) stays: bypassing it only for the Add would
//    make the unit write float and int8.
//
//      %c = onnx.Conv(...)                   %c = onnx.Conv(...)
//      %cq = q.quantize(%c)           =>     %a = onnx.Add(%c, %sd)
//      %d = q.dequantize(%cq)                %o = q.quantize(%a)
//      %a = onnx.Add(%d, %sd)
//      %o = q.quantize(%a)
//
//    Q/DQ pairs between the Weighted op and its activation (inside SiLU
//    too) are bypassed the same way for the activation's own reads, so
//    Conv + activation + Add is one unit with one requantize:
//
//      %c = onnx.Conv(...)                   %c = onnx.Conv(...)
//      %cq = q.quantize(%c)                  %s = onnx.Sigmoid(%c)
//      %d = q.dequantize(%cq)         =>     %m = onnx.Mul(%c, %s)
//      %s = onnx.Sigmoid(%d)                 %a = onnx.Add(%m, %sd)
//      %m = onnx.Mul(%d, %s)                 %o = q.quantize(%a)
//      %a = onnx.Add(%m, %sd)
//      %o = q.quantize(%a)
//
//    With the option keep-branch-qdq (for backends that run the branch as
//    QLinearConv + QLinearAdd, ONNX Runtime's CPU provider), step 2 is
//    skipped.
//
// Both are recorded in the cost report as notes: the new grid with the
// error of quantizing float values (0.5 LSB within its range, clipping
// outside), and each bypassed Q/DQ with its grid.
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/Fusion/FusionPlan.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/CostReport.h"
#include "qopt/Passes/PassRegistry.h"
#include "qopt/Passes/QdqUtils.h"
#include "qopt/Passes/ScaleAnalysis.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

using namespace qopt;

static constexpr llvm::StringLiteral kQuantizeResidualPass =
    "quantize-residual";

llvm::Expected<QuantizeResidualPass>
QuantizeResidualPass::parse(llvm::StringRef params) {
  QuantizeResidualPass pass;
  auto p = parsePassParams(kQuantizeResidualPass, params, {"keep-branch-qdq"});
  if (!p)
    return p.takeError();
  for (auto &[key, value] : *p) {
    auto flag = parseBoolParam(kQuantizeResidualPass, key, value);
    if (!flag)
      return flag.takeError();
    pass.keepBranchQdq = *flag;
  }
  return pass;
}

void QuantizeResidualPass::printPipeline(llvm::raw_ostream &os) const {
  os << kQuantizeResidualPass << (keepBranchQdq ? "<keep-branch-qdq>" : "");
}

namespace {

/// The float value a Q/DQ pair was applied to: DQ(Q(x)) -> x, repeatedly.
/// `pairs` collects the (Q, DQ) nodes passed, nearest first.
Value *stripQdq(Value *v, std::vector<std::pair<Node *, Node *>> *pairs) {
  while (v) {
    Node *dq = getProducer(v, ops::QDequantize);
    if (!dq)
      return v;
    Node *q = getProducer(dq->getOperand(0), ops::QQuantize);
    if (!q)
      return v;
    if (pairs)
      pairs->push_back({q, dq});
    v = q->getOperand(0);
  }
  return v;
}

bool isSimpleActivation(const Node &n) {
  return n.isa(ops::Relu) || n.isa(ops::Clip) || n.isa(ops::LeakyRelu);
}

struct Branch {
  Node *weighted = nullptr;
  /// The activation node (Relu, Clip, LeakyRelu, or SiLU's Mul), if any.
  Node *activation = nullptr;
  /// Q/DQ pairs between the activation (or the weighted op) and the Add,
  /// nearest the Add first.
  std::vector<std::pair<Node *, Node *>> pairs;
  /// Q/DQ pairs between the weighted op and the activation (and inside
  /// SiLU), read by `activationNodes`.
  std::vector<std::pair<Node *, Node *>> innerPairs;
  /// The activation's nodes (Relu/Clip/LeakyRelu, or SiLU's Sigmoid and
  /// Mul).
  llvm::SmallVector<Node *, 2> activationNodes;
  /// Every Q on the path, nearest the Add first (for the grid to copy).
  std::vector<Node *> qs;
};

/// The branch feeding Add operand `v`, when it comes from a Weighted op.
std::optional<Branch> matchBranch(Value *v) {
  Branch b;
  Value *x = stripQdq(v, &b.pairs);
  for (auto &p : b.pairs)
    b.qs.push_back(p.first);
  Node *n = x->getDefiningNode();
  if (!n)
    return std::nullopt;
  if (isSimpleActivation(*n)) {
    b.activation = n;
    b.activationNodes.push_back(n);
    x = stripQdq(n->getOperand(0), &b.innerPairs);
    for (auto &p : b.innerPairs)
      b.qs.push_back(p.first);
    n = x->getDefiningNode();
  } else if (n->isa(ops::Mul) && n->getNumOperands() == 2) {
    // SiLU: Mul(x, Sigmoid(x)), either order, Q/DQ anywhere.
    for (unsigned s = 0; s < 2 && !b.activation; ++s) {
      std::vector<std::pair<Node *, Node *>> sigPairs, aPairs, xPairs;
      Value *sig = stripQdq(n->getOperand(s), &sigPairs);
      Node *sn = sig->getDefiningNode();
      if (!sn || !sn->isa(ops::Sigmoid))
        continue;
      Value *a = stripQdq(sn->getOperand(0), &aPairs);
      Value *other = stripQdq(n->getOperand(1 - s), &xPairs);
      if (a != other)
        continue;
      b.activation = n;
      b.activationNodes = {sn, n};
      for (auto &p : xPairs)
        b.qs.push_back(p.first);
      // The Sigmoid's input and the Mul's x often share their Q/DQ.
      for (auto *pairs : {&xPairs, &aPairs, &sigPairs})
        for (auto &pair : *pairs)
          if (!llvm::is_contained(b.innerPairs, pair))
            b.innerPairs.push_back(pair);
      x = a;
    }
    if (!b.activation)
      return std::nullopt;
    n = x->getDefiningNode();
  }
  if (!n || !hasTrait(*n, OpTrait::Weighted))
    return std::nullopt;
  b.weighted = n;
  return b;
}

/// The Q storing the Add's output: Add -> Q, or Add -> activation -> Q
/// (`throughActivation` set). Null when the output is not quantized.
Node *outputQuantize(Node &add, bool &throughActivation) {
  throughActivation = false;
  Value *out = add.getResult();
  for (auto [user, idx] : getUsers(out)) {
    (void)idx;
    if (user->isa(ops::QQuantize))
      return user;
  }
  if (out->getNumUses() == 1 && !out->isGraphOutput()) {
    Node *act = out->getUses().front().user;
    if (act && isSimpleActivation(*act) && act->getOperand(0) == out)
      for (auto [user, idx] : getUsers(act->getResult())) {
        (void)idx;
        if (user->isa(ops::QQuantize)) {
          throughActivation = true;
          return user;
        }
      }
  }
  return nullptr;
}

bool sameShape(const TensorType *a, const TensorType *b) {
  if (!a->hasRank() || !b->hasRank() || !a->hasStaticShape() ||
      !b->hasStaticShape())
    return false;
  return a->getShape() == b->getShape();
}

std::string label(const Node &n) { return describeNode(n); }

/// Makes the activation read the weighted op's float output instead of a
/// Q/DQ of it (step 2 of the file comment); the pairs nothing else reads
/// are erased. True when anything changed.
bool bypassInnerPairs(PatternRewriter &r, CostReport &report, const Branch &b,
                      llvm::DenseSet<Node *> &erased) {
  bool changed = false;
  for (auto [q, dq] : b.innerPairs) {
    if (erased.count(q) || erased.count(dq))
      continue; // bypassed for another Add reading the same branch
    Value *from = dq->getResult();
    Value *to = q->getOperand(0);
    bool bypassed = false;
    for (auto [user, idx] : getUsers(from)) {
      if (!llvm::is_contained(b.activationNodes, user))
        continue;
      user->setOperand(idx, to);
      r.notifyModified(*user);
      bypassed = true;
    }
    if (!bypassed)
      continue;
    changed = true;
    report.recordNote(
        kQuantizeResidualPass,
        label(*b.activationNodes.back()) + " reads %" + to->getName().str() +
            " in float: bypassed Q/DQ " + label(*q) + " (" +
            quant::describeParams(getStoredQuantType(q->getResult())) +
            ") inside the unit of " + label(*b.weighted));
    if (!from->hasUses()) {
      erased.insert(dq);
      r.eraseNode(*dq);
    }
    if (!q->getResult()->hasUses()) {
      erased.insert(q);
      r.eraseNode(*q);
    }
  }
  return changed;
}

} // namespace

PreservedAnalyses QuantizeResidualPass::run(Graph &g, AnalysisManager &am) {
  CostReport &report = am.getCostReport();
  auto &scales = am.getResult<ScaleAnalysis>(g);

  struct Work {
    Node *add;
    unsigned branchIdx;
    Branch branch;
    /// The Q on the Add's output before this pass added any (a skip Q/DQ
    /// added for a later Add reads this Add's output too).
    Node *outQ = nullptr;
  };
  std::vector<Work> work;
  for (Node &n : g.getNodes()) {
    if (!n.isa(ops::Add) || n.getNumOperands() != 2 || !n.getOperand(0) ||
        !n.getOperand(1))
      continue;
    if (!sameShape(n.getOperand(0)->getType(), n.getOperand(1)->getType()))
      continue;
    for (unsigned i = 0; i < 2; ++i) {
      Value *skip = n.getOperand(1 - i);
      // The skip must be quantized or quantizable (a float tensor).
      if (!isFloatKind(skip->getType()->getStorageKind()))
        continue;
      auto b = matchBranch(n.getOperand(i));
      if (!b)
        continue;
      work.push_back({&n, i, std::move(*b)});
      break;
    }
  }

  bool changed = false;
  PatternRewriter r(g);
  // Nodes erased by earlier Adds (two Adds may read one branch).
  llvm::DenseSet<Node *> erased;
  // Adds whose skip stays in float: no unit can take them, so their branch
  // keeps its Q/DQ (step 2 would only add a float output to the conv).
  llvm::DenseSet<Node *> floatSkip;

  // 1. The skip on a grid.
  struct NewSkipQdq {
    Node *add;
    unsigned operand;
    Value *skip;
    Node *q, *dq;
    std::string note;
    /// The nodes whose leftovers the new Q/DQ can change: the Add, its
    /// branch, the skip back to the op that computes it.
    llvm::SmallPtrSet<const Node *, 16> around;
  };
  const BackendRules *rules = lookupBackendRules(keepBranchQdq ? "ort" : "trt");
  std::optional<FusionPlan> before;
  std::vector<NewSkipQdq> added;
  for (Work &w : work) {
    Node &add = *w.add;
    Value *skip = add.getOperand(1 - w.branchIdx);
    bool throughAct = false;
    Node *outQ = outputQuantize(add, throughAct);
    w.outQ = outQ;
    const QuantType *outGrid =
        outQ ? getStoredQuantType(outQ->getResult()) : nullptr;
    bool skipOnGrid = getProducer(skip, ops::QDequantize) ||
                      getStoredQuantType(skip) || scales.lookup(skip);
    if (skipOnGrid)
      continue;
    const QuantType *grid = nullptr;
    std::string from;
    if (outGrid && !outGrid->isPerAxis() &&
        (!throughAct || quant::representableRange(outGrid).first < 0)) {
      grid = outGrid;
      from = "the grid of the Add's output Q " + label(*outQ);
    } else {
      for (Node *q : w.branch.qs) {
        const QuantType *bq = getStoredQuantType(q->getResult());
        if (bq && !bq->isPerAxis()) {
          grid = bq;
          from = "the grid of the branch's Q " + label(*q);
          break;
        }
      }
    }
    if (!grid) {
      report.recordNote(kQuantizeResidualPass,
                        label(add) + ": skip input %" + skip->getName().str() +
                            " left in float: no per-tensor grid at "
                            "the Add's output or on its branch");
      floatSkip.insert(&add);
      continue;
    }
    if (!before)
      before = computeFusionPlan(g, *rules);
    llvm::SmallPtrSet<const Node *, 16> around;
    around.insert(&add);
    for (const Node *n : {w.branch.weighted, w.branch.activation})
      if (n)
        around.insert(n);
    around.insert(w.branch.activationNodes.begin(),
                  w.branch.activationNodes.end());
    for (auto *pairs : {&w.branch.pairs, &w.branch.innerPairs})
      for (auto [q, dq] : *pairs) {
        around.insert(q);
        around.insert(dq);
      }
    for (Node *n = skip->getDefiningNode(); n;) {
      around.insert(n);
      llvm::SmallVector<unsigned, 4> data = getDataOperands(*n);
      if (!hasTrait(*n, OpTrait::DataMovement) || data.size() != 1)
        break;
      n = n->getOperand(data.front())->getDefiningNode();
    }
    r.setRoot(&add);
    r.setInsertionPoint(&add);
    std::string base = skip->getName().str() + "_residual";
    Node *q = createQuantize(r, skip, grid, nullptr, base + "_Q");
    Node *dq = createDequantize(r, q->getResult(), nullptr, base + "_DQ");
    add.setOperand(1 - w.branchIdx, dq->getResult());
    r.notifyModified(add);
    auto [lo, hi] = quant::representableRange(grid);
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "%" << skip->getName() << ": new Q/DQ on the skip input of "
       << label(add) << ", " << quant::describeParams(grid) << " (" << from
       << "), max error 0.5 LSB within [" << llvm::format("%g", lo) << ", "
       << llvm::format("%g", hi) << "], clipped outside";
    around.insert(q);
    around.insert(dq);
    added.push_back({&add, 1 - w.branchIdx, skip, q, dq, os.str(), around});
  }
  // A new skip Q/DQ is kept only where the backend's fusion plan gets
  // better around the Add: fewer leftovers touch the Add, its branch and
  // the skip's producers than before. Where the skip comes from a float op
  // that cannot write int8, the Q is one more reformat for one float Add
  // less, and the Q/DQ is taken back.
  if (!added.empty()) {
    // The leftovers touching a set of nodes, through an index of each
    // plan's leftovers by node (candidates look at ~16 nodes each, not at
    // every leftover); the first one in plan order is the example.
    using LeftoverIndex = llvm::DenseMap<const Node *, std::vector<unsigned>>;
    auto indexLeftovers = [](const FusionPlan &plan) {
      LeftoverIndex index;
      for (unsigned i = 0; i < plan.leftovers.size(); ++i)
        for (const Node *n : plan.leftovers[i].nodes)
          index[n].push_back(i);
      return index;
    };
    auto leftoversAround = [](const LeftoverIndex &index,
                              const llvm::SmallPtrSetImpl<const Node *> &nodes,
                              unsigned *first) {
      std::set<unsigned> touched;
      for (const Node *n : nodes) {
        auto it = index.find(n);
        if (it != index.end())
          touched.insert(it->second.begin(), it->second.end());
      }
      if (first && !touched.empty())
        *first = *touched.begin();
      return static_cast<unsigned>(touched.size());
    };
    LeftoverIndex beforeIndex = indexLeftovers(*before);
    std::vector<unsigned> was;
    for (const NewSkipQdq &a : added)
      was.push_back(leftoversAround(beforeIndex, a.around, nullptr));
    // Taking one back changes the plan around the others: decide again
    // until every kept one still helps.
    std::vector<bool> kept(added.size(), true);
    for (bool again = true; again;) {
      again = false;
      FusionPlan after = computeFusionPlan(g, *rules);
      LeftoverIndex afterIndex = indexLeftovers(after);
      for (size_t k = 0; k < added.size(); ++k) {
        NewSkipQdq &a = added[k];
        if (!kept[k])
          continue;
        unsigned first = ~0u;
        unsigned is = leftoversAround(afterIndex, a.around, &first);
        if (is < was[k])
          continue;
        kept[k] = false;
        again = true;
        a.add->setOperand(a.operand, a.skip);
        r.notifyModified(*a.add);
        r.eraseNode(*a.dq);
        r.eraseNode(*a.q);
        floatSkip.insert(a.add);
        a.note = label(*a.add) + ": skip input %" + a.skip->getName().str() +
                 " left in float: a Q/DQ on it leaves " + std::to_string(is) +
                 " leftovers around the Add under " + rules->title.str() +
                 ", " + std::to_string(was[k]) + " without";
        if (first != ~0u)
          a.note += " (" + after.leftovers[first].reason + ")";
      }
    }
    for (size_t k = 0; k < added.size(); ++k) {
      report.recordNote(kQuantizeResidualPass, added[k].note);
      changed |= kept[k];
    }
  }

  // The Adds step 2 rewrites: a branch pair they all read goes for all.
  // Each such Add's branch operand and the DQ nearest it on the branch.
  llvm::DenseMap<const Node *, std::pair<unsigned, const Node *>> bypassing;
  for (Work &w : work)
    if (!keepBranchQdq && !floatSkip.count(w.add) && w.outQ &&
        !w.branch.pairs.empty())
      bypassing[w.add] = {w.branchIdx, w.branch.pairs.front().second};
  for (Work &w : work) {
    Node &add = *w.add;
    if (floatSkip.count(&add))
      continue;
    // 2. No Q/DQ between the activation and the Add when the Add's output
    // is quantized: one requantize, at the unit's output.
    if (!w.outQ || keepBranchQdq)
      continue;
    // A pair that something else reads stays: bypassing it for the Add
    // would make the unit write float for the Add and int8 for the pair.
    bool shared = false;
    for (size_t i = 0; i < w.branch.pairs.size() && !shared; ++i) {
      const Node *q = w.branch.pairs[i].first, *dq = w.branch.pairs[i].second;
      // Pairs are nearest the Add first: each DQ feeds the next pair's Q;
      // the nearest may feed other Adds that bypass it as their branch too.
      const Node *next = i == 0 ? &add : w.branch.pairs[i - 1].first;
      shared =
          q->getResult()->getNumUses() != 1 ||
          q->getResult()->isGraphOutput() || dq->getResult()->isGraphOutput() ||
          llvm::any_of(dq->getResult()->getUses(), [&](const Use &u) {
            if (u.user == next)
              return false;
            auto it = bypassing.find(u.user);
            return !(i == 0 && it != bypassing.end() &&
                     it->second.first == u.index && it->second.second == dq);
          });
    }
    if (shared) {
      report.recordNote(kQuantizeResidualPass,
                        label(add) + ": Q/DQ between its branch and the Add "
                                     "kept: other nodes read it too");
      continue;
    }
    if (bypassInnerPairs(r, report, w.branch, erased))
      changed = true;
    if (w.branch.pairs.empty())
      continue;
    auto [farQ, farDq] = w.branch.pairs.back();
    Value *act = farQ->getOperand(0);
    std::string text = label(add) + " reads %" + act->getName().str() +
                       " in float: bypassed Q/DQ";
    for (auto [q, dq] : w.branch.pairs)
      text += " " + label(*q) + " (" +
              quant::describeParams(getStoredQuantType(q->getResult())) + ")";
    text +=
        " between " +
        label(w.branch.activation ? *w.branch.activation : *w.branch.weighted) +
        " and the Add";
    add.setOperand(w.branchIdx, act);
    r.notifyModified(add);
    report.recordNote(kQuantizeResidualPass, text);
    changed = true;
    // Erase the pairs nothing reads any more, nearest the Add first.
    for (auto [q, dq] : w.branch.pairs) {
      if (erased.count(q) || erased.count(dq))
        break;
      if (!dq->getResult()->hasUses()) {
        erased.insert(dq);
        r.eraseNode(*dq);
      }
      if (!q->getResult()->hasUses()) {
        erased.insert(q);
        r.eraseNode(*q);
      } else {
        break;
      }
    }
  }
  return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
