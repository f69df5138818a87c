//===- RemoveRedundantQdq.cpp - Fold DQ->Q pairs (remove-redundant-qdq) ---===//
//
// Exact by default. A DQ->Q pair between two ops is a requantize "Scale"
// layer in TensorRT and two extra nodes everywhere else.
//
// DQ->Q with equal parameters disappears:
//
//   %d = q.dequantize(%x : A)
//   %y = q.quantize(%d) : A        =>     (uses of %y read %x)
//
// DQ->Q with different parameters becomes one explicit requantize (the
// interpreter runs it as the same fake-quant chain):
//
//   %d = q.dequantize(%x : A)
//   %y = q.quantize(%d) : B        =>     %y = q.requantize(%x) : B
//
// A requantize read only by DQs collapses when B holds every value of A
// (quant::gridContains: Q1->DQ1->Q2->DQ2 is then Q1->DQ1):
//
//   %y = q.requantize(%x) : B
//   %f = q.dequantize(%y)          =>     %f = q.dequantize(%x)
//
// Lossy options (each change goes to the cost report):
// - `merge-requantize`: a requantize of a fresh Q quantizes straight onto
//   its grid, dropping the first rounding (and the first grid's clipping):
//     %x = q.quantize(%f) : A; %y = q.requantize(%x) : B
//     =>  %y = q.quantize(%f) : B
// - `remove-qdq`: Q->DQ of a float activation is removed (the value stays
//   float).
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/PassRegistry.h"
#include "qopt/Passes/QdqUtils.h"

#include "llvm/Support/Format.h"

using namespace qopt;

static constexpr const char *kRemoveRedundantQdqPass = "remove-redundant-qdq";

namespace {

/// Q(DQ(x)) => x or q.requantize(x).
struct FoldDequantizeQuantize : RewritePattern {
  FoldDequantizeQuantize()
      : RewritePattern(ops::QQuantize, 2, "fold-dequantize-quantize") {}
  bool matchAndRewrite(Node &q, PatternRewriter &r) const override {
    Node *dq = getProducer(q.getOperand(0), ops::QDequantize);
    if (!dq || isMinifloatQdq(q))
      return false;
    Value *x = dq->getOperand(0);
    const QuantType *from = getStoredQuantType(x);
    const QuantType *to = getStoredQuantType(q.getResult());
    if (from == to) {
      if (r.replacementNeedsIdentity(*q.getResult(), *x))
        return false;
      r.replaceNode(q, {x});
      return true;
    }
    r.setInsertionPoint(&q);
    Node *rq = r.create(ops::QRequantize, {x}, {{q.getResult()->getType(), ""}},
                        {}, q.getName().str());
    std::string name = q.getResult()->getName().str();
    r.replaceNode(q, {rq->getResult()});
    if (!rq->getResult()->isGraphOutput() && !r.getGraph().lookupValue(name))
      rq->getResult()->setName(name);
    return true;
  }
};

/// q.requantize(x) : A -> A  =>  x; read only by DQs and B contains A  =>
/// the DQs read x.
struct CollapseRequantize : RewritePattern {
  CollapseRequantize()
      : RewritePattern(ops::QRequantize, 2, "collapse-requantize") {}
  bool matchAndRewrite(Node &rq, PatternRewriter &r) const override {
    Value *x = rq.getOperand(0);
    const QuantType *from = getStoredQuantType(x);
    const QuantType *to = getStoredQuantType(rq.getResult());
    if (from == to) {
      if (r.replacementNeedsIdentity(*rq.getResult(), *x))
        return false;
      r.replaceNode(rq, {x});
      return true;
    }
    if (!allUsersAre(rq.getResult(), ops::QDequantize) ||
        !quant::gridContains(to, from))
      return false;
    // The DQs now dequantize x: equal float values (gridContains).
    for (auto [dq, index] : getUsers(rq.getResult())) {
      dq->setOperand(index, x);
      r.notifyModified(*dq);
    }
    r.eraseNode(rq);
    return true;
  }
};

/// Lossy: Q_A(f) -> requantize to B  =>  Q_B(f).
struct MergeRequantize : RewritePattern {
  explicit MergeRequantize(CostReport &report)
      : RewritePattern(ops::QRequantize, 1, "merge-requantize"),
        report(report) {}
  bool matchAndRewrite(Node &rq, PatternRewriter &r) const override {
    Node *q = getProducer(rq.getOperand(0), ops::QQuantize);
    if (!q)
      return false;
    const QuantType *from = getStoredQuantType(q->getResult());
    const QuantType *to = getStoredQuantType(rq.getResult());
    if (from->isPerAxis() || to->isPerAxis())
      return false;
    r.setInsertionPoint(&rq);
    Node *direct =
        createQuantize(r, q->getOperand(0), to, nullptr, rq.getName().str());
    recordCost(*rq.getResult(), from, to);
    std::string name = rq.getResult()->getName().str();
    r.replaceNode(rq, {direct->getResult()});
    if (!direct->getResult()->isGraphOutput() &&
        !r.getGraph().lookupValue(name))
      direct->getResult()->setName(name);
    return true;
  }

