//===- SymmetrizeActivations.cpp - Asymmetric activations as symmetric i8 -===//
//
// Lossy, reported. TensorRT takes symmetric int8 activations only (zero
// point 0); PyTorch's own quantization (torch.ao, the x86 and fbgemm
// qconfigs) and ONNX Runtime's quantizer write uint8 activations with zero
// points anywhere in 0..255, so under TensorRT's rules every conv of such a
// model runs in float. This pass puts each activation grid on the
// symmetric i8 grid that covers the same real range:
//
//   %q = q.quantize(%x) : !quant.uniform<u8:f32, 0.05:128>
//   =>
//   %q = q.quantize(%x) : !quant.uniform<i8:f32, 0.05>          (exact)
//
//   %q = q.quantize(%r) : !quant.uniform<u8:f32, 0.02>   (after a Relu)
//   =>
//   %q = q.quantize(%r) : !quant.uniform<i8:f32, 0.040157482>   (lossy)
//
// A grid of scale s and zero point z stores [(qmin - z) s, (qmax - z) s];
// the new scale is the smallest that keeps both ends: max((z - qmin) / 128,
// (qmax - z) / 127) * s. z = 128 on u8 (and i8 with z = 0) keeps the scale
// and every value; elsewhere values are rounded to the coarser grid (at
// most 0.5 new LSB, reported per tensor in LSB of the old grid).
//
// The whole stored region of a quantizer changes together (its Q or
// requantize, int8 data movement and MaxPool, Concat inputs, up to the DQs
// and requantizes that read it); regions touching a graph input or output,
// a constant or an op reading the integers, and per-axis grids, stay.
// A grid that starts at 0 clamped like a Relu (canonicalize drops a Relu
// such a Q makes redundant): a Relu goes back before its Q.
// A conv or gemm reading a changed region through its DQ with an int32
// bias on input scale x weight scale (torch.ao's bias) gets its bias
// requantized to the new input scale, so that the unit's bias stays the
// integer one the backends take.
//
// A region is kept only where the backend's fusion plan gets better: INT8
// MACs up, or fewer leftovers with INT8 MACs not down. Otherwise it is
// taken back and the cost report says where and why. Regions that pay only
// together (a residual Add's two inputs) are tried together at the end.
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/Fusion/FusionPlan.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/QdqUtils.h"
#include "qopt/Support/Error.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/Format.h"

#include <cmath>

using namespace qopt;

static constexpr const char *kSymmetrizeActivationsPass =
    "symmetrize-activations";

llvm::Expected<SymmetrizeActivationsPass>
SymmetrizeActivationsPass::parse(llvm::StringRef params) {
  SymmetrizeActivationsPass p;
  auto backend = parseBackendParam(kSymmetrizeActivationsPass, params);
  if (!backend)
    return backend.takeError();
  p.backend = std::move(*backend);
  return p;
}

void SymmetrizeActivationsPass::printPipeline(llvm::raw_ostream &os) const {
  os << kSymmetrizeActivationsPass << "<" << backend << ">";
}

namespace {

/// The symmetric i8 grid covering the real range `q` stores.
const QuantType *symmetricGrid(Context &ctx, const QuantType *q) {
  auto [qmin, qmax] = getIntegerRange(q->getStorageKind());
  double z = static_cast<double>(q->getZeroPoint());
  double factor = std::max((z - static_cast<double>(qmin)) / 128.0,
                           (static_cast<double>(qmax) - z) / 127.0);
  float scale = static_cast<float>(q->getScales().front() * factor);
  return withParams(ctx, q, ElementKind::I8, {scale}, {0});
}

bool isSymmetricI8(const QuantType *q) {
  return q->getStorageKind() == ElementKind::I8 && !q->isPerAxis() &&
         q->getZeroPoint() == 0;
}

/// An int32 bias on input scale x weight scale, read by a weighted op
/// whose input 0 is the DQ `dq`: the bias's stored constant and its
/// grid.
struct IntegerBias {
  Value *constant;
  Node *weightedOp;
};

std::vector<IntegerBias> integerBiasesAfter(Value *stored) {
  std::vector<IntegerBias> biases;
  for (const Use &u : stored->getUses()) {
    if (!u.user || !u.user->isa(ops::QDequantize))
      continue;
    for (const Use &w : u.user->getResult()->getUses()) {
      Node *op = w.user;
      if (!op || w.index != 0 || !hasTrait(*op, OpTrait::Weighted) ||
          op->getNumOperands() < 3 || !op->getOperand(2))
        continue;
      Node *dq = getProducer(op->getOperand(2), ops::QDequantize);
      if (!dq || !getConstantData(dq->getOperand(0)))
        continue;
      const QuantType *b = getStoredQuantType(dq->getOperand(0));
      if (b && b->getStorageKind() == ElementKind::I32 &&
          dq->getOperand(0)->hasOneUse())
        biases.push_back({dq->getOperand(0), op});
    }
  }
  return biases;
}

/// One region's change, undoable.
struct Change {
  StoredRegion region;
  const QuantType *before;
  const QuantType *after;
  /// Bias constants requantized: the value, its old type and data.
  struct Bias {
    Value *value;
    const TensorType *type;
    Attribute data;
  };
  std::vector<Bias> biases;
  /// Relus put back before the region's Qs: the Q and its old operand.
  std::vector<std::pair<Node *, Value *>> relus;
};

class Symmetrizer {
public:
  Symmetrizer(Graph &g, const BackendRules &rules, CostReport &report)
      : g(g), r(g), rules(rules), report(report) {}

