//===- BorrowScales.cpp - Grids for float data movement between units ----===//
//
// Lossy, reported. pytorch-quantization's automatic patching puts Q/DQ on
// conv inputs and weights only. Wherever the tensors between two quantized
// convs pass through data movement (YOLO's C2f Split and Concat, the SPPF
// MaxPools and Concat, the neck's Resize and Concat) they stay in float,
// and TensorRT runs those ops in float with a reformat on every edge into
// a conv. NVIDIA's YOLO QAT guide gives each such Concat, and the MaxPools,
// Splits and residual Adds around it, Q/DQ with the scale of the quantizer
// that consumes it. This pass does that:
//
//   %m = onnx.Mul(%c, %s)                 %m  = onnx.Mul(%c, %s)
//                                         %mq = Q/DQ(%m) : B
//   %p = onnx.MaxPool(%m)          =>     %p  = onnx.MaxPool(%mq)
//   %k = onnx.Concat(%m, %p)              %k  = onnx.Concat(%mq, %p)
//   %q = q.quantize(%k) : B               %q  = q.quantize(%k) : B
//
// It takes the borrowable regions of qopt/Passes/FloatRegions.h: float
// tensors joined by data movement, entered from computing ops and read
// only by Qs and residual Adds.
// Each entry that is not already a DQ's result gets a Q/DQ on the grid of
// the widest exit Q (the largest scale), and the other exit Qs are moved
// to that grid (the guide's "restricted" scales); remove-redundant-qdq
// then drops the DQ -> Q pairs that cancel.
//
// Cost: every entry is rounded to the grid and clipped to its range, as
// the consumer's Q did anyway for the values that reach it; a residual Add
// now adds rounded inputs; an exit Q on a narrower grid gets a coarser
// one. Each region taken is a note in the cost report, each exit Q moved a
// regrid entry.
// An exit Q whose DQ feeds a conv with an i32 bias keeps its grid (the
// bias is on input scale * weight scale); it is then a requantize. A
// region whose Q/DQ do not leave the backend's fusion plan with fewer
// leftovers is taken back, with a note saying so. The grid is the widest
// exit Q's; a residual Add the region feeds is not consulted (its values
// outside that grid clip).
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/Fusion/FusionPlan.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/FloatRegions.h"
#include "qopt/Passes/QdqUtils.h"
#include "qopt/Support/Error.h"

#include "llvm/Support/Format.h"

#include <optional>
#include <tuple>

using namespace qopt;

static constexpr const char *kBorrowScalesPass = "borrow-scales";

llvm::Expected<BorrowScalesPass>
BorrowScalesPass::parse(llvm::StringRef params) {
  BorrowScalesPass p;
  auto backend = parseBackendParam(kBorrowScalesPass, params);
  if (!backend)
    return backend.takeError();
  p.backend = std::move(*backend);
  return p;
}

void BorrowScalesPass::printPipeline(llvm::raw_ostream &os) const {
  os << kBorrowScalesPass << "<" << backend << ">";
}

namespace {

/// Puts `v` on `grid` through a new Q/DQ right after its producer.
std::pair<Node *, Node *> quantizeEntry(PatternRewriter &r, Value *v,
                                        const QuantType *grid) {
  Node *def = v->getDefiningNode();
  auto next = std::next(Graph::NodeList::iterator(def));
  r.setRoot(def);
  r.setInsertionPoint(&*next);
  std::vector<std::pair<Node *, unsigned>> users = getUsers(v);
  std::string base = v->getName().str() + "_borrowed";
  Node *q = createQuantize(r, v, grid, nullptr, base + "_Q");
  Node *dq = createDequantize(r, q->getResult(), nullptr, base + "_DQ");
  for (auto [user, index] : users) {
    user->setOperand(index, dq->getResult());
    r.notifyModified(*user);
  }
  return {q, dq};
}

/// True when a weighted op reads `stored` through a DQ as its input and
/// has an i32 bias: the bias is on input scale * weight scale, so the Q's
/// grid must stay.
bool feedsInt32Bias(const Value *stored) {
  for (const Use &u : stored->getUses()) {
    if (!u.user || !u.user->isa(ops::QDequantize))
      continue;
    for (const Use &w : u.user->getResult()->getUses()) {
      const Node *op = w.user;
      if (!op || w.index != 0 || !hasTrait(*op, OpTrait::Weighted) ||
          op->getNumOperands() < 3 || !op->getOperand(2))
        continue;
      const Value *bias = op->getOperand(2);
      if (Node *dq = getProducer(bias, ops::QDequantize))
        bias = dq->getOperand(0);
      if (bias->getType()->getStorageKind() == ElementKind::I32)
        return true;
    }
  }
  return false;
}

void takeBack(PatternRewriter &r, Value *v, Node *q, Node *dq) {
  for (auto [user, index] : getUsers(dq->getResult())) {
    user->setOperand(index, v);
    r.notifyModified(*user);
  }
  r.eraseNode(*dq);
  r.eraseNode(*q);
}

} // namespace

