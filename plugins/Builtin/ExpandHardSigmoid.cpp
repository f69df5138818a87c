//===- ExpandHardSigmoid.cpp - HardSigmoid as int8 Mul and Add ------------===//
//
// ONNX Runtime's CPU provider has no int8 HardSigmoid, so MobileNetV3's
// squeeze-excitation gates and its HardSwish (x * HardSigmoid(x), as
// torch.onnx writes it at opset 13) leave a float island with reformats
// on both sides. HardSigmoid is max(0, min(1, alpha * x + beta)): a Mul by
// a constant, an Add of a constant, and a clamp that a Q whose grid starts
// at 0 and ends at 1 or below does by saturating. Both are int8 units
// (QLinearMul, QLinearAdd):
//
//   %d = q.dequantize(%x) : A                 %d  = q.dequantize(%x) : A
//   %h = onnx.HardSigmoid(%d) {alpha, beta}   %m  = onnx.Mul(%d, DQ(alpha))
//   %q = q.quantize(%h) : G           =>      %mq = q.quantize(%m) : A'
//                                             %a  = onnx.Add(DQ(%mq), DQ(beta))
//                                             %q  = q.quantize(%a) : G
//
// A' is A with its scale times alpha, so the Mul's Q gives back x's own
// integers (the Mul only renames the grid), and the clamp is G's saturation
// when G's zero point is its storage minimum and 1 quantizes to its top.
// The map from x's 256 codes to the 256 codes of %q is checked code by code
// against HardSigmoid's; a site is rewritten only where all agree (exact).
//
// Lossy, reported: a HardSigmoid read by Muls in float (HardSwish, or a
// gate without a Q of its own) gets a Q/DQ on [0, 1] in 1/255 steps on A's
// storage kind first, so that the Mul is an int8 unit too. Its cost is
// measured the same way, over every pair of input codes of each Mul: how
// many output codes move and by how many LSB.
//
// A site changes only where the backend's fusion plan gets better (INT8
// MACs up, or fewer leftovers with INT8 MACs not down); otherwise it is
// put back and the cost report says so.
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/Fusion/FusionPlan.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/QdqUtils.h"

#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>

using namespace qopt;

static constexpr const char *kExpandHardSigmoidPass = "expand-hard-sigmoid";

llvm::Expected<ExpandHardSigmoidPass>
ExpandHardSigmoidPass::parse(llvm::StringRef params) {
  ExpandHardSigmoidPass p;
  auto backend = parseBackendParam(kExpandHardSigmoidPass, params);
  if (!backend)
    return backend.takeError();
  p.backend = std::move(*backend);
  return p;
}

void ExpandHardSigmoidPass::printPipeline(llvm::raw_ostream &os) const {
  os << kExpandHardSigmoidPass << "<" << backend << ">";
}

namespace {

/// A per-tensor 8-bit grid (the codes a site's checks enumerate).
bool isPerTensor8Bit(const QuantType *q) {
  return q && !q->isPerAxis() && !q->isBlocked() &&
         (q->getStorageKind() == ElementKind::I8 ||
          q->getStorageKind() == ElementKind::U8);
}

/// The grid a DQ reads, when `v` is a per-tensor 8-bit DQ's result.
const QuantType *dequantizedGrid(const Value *v) {
  Node *dq = getProducer(v, ops::QDequantize);
  if (!dq)
    return nullptr;
  const QuantType *q = getStoredQuantType(dq->getOperand(0));
  return isPerTensor8Bit(q) ? q : nullptr;
}

/// The stored value a DQ result reads.
const Value *storedBehind(const Value *v) {
  return getProducer(v, ops::QDequantize)->getOperand(0);
}

float gridScale(const QuantType *q) { return q->getScales().front(); }

/// ONNX's HardSigmoid as the reference interpreter computes it.
float hardSigmoid(float v, float alpha, float beta) {
  double y = static_cast<double>(alpha) * v + static_cast<double>(beta);
  return static_cast<float>(std::min(1.0, std::max(0.0, y)));
}

/// What one site computes, before and after, code by code.
struct SiteMath {
  const QuantType *in;     ///< A: the HardSigmoid's input grid
  const QuantType *scaled; ///< A': A's scale times alpha
  const QuantType *gate;   ///< G: the grid of the HardSigmoid's result
  float alpha, beta;