  bool run();

private:
  std::optional<Change> apply(Value *start);
  void undo(Change &c);
  bool requantizeBias(Change &c, Value *bias, const QuantType *input);
  void record(const Change &c);
  /// INT8 MACs up, or leftovers down with INT8 MACs not down.
  bool better(const FusionPlan::Summary &now, size_t nowLeftovers) const {
    return now.int8Macs > summary.int8Macs ||
           (now.int8Macs == summary.int8Macs && nowLeftovers < leftovers);
  }
  void measure() {
    FusionPlan plan = computeFusionPlan(g, rules);
    summary = plan.summarize();
    leftovers = plan.leftovers.size();
  }

  Graph &g;
  PatternRewriter r;
  const BackendRules &rules;
  CostReport &report;
  FusionPlan::Summary summary;
  size_t leftovers = 0;
};

std::optional<Change> Symmetrizer::apply(Value *start) {
  StoredRegion region = collectStoredRegion(start);
  const QuantType *q = getStoredQuantType(start);
  if (!region.blocker.empty() || !q || q->isPerAxis() || isSymmetricI8(q))
    return std::nullopt;
  bool allActivations = llvm::all_of(region.producers, [](Node *p) {
    return p->isa(ops::QRequantize) || isActivationQuantize(*p);
  });
  if (!allActivations)
    return std::nullopt;
  // A grid starting at 0 (zero point = storage minimum) clamps like a Relu,
  // and canonicalize drops the Relu it makes redundant; the symmetric grid
  // stores negatives, so the clamp comes back as a Relu before each Q.
  // Grids ending at 0 (zero point = storage maximum) would need the mirror
  // image; they stay.
  auto [qmin, qmax] = getIntegerRange(q->getStorageKind());
  bool startsAtZero = q->getZeroPoint() == qmin;
  if (q->getZeroPoint() == qmax ||
      (startsAtZero && llvm::any_of(region.producers, [](Node *p) {
         return !p->isa(ops::QQuantize);
       })))
    return std::nullopt;
  Change c{std::move(region), q, symmetricGrid(g.getContext(), q), {}, {}};
  retypeRegion(r, c.region, c.after);
  if (startsAtZero)
    for (Node *p : c.region.producers) {
      Value *x = p->getOperand(0);
      if (Node *def = x->getDefiningNode(); def && def->isa(ops::Relu))
        continue;
      r.setRoot(p);
      r.setInsertionPoint(p);
      Node *relu = r.create(ops::Relu, {x}, {{x->getType(), ""}});
      p->setOperand(0, relu->getResult());
      r.notifyModified(*p);
      c.relus.push_back({p, x});
    }
  for (Value *v : c.region.values)
    for (IntegerBias b : integerBiasesAfter(v))
      requantizeBias(c, b.constant, c.after);
  return c;
}

/// The bias of a unit whose input grid changed goes onto the new input
/// scale x the weight scale (its scale per channel over the old input
/// scale), rounded; declined (left as it is) when a value would overflow.
bool Symmetrizer::requantizeBias(Change &c, Value *bias,
                                 const QuantType *input) {
  const QuantType *old = getStoredQuantType(bias);
  const DenseElements *data = getConstantData(bias);
  Node *def = bias->getDefiningNode();
  if (!old || !data || !def || !def->isa(ops::Constant))
    return false;
  double ratio = static_cast<double>(input->getScales().front()) /
                 static_cast<double>(c.before->getScales().front());
  std::vector<float> scales;
  for (float s : old->getScales())
    scales.push_back(static_cast<float>(s * ratio));
  std::vector<int64_t> zeros(old->getZeroPoints().begin(),
                             old->getZeroPoints().end());
  const QuantType *now =
      withParams(g.getContext(), old, ElementKind::I32, scales, zeros);
  quant::ChannelIndexer channelOf(data->getDims(),
                                  old->isPerAxis() ? old->getAxis() : 0);
  std::vector<int64_t> values(data->getNumElements());
  for (int64_t i = 0; i < data->getNumElements(); ++i) {
    size_t k = old->isPerAxis() ? static_cast<size_t>(channelOf(i)) : 0;
    double real = static_cast<double>(data->getAsInt(i) - zeros[k]) *
                  static_cast<double>(old->getScales()[k]);
    double stored = std::nearbyint(real / static_cast<double>(scales[k])) +
                    static_cast<double>(zeros[k]);
    if (!(std::fabs(stored) < 2147483647.0))
      return false;
    values[i] = static_cast<int64_t>(stored);
  }
  c.biases.push_back({bias, bias->getType(), *def->getAttr("value")});
  def->setAttr("value", Attribute(quant::makeDenseInt(
                            ElementKind::I32, data->getDims(), values)));
  r.setType(*bias, withElement(bias->getType(), now));
  return true;
}

void Symmetrizer::undo(Change &c) {
  retypeRegion(r, c.region, c.before);
  for (auto &[q, x] : c.relus) {
    Node *relu = q->getOperand(0)->getDefiningNode();
    q->setOperand(0, x);
    r.notifyModified(*q);
    r.eraseNode(*relu);
  }
  for (Change::Bias &b : c.biases) {
    b.value->getDefiningNode()->setAttr("value", b.data);
    r.setType(*b.value, b.type);
  }
}

void Symmetrizer::record(const Change &c) {
  Value *first = c.region.values.front();
  std::string where = c.region.values.size() == 1
                          ? std::string()
                          : "with " +
                                std::to_string(c.region.values.size() - 1) +
                                " more tensors of its region";
  report.recordRegrid(kSymmetrizeActivationsPass, *first, c.before, c.after,
                      where);
  if (!c.relus.empty())
    report.recordNote(kSymmetrizeActivationsPass,
                      "'" + first->getName().str() +
                          "': the old grid started at 0, so a Relu "
                          "before its Q keeps the clamp");
  for (const Change::Bias &b : c.biases)
    report.recordNote(kSymmetrizeActivationsPass,
                      "bias '" + b.value->getName().str() +
                          "' requantized to the new input scale x "
                          "weight scale (at most 0.5 LSB of its "
                          "finer grid)");
}

bool Symmetrizer::run() {
  std::vector<Value *> starts;
  for (Node &n : g.getNodes())
    if (isActivationQuantize(n) || n.isa(ops::QRequantize))
      starts.push_back(n.getResult());
  measure();
  llvm::SmallPtrSet<Value *, 16> seen;
  std::vector<Value *> declined;
  bool changed = false;
  for (Value *start : starts) {
    if (seen.count(start))
      continue;
    std::optional<Change> c = apply(start);
    StoredRegion region = c ? c->region : collectStoredRegion(start);
    seen.insert(region.values.begin(), region.values.end());
    if (!c)
      continue;
    FusionPlan plan = computeFusionPlan(g, rules);
    FusionPlan::Summary now = plan.summarize();
    if (!better(now, plan.leftovers.size())) {
      undo(*c);
      declined.push_back(start);
      continue;
    }
    record(*c);
    summary = now;
    leftovers = plan.leftovers.size();
    changed = true;
  }
  // Regions that pay only together: all the declined ones at once.
  if (!declined.empty()) {
    std::vector<Change> together;
    for (Value *start : declined)
      if (std::optional<Change> c = apply(start))
        together.push_back(std::move(*c));
    FusionPlan plan = computeFusionPlan(g, rules);
    FusionPlan::Summary now = plan.summarize();
    if (!together.empty() && better(now, plan.leftovers.size())) {
      for (const Change &c : together)
        record(c);
      changed = true;
    } else {
      for (Change &c : llvm::reverse(together))
        undo(c);
      for (Value *start : declined)
        report.recordNote(
            kSymmetrizeActivationsPass,
            "'" + start->getName().str() +
                "' kept its grid: the symmetric one leaves " +
                rules.title.str() +
                "'s fusion plan no better (INT8 MACs and leftovers)");
    }
  }
  return changed;
}

} // namespace

PreservedAnalyses SymmetrizeActivationsPass::run(Graph &g,
                                                 AnalysisManager &am) {
  const BackendRules *rules = lookupBackendRules(backend);
  Symmetrizer s(g, *rules, am.getCostReport());
  return s.run() ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