PreservedAnalyses BorrowScalesPass::run(Graph &g, AnalysisManager &am) {
  CostReport &report = am.getCostReport();
  const BackendRules *rules = lookupBackendRules(backend);
  std::vector<FloatRegion> regions = findFloatRegions(g);

  PatternRewriter r(g);
  unsigned kept = 0;
  std::optional<size_t> leftovers;
  for (FloatRegion &region : regions) {
    if (!region.isBorrowable())
      continue; // nothing of the kind this pass is for: no note
    std::string where = "'" + region.members.front()->getName().str() +
                        "' and " + std::to_string(region.members.size() - 1) +
                        " more";
    if (!leftovers)
      leftovers = computeFusionPlan(g, *rules).leftovers.size();
    std::vector<std::tuple<Value *, Node *, Node *>> added;
    for (Value *v : region.entries) {
      auto [q, dq] = quantizeEntry(r, v, region.grid);
      added.emplace_back(v, q, dq);
    }
    // The Qs reading the region take its grid too (the guide's restricted
    // scales), so no requantize is left between them.
    std::vector<std::pair<Value *, const QuantType *>> moved;
    for (Node *q : region.exitQs) {
      Value *stored = q->getResult();
      const QuantType *old = getStoredQuantType(stored);
      // Only where the new grid reaches nothing but DQs (int8 data
      // movement after the Q would need retyping too) and no i32 bias
      // depends on it.
      if (!old || old == region.grid || old->isPerAxis() ||
          old->getStorageKind() != region.grid->getStorageKind() ||
          stored->isGraphOutput() || !allUsersAre(stored, ops::QDequantize) ||
          feedsInt32Bias(stored))
        continue;
      r.setType(*stored, withElement(stored->getType(), region.grid));
      moved.push_back({stored, old});
    }
    size_t now = computeFusionPlan(g, *rules).leftovers.size();
    if (now >= *leftovers) {
      for (auto &[stored, old] : moved)
        r.setType(*stored, withElement(stored->getType(), old));
      for (auto &[v, q, dq] : added)
        takeBack(r, v, q, dq);
      report.recordNote(kBorrowScalesPass,
                        "region of " + where +
                            " left in float: Q/DQ "
                            "on its entries leave " +
                            std::to_string(now) + " leftovers under " +
                            rules->title.str() + ", " +
                            std::to_string(*leftovers) + " without");
      continue;
    }
    for (auto &[stored, old] : moved)
      report.recordRegrid(kBorrowScalesPass, *stored, old, region.grid,
                          "reads the region of " + where);
    leftovers = now;
    ++kept;
    auto [lo, hi] = quant::representableRange(region.grid);
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "region of " << where << ": new Q/DQ on " << added.size() << " entr"
       << (added.size() == 1 ? "y" : "ies") << " (";
    for (size_t i = 0; i < added.size(); ++i)
      os << (i ? ", %" : "%") << std::get<0>(added[i])->getName();
    os << "), " << quant::describeParams(region.grid) << " (the grid of "
       << describeNode(*region.gridFrom) << "), max error 0.5 LSB within ["
       << llvm::format("%g", lo) << ", " << llvm::format("%g", hi)
       << "], clipped outside";
    report.recordNote(kBorrowScalesPass, os.str());
  }
  return kept ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