  /// Dropping the first rounding moves a value by at most one step of B
  /// where A did not clip; where A clipped and B does not, by as much as B's
  /// range reaches past A's.
  void recordCost(const Value &v, const QuantType *from,
                  const QuantType *to) const {
    auto [loA, hiA] = quant::representableRange(from);
    auto [loB, hiB] = quant::representableRange(to);
    double s = to->getScale();
    double unclipped = std::max({0.0, loA - loB, hiB - hiA}) / s;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "%" << v.getName() << ": " << quant::describeParams(from) << " then "
       << quant::describeParams(to) << " merged into one rounding"
       << ", max change 1 LSB of the second grid";
    if (unclipped > 0)
      os << llvm::format(" (%.3g LSB where the first grid clipped)", unclipped);
    report.recordNote(kRemoveRedundantQdqPass, os.str());
  }
  CostReport &report;
};

/// Lossy: DQ(Q(f)) => f for a float activation f.
struct RemoveQuantizeDequantize : RewritePattern {
  explicit RemoveQuantizeDequantize(CostReport &report)
      : RewritePattern(ops::QDequantize, 1, "remove-qdq"), report(report) {}
  bool matchAndRewrite(Node &dq, PatternRewriter &r) const override {
    Node *q = getProducer(dq.getOperand(0), ops::QQuantize);
    if (!q || !isActivationQuantize(*q))
      return false;
    Value *f = q->getOperand(0);
    if (r.replacementNeedsIdentity(*dq.getResult(), *f))
      return false;
    const QuantType *grid = getStoredQuantType(q->getResult());
    auto [lo, hi] = quant::representableRange(grid);
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "%" << f->getName() << ": " << quant::describeParams(grid)
       << " removed; the value stays float (it was rounded by up to 0.5 LSB"
       << llvm::format(" and clipped to [%.4g, %.4g])", lo, hi);
    report.recordNote(kRemoveRedundantQdqPass, os.str());
    r.replaceNode(dq, {f});
    return true;
  }
  CostReport &report;
};

} // namespace

llvm::Expected<RemoveRedundantQdqPass>
RemoveRedundantQdqPass::parse(llvm::StringRef params) {
  RemoveRedundantQdqPass pass;
  auto p = parsePassParams(kRemoveRedundantQdqPass, params,
                           {"merge-requantize", "remove-qdq"});
  if (!p)
    return p.takeError();
  for (auto &[key, value] : *p) {
    auto flag = parseBoolParam(kRemoveRedundantQdqPass, key, value);
    if (!flag)
      return flag.takeError();
    (key == "merge-requantize" ? pass.mergeRequantize : pass.removeQdq) = *flag;
  }
  return pass;
}

void RemoveRedundantQdqPass::printPipeline(llvm::raw_ostream &os) const {
  os << kRemoveRedundantQdqPass;
  if (mergeRequantize || removeQdq) {
    os << "<";
    if (mergeRequantize)
      os << "merge-requantize" << (removeQdq ? ";" : "");
    if (removeQdq)
      os << "remove-qdq";
    os << ">";
  }
}

PreservedAnalyses RemoveRedundantQdqPass::run(Graph &g, AnalysisManager &am) {
  PatternList patterns;
  patterns.push_back(std::make_unique<FoldDequantizeQuantize>());
  patterns.push_back(std::make_unique<CollapseRequantize>());
  if (mergeRequantize)
    patterns.push_back(std::make_unique<MergeRequantize>(am.getCostReport()));
  if (removeQdq)
    patterns.push_back(
        std::make_unique<RemoveQuantizeDequantize>(am.getCostReport()));
  GreedyRewriteConfig config;
  config.maxIterations = 64;
  GreedyRewriteResult result = applyPatternsGreedily(g, patterns, config);
  return result.changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