  /// The gate's value after the rewrite for x's code `n`: DQ_G(Q_G(Add)).
  float expandedGate(int64_t n) const {
    float x = quant::dequantizeValue(n, in);
    int64_t renamed = quant::quantizeValue(x * alpha, scaled);
    float shifted = quant::dequantizeValue(renamed, scaled) + beta;
    return quant::dequantizeValue(quant::quantizeValue(shifted, gate), gate);
  }
  /// The gate's value before, when it is quantized to G already.
  float originalGate(int64_t n) const {
    float x = quant::dequantizeValue(n, in);
    return quant::dequantizeValue(
        quant::quantizeValue(hardSigmoid(x, alpha, beta), gate), gate);
  }
};

/// Codes of `q`'s storage kind.
std::pair<int64_t, int64_t> codesOf(const QuantType *q) {
  return getIntegerRange(q->getStorageKind());
}

/// True when Mul-by-alpha onto A' returns every code of A unchanged and G
/// clamps at 0 and 1 as HardSigmoid does.
bool renamesAndClamps(const SiteMath &m) {
  auto [lo, hi] = codesOf(m.in);
  for (int64_t n = lo; n <= hi; ++n)
    if (quant::quantizeValue(quant::dequantizeValue(n, m.in) * m.alpha,
                             m.scaled) != n)
      return false;
  auto [glo, ghi] = codesOf(m.gate);
  return m.gate->getZeroPoint() == glo &&
         quant::quantizeValue(1.0f, m.gate) == ghi;
}

/// One HardSigmoid to rewrite, and where its result goes.
struct Site {
  Node *hardSigmoid = nullptr;
  SiteMath math{};
  /// The Muls reading the result in float (a gate grid is added first).
  std::vector<Node *> floatMuls;
  std::string cost; ///< the lossy part's measured cost, for the report
};

/// Output codes of each float Mul reading the gate, before and after a
/// gate grid: the number of (input code, input code) pairs whose output
/// code moves, and the largest move in LSB. Nullopt when a Mul's other
/// input or output is not a per-tensor 8-bit grid.
std::optional<std::string> measureGateGrid(const Site &s) {
  size_t moved = 0, pairs = 0;
  int64_t worst = 0;
  bool onlyX = true; // every Mul is HardSwish's x * HardSigmoid(x)
  for (Node *mul : s.floatMuls) {
    Value *gateIn = s.hardSigmoid->getResult();
    Value *other = getOtherOperand(*mul, gateIn);
    const QuantType *o = other ? dequantizedGrid(other) : nullptr;
    if (!o || !allUsersAre(mul->getResult(), ops::QQuantize))
      return std::nullopt;
    // HardSwish reads x itself: only the pairs where both codes agree.
    bool sameX =
        storedBehind(other) == storedBehind(s.hardSigmoid->getOperand(0));
    onlyX &= sameX;
    for (auto [q, index] : getUsers(mul->getResult())) {
      const QuantType *out = getStoredQuantType(q->getResult());
      if (!isPerTensor8Bit(out))
        return std::nullopt;
      auto [lo, hi] = codesOf(s.math.in);
      auto [olo, ohi] = codesOf(o);
      for (int64_t n = lo; n <= hi; ++n) {
        float x = quant::dequantizeValue(n, s.math.in);
        float before = hardSigmoid(x, s.math.alpha, s.math.beta);
        float after = s.math.expandedGate(n);
        for (int64_t k = sameX ? n : olo; k <= (sameX ? n : ohi); ++k) {
          float y = quant::dequantizeValue(k, o);
          int64_t d = std::abs(quant::quantizeValue(y * before, out) -
                               quant::quantizeValue(y * after, out));
          moved += d != 0;
          worst = std::max(worst, d);
          ++pairs;
        }
      }
    }
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << moved << " of " << pairs
     << (onlyX ? " input codes move" : " input code pairs move");
  if (moved)
    os << " (worst " << worst << " LSB)";
  return text;
}

/// The site `hs` makes, or nullopt (with `why` for the report) when it is
/// left alone.
std::optional<Site> analyze(Context &ctx, Node &hs, std::string &why) {
  Site s;
  s.hardSigmoid = &hs;
  Value *in = hs.getOperand(0);
  Value *out = hs.getResult();
  const QuantType *a = dequantizedGrid(in);
  float alpha = getFloatAttrOr(hs, "alpha", 0.2f);
  float beta = getFloatAttrOr(hs, "beta", 0.5f);
  if (!a || out->isGraphOutput() || out->isCaptured() || !out->hasUses())
    return std::nullopt; // not between quantized tensors: nothing to say
  if (!(alpha > 0) || !std::isfinite(alpha) || !std::isfinite(beta) ||
      beta == 0) {
    why = "alpha must be positive and beta finite and not 0";
    return std::nullopt;
  }
  float scaled = gridScale(a) * alpha;
  if (!std::isnormal(scaled)) {
    why = "its input's scale times alpha is not a normal float";
    return std::nullopt;
  }
  s.math = {
      a, withParams(ctx, a, a->getStorageKind(), {scaled}, {a->getZeroPoint()}),
      nullptr, alpha, beta};
  const QuantType *gate = nullptr;
  for (auto [user, index] : getUsers(out)) {
    if (user->isa(ops::QQuantize)) {
      const QuantType *g = getStoredQuantType(user->getResult());
      if (!isPerTensor8Bit(g) || (gate && g != gate)) {
        why = "the Qs after it are not on one per-tensor 8-bit grid";
        return std::nullopt;
      }
      gate = g;
    } else if (user->isa(ops::Mul)) {
      s.floatMuls.push_back(user);
    } else {
      why = "its result is read in float by " + describeNode(*user);
      return std::nullopt;
    }
  }
  if (!s.floatMuls.empty()) {
    if (gate) {
      why = "its result is read both through a Q and in float";
      return std::nullopt;
    }
    auto [lo, hi] = codesOf(a);
    gate = withParams(ctx, a, a->getStorageKind(),
                      {1.0f / static_cast<float>(hi - lo)}, {lo});
  }
  if (gate->getStorageKind() != a->getStorageKind()) {
    why = "its input and output grids have different storage kinds";
    return std::nullopt;
  }
  s.math.gate = gate;
  if (!renamesAndClamps(s.math)) {
    why = "the Q after it does not clamp at 0 and 1 (" +
          quant::describeParams(gate) + ")";
    return std::nullopt;
  }
  if (s.floatMuls.empty()) {
    auto [lo, hi] = codesOf(a);
    for (int64_t n = lo; n <= hi; ++n)
      if (s.math.expandedGate(n) != s.math.originalGate(n)) {
        why = "code " + std::to_string(n) + " would move";
        return std::nullopt;
      }
    return s;
  }
  std::optional<std::string> cost = measureGateGrid(s);
  if (!cost) {
    why = "a Mul reading it has an input or output that is not a "
          "per-tensor 8-bit grid";
    return std::nullopt;
  }
  s.cost = *cost;
  return s;
}

/// A scalar constant on `like`'s storage kind whose DQ is `value` exactly,
/// and that DQ.
Value *exactScalar(PatternRewriter &r, const QuantType *like, float value,
                   llvm::StringRef name) {
  Context &ctx = r.getGraph().getContext();
  ElementKind kind = like->getStorageKind();
  // value = (stored - zp) * |value|: 1 - 0 above zero; below, 0 - 1 on u8.
  bool negativeU8 = value < 0 && kind == ElementKind::U8;
  int64_t stored = value > 0 ? 1 : (negativeU8 ? 0 : -1);
  const QuantType *q =
      withParams(ctx, like, kind, {std::fabs(value)}, {negativeU8 ? 1 : 0});
  Value *c =
      createConstant(r, *quant::makeDenseInt(kind, {}, {stored}), q, name);
  return createDequantize(r, c, nullptr, name.str() + "_dq")->getResult();
}

/// What apply created, to put the HardSigmoid back.
struct Applied {
  std::vector<Node *> created;
  Value *result; ///< replaces the HardSigmoid's result
  Value *input;
  std::vector<NamedAttribute> attrs;
  std::string name, resultName;
  const TensorType *resultType;
};

Applied apply(PatternRewriter &r, const Site &s) {
  Node &hs = *s.hardSigmoid;
  Graph &g = r.getGraph();
  Applied a{
      {},
      nullptr,
      hs.getOperand(0),
      std::vector<NamedAttribute>(hs.getAttrs().begin(), hs.getAttrs().end()),
      hs.getName().str(),
      hs.getResult()->getName().str(),
      hs.getResult()->getType()};
  std::string base = a.name.empty() ? a.resultName : a.name;
  bool atStart = hs.getIterator() == g.getNodes().begin();
  auto before = atStart ? g.getNodes().end() : std::prev(hs.getIterator());
  r.setRoot(&hs);
  r.setInsertionPoint(&hs);
  const TensorType *floatType = hs.getResult()->getType();
  Value *alpha = exactScalar(r, s.math.in, s.math.alpha, base + "_alpha");
  Node *mul = r.create(ops::Mul, {a.input, alpha}, {{floatType, ""}}, {},
                       base + "_mul_alpha");
  Node *renamed = createQuantize(r, mul->getResult(), s.math.scaled, nullptr,
                                 base + "_mul_alpha_q");
  Node *renamedDq = createDequantize(r, renamed->getResult(), nullptr,
                                     base + "_mul_alpha_dq");
  Value *beta = exactScalar(r, s.math.in, s.math.beta, base + "_beta");
  Node *add = r.create(ops::Add, {renamedDq->getResult(), beta},
                       {{floatType, ""}}, {}, base + "_add_beta");
  a.result = add->getResult();
  if (!s.floatMuls.empty()) {
    Node *q =
        createQuantize(r, a.result, s.math.gate, nullptr, base + "_gate_q");
    a.result = createDequantize(r, q->getResult(), nullptr, base + "_gate_dq")
                   ->getResult();
  }
  r.replaceAllUsesWith(hs.getResult(), a.result);
  auto last = hs.getIterator();
  for (auto it = atStart ? g.getNodes().begin() : std::next(before); it != last;
       ++it)
    a.created.push_back(&*it);
  r.eraseNode(hs);
  return a;
}

void undo(PatternRewriter &r, Applied &a) {
  r.setRoot(nullptr);
  r.setInsertionPoint(a.created.front());
  Node *hs = r.create(ops::HardSigmoid, {a.input},
                      {{a.resultType, a.resultName}}, a.attrs, a.name);
  r.replaceAllUsesWith(a.result, hs->getResult());
  for (Node *n : llvm::reverse(a.created))
    r.eraseNode(*n);
}

} // namespace

PreservedAnalyses ExpandHardSigmoidPass::run(Graph &g, AnalysisManager &am) {
  const BackendRules *rules = lookupBackendRules(backend);
  CostReport &report = am.getCostReport();
  PatternRewriter r(g);
  std::vector<Node *> hardSigmoids;
  for (Node &n : g.getNodes())
    if (n.isa(ops::HardSigmoid))
      hardSigmoids.push_back(&n);
  if (hardSigmoids.empty())
    return PreservedAnalyses::all();
  PlanScore current = scorePlan(g, *rules);
  bool changed = false;
  for (Node *hs : hardSigmoids) {
    std::string why;
    std::string where = describeNode(*hs);
    std::optional<Site> site = analyze(g.getContext(), *hs, why);
    if (!site) {
      if (!why.empty())
        report.recordNote(kExpandHardSigmoidPass, where + " kept: " + why);
      continue;
    }
    Applied a = apply(r, *site);
    PlanScore now = scorePlan(g, *rules);
    if (!now.improvesOn(current)) {
      undo(r, a);
      report.recordNote(kExpandHardSigmoidPass,
                        where + " kept: as int8 Mul and Add it leaves " +
                            rules->title.str() +
                            "'s fusion plan no better (INT8 MACs and "
                            "leftovers)");
      continue;
    }
    current = now;
    changed = true;
    std::string text = where + " as int8 Mul and Add (" +
                       quant::describeParams(site->math.scaled) + ", then " +
                       quant::describeParams(site->math.gate) + ")";
    if (site->floatMuls.empty())
      text += ": exact, every input code checked";
    else
      text += "; the gate quantized for the Mul reading it: " + site->cost;
    report.recordNote(kExpandHardSigmoidPass, text);
  }
  return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
