//===- RaiseQOperator.cpp - ONNX QOperator nodes to Q/DQ form -------------===//
//
// The inverse of lower-qoperator. A QOperator node whose scales and zero
// points are constants becomes its fake-quant chain: DQ on every quantized
// input, the float op, Q onto the output grid. The parameters move from
// operands into the types of the values that hold the integers, so the
// placement passes and fuse<backend> treat the node like any Q/DQ unit:
//
//   %y = onnx.QLinearConv(%x, %xs, %xzp, %w, %ws, %wzp, %ys, %yzp, %b)
//   =>
//   %xf = q.dequantize(%x)  : x typed !quant.uniform<u8:f32, xs:xzp>
//   %wf = q.dequantize(%w)  : w typed per output channel (ws, wzp)
//   %bf = q.dequantize(%b)  : b typed i32 on xs * ws, zero point 0
//   %yf = onnx.Conv(%xf, %wf, %bf)
//   %y  = q.quantize(%yf)   : !quant.uniform<u8:f32, ys:yzp>
//
//   onnx.QLinearConv, QLinearMatMul        Conv, MatMul
//   com.microsoft.QGemm                     Gemm (no Q without y_scale)
//   com.microsoft.QLinearAdd, QLinearMul   Add, Mul
//   com.microsoft.QLinear(Global)AveragePool (channels_last = 0)
//   com.microsoft.QLinearSigmoid, QLinearLeakyRelu, QLinearConcat
//   com.microsoft.MatMulNBits              DQ of an int4 weight, MatMul
//                                          (RaiseMatMulNBits.cpp; exact)
//
// A value's integers can carry one grid only: every QOperator node that
// reads or writes it, every Q/DQ already on it, and the values that int8
// data movement (Reshape, MaxPool, Concat, Pad with its pad value, ...)
// makes of it must agree. Where they do not, where another op computes on
// the integers with its operands' types tied to each other (Clip, linear
// Resize), or where a parameter is not a usable constant, the nodes
// involved stay as they are, and the cost report says why.
//
// Within 1 LSB, reported: the QOperator kernels accumulate in integers and
// requantize once; the chain computes in float and rounds in its Q, which
// can land on the other side of a rounding tie.
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/QdqUtils.h"
#include "qopt/Support/Error.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>

using namespace qopt;

static constexpr const char *kRaiseQOperatorPass = "raise-qoperator";

namespace {

/// Operand positions of one quantized tensor and its parameters.
struct Slot {
  int value, scale, zeroPoint;
};

/// Which input may carry per-axis parameters, and along which axis.
enum class PerAxisInput { None, ConvWeight, MatMulColumns, GemmColumns };

/// One QOperator op and the float op of its fake-quant chain.
struct QOperatorForm {
  llvm::StringRef op, floatOp;
  llvm::SmallVector<Slot, 2> inputs;
  /// Output scale and zero point operands; without a scale operand (when
  /// the op allows it: QGemm), a float result.
  Slot output;
  /// An i32 bias on inputs[0].scale * inputs[1].scale (per output channel
  /// along its last axis when the weight's are), or -1.
  int bias = -1;
  /// QLinearConcat: (value, scale, zero point) triples from here on.
  int firstVariadic = -1;
  PerAxisInput perAxis = PerAxisInput::None;
  /// Whether the output's scale may be absent, the result then float.
  bool resultMayBeFloat = false;
  /// Without an output zero point, whether the result has the first
  /// input's type (the com.microsoft ops: one type variable) or is u8.
  bool resultTypeFollowsInput = false;
};

/// The ONNX form (without an output zero point, a u8 result) and the
/// com.microsoft one (the result takes the first input's type).
QOperatorForm onnxForm(llvm::StringRef op, llvm::StringRef floatOp,
                       llvm::SmallVector<Slot, 2> inputs, Slot output) {
  QOperatorForm f;
  f.op = op;
  f.floatOp = floatOp;
  f.inputs = std::move(inputs);
  f.output = output;
  return f;
}
QOperatorForm microsoftForm(llvm::StringRef op, llvm::StringRef floatOp,
                            llvm::SmallVector<Slot, 2> inputs, Slot output) {
  QOperatorForm f = onnxForm(op, floatOp, std::move(inputs), output);
  f.resultTypeFollowsInput = true;
  return f;
}

llvm::ArrayRef<QOperatorForm> getForms() {
  static const std::vector<QOperatorForm> forms = [] {
    std::vector<QOperatorForm> f;
    Slot x{0, 1, 2}, w{3, 4, 5};
    f.push_back(onnxForm(ops::QLinearConv, ops::Conv, {x, w}, {-1, 6, 7}));
    f.back().bias = 8;
    f.back().perAxis = PerAxisInput::ConvWeight;
    f.push_back(onnxForm(ops::QLinearMatMul, ops::MatMul, {x, w}, {-1, 6, 7}));
    f.back().perAxis = PerAxisInput::MatMulColumns;
    // QGemm's Y is u8 without a zero point, as the interpreter writes it.
    f.push_back(onnxForm(ops::MsQGemm, ops::Gemm, {x, w}, {-1, 7, 8}));
    f.back().bias = 6;
    f.back().perAxis = PerAxisInput::GemmColumns;
    f.back().resultMayBeFloat = true;
    f.push_back(microsoftForm(ops::MsQLinearAdd, ops::Add, {x, w}, {-1, 6, 7}));
    f.push_back(microsoftForm(ops::MsQLinearMul, ops::Mul, {x, w}, {-1, 6, 7}));
    f.push_back(microsoftForm(ops::MsQLinearAveragePool, ops::AveragePool, {x},
                              {-1, 3, 4}));
    f.push_back(microsoftForm(ops::MsQLinearGlobalAveragePool,
                              ops::GlobalAveragePool, {x}, {-1, 3, 4}));
    f.push_back(
        microsoftForm(ops::MsQLinearSigmoid, ops::Sigmoid, {x}, {-1, 3, 4}));
    f.push_back(microsoftForm(ops::MsQLinearLeakyRelu, ops::LeakyRelu, {x},
                              {-1, 3, 4}));
    f.push_back(
        microsoftForm(ops::MsQLinearConcat, ops::Concat, {}, {-1, 0, 1}));
    f.back().firstVariadic = 2;
    return f;
  }();
  return forms;
}

const QOperatorForm *formOf(const Node &n) {
  for (const QOperatorForm &f : getForms())
    if (n.isa(f.op))
      return &f;
  return nullptr;
}

using ValueGrid = std::pair<Value *, const QuantType *>;

/// A node to raise: the grid each of its quantized values must carry.
struct Candidate {
  Node *node = nullptr;
  const QOperatorForm *form = nullptr;
  /// The quantized inputs' operands, and their grids.
  std::vector<Slot> slots;
  std::vector<ValueGrid> inputs;
  ValueGrid output{nullptr, nullptr};
  ValueGrid bias{nullptr, nullptr};
  /// Why the node stays as it is, or empty.
  std::string refusal;

  /// Inputs, output and bias (when present).
  std::vector<ValueGrid> grids() const {
    std::vector<ValueGrid> all = inputs;
    if (output.second)
      all.push_back(output);
    if (bias.first)
      all.push_back(bias);
    return all;
  }
};

class Raising {
public:
  Raising(Graph &g, CostReport &report)
      : graph(g), rewriter(g), ctx(g.getContext()), report(report) {}
  bool run();

private:
  Graph &graph;
  PatternRewriter rewriter;
  Context &ctx;
  CostReport &report;
  /// Values joined by int8 data movement hold one tensor's integers.
  llvm::EquivalenceClasses<Value *> regions;
  /// What a region holds before any candidate is raised, by its leader.
  struct RegionFacts {
    size_t size = 0;
    /// The grid of its Q/DQ-typed values, and whether they disagree.
    const QuantType *stored = nullptr;
    bool storedDisagree = false;
    /// An op other than data movement tying its values together, or null.
    Node *tie = nullptr;
  };
  llvm::DenseMap<Value *, RegionFacts> facts;
  const RegionFacts &factsOf(Value *v) {
    return facts[regions.getLeaderValue(v)];
  }

  /// The grid a (value, scale, zero point) slot of `n` gives its value, or
  /// the reason there is none.
  llvm::Expected<const QuantType *> gridOf(const Node &n, Value *v,
                                           Value *scaleOperand,
                                           Value *zeroPointOperand,
                                           std::optional<int64_t> axis);
  void collect(Candidate &c);
  /// Joins the regions and fills `facts`.
  void joinRegions();
  /// Refuses the candidates whose grids disagree with another grid of the
  /// same region; repeats until what is left agrees.
  void settleConflicts(std::vector<Candidate> &candidates);
  void raise(const Candidate &c);
};

llvm::Expected<const QuantType *> Raising::gridOf(const Node &n, Value *v,
                                                  Value *scaleOperand,
                                                  Value *zeroPointOperand,
                                                  std::optional<int64_t> axis) {
  auto fail = [&](const llvm::Twine &why) {
    return makeError(DiagLocation::node(n.getName()),
                     describeNode(n) + ": " + why);
  };
  if (!v)
    return fail("an input is absent");
  ElementKind storage = v->getType()->getStorageKind();
  if (!isQuantStorageKind(storage))
    return fail("'" + v->getName() + "' is not 8- or 16-bit integers");
  const DenseElements *scales =
      scaleOperand ? getConstantData(scaleOperand) : nullptr;
  if (!scales || scales->getKind() != ElementKind::F32)
    return fail("the scale of '" + v->getName() + "' is not a f32 constant");
  const DenseElements *zeroPoints =
      zeroPointOperand ? getConstantData(zeroPointOperand) : nullptr;
  if (zeroPointOperand && !zeroPoints)
    return fail("the zero point of '" + v->getName() + "' is not a constant");
  if (zeroPoints && zeroPoints->getKind() != storage)
    return fail("the zero point of '" + v->getName() +
                "' is not of its element type");
  int64_t count = scales->getNumElements();
  if (zeroPoints && zeroPoints->getNumElements() != count)
    return fail("'" + v->getName() + "' has not as many zero points as scales");
  std::vector<float> s;
  std::vector<int64_t> z;
  for (int64_t i = 0; i < count; ++i) {
    double scale = scales->getAsDouble(i);
    if (!(std::isfinite(scale) && scale > 0))
      return fail("the scale of '" + v->getName() +
                  "' is not finite and positive");
    s.push_back(static_cast<float>(scale));
    z.push_back(zeroPoints ? zeroPoints->getAsInt(i) : 0);
  }
  if (count == 1)
    return ctx.getQuantType(storage, ElementKind::F32, std::nullopt, s, z);
  const TensorType *t = v->getType();
  if (!axis || !t->hasRank() || scales->getDims().size() != 1 ||
      *axis >= t->getRank() || t->getShape()[*axis].size != count)
    return fail("'" + v->getName() +
                "' has per-axis parameters where the op takes none");
  return ctx.getQuantType(storage, ElementKind::F32, *axis, s, z);
}

void Raising::collect(Candidate &c) {
  const Node &n = *c.node;
  const QOperatorForm &form = *c.form;
  auto operand = [&](int i) -> Value * {
    return i >= 0 && unsigned(i) < n.getNumOperands() ? n.getOperand(i)
                                                      : nullptr;
  };
  if (getIntAttrOr(n, "channels_last", 0) != 0) {
    c.refusal = describeNode(n) + ": channels_last has no ONNX op";
    return;
  }
  std::vector<Slot> &slots = c.slots;
  slots.assign(form.inputs.begin(), form.inputs.end());
  if (form.firstVariadic >= 0) {
    if ((n.getNumOperands() - form.firstVariadic) % 3 != 0 ||
        n.getNumOperands() <= unsigned(form.firstVariadic)) {
      c.refusal = describeNode(n) + ": inputs are not (x, scale, zero "
                                    "point) triples";
      return;
    }
    for (int i = form.firstVariadic; unsigned(i) < n.getNumOperands(); i += 3)
      slots.push_back({i, i + 1, i + 2});
  }
  auto gridFor = [&](Value *v, Slot slot,
                     std::optional<int64_t> axis) -> ValueGrid {
    if (!c.refusal.empty())
      return {nullptr, nullptr};
    auto grid =
        gridOf(n, v, operand(slot.scale), operand(slot.zeroPoint), axis);
    if (!grid) {
      c.refusal = llvm::toString(grid.takeError());
      return {nullptr, nullptr};
    }
    return {v, *grid};
  };
  for (size_t i = 0; i < slots.size(); ++i) {
    std::optional<int64_t> axis;
    Value *v = operand(slots[i].value);
    if (i == 1 && v && v->getType()->hasRank()) {
      if (form.perAxis == PerAxisInput::ConvWeight)
        axis = 0;
      else if (form.perAxis == PerAxisInput::MatMulColumns &&
               v->getType()->getRank() >= 2) // a 1-D b has no columns
        axis = v->getType()->getRank() - 1;
      else if (form.perAxis == PerAxisInput::GemmColumns)
        axis = getIntAttrOr(n, "transB", 0) ? 0 : 1;
    }
    c.inputs.push_back(gridFor(v, slots[i], axis));
  }
  if (form.resultMayBeFloat && !operand(form.output.scale)) {
    if (c.refusal.empty() &&
        n.getResult()->getType()->getStorageKind() != ElementKind::F32)
      c.refusal = describeNode(n) + ": without an output scale the result "
                                    "must be f32";
    c.output = {n.getResult(), nullptr};
  } else {
    c.output = gridFor(n.getResult(), form.output, std::nullopt);
  }
  if (c.refusal.empty() && c.output.second && !operand(form.output.zeroPoint)) {
    // Without an output zero point the kernel picks the result's type.
    ElementKind written = form.resultTypeFollowsInput && !c.inputs.empty()
                              ? c.inputs[0].first->getType()->getStorageKind()
                              : ElementKind::U8;
    if (c.output.second->getStorageKind() != written)
      c.refusal = describeNode(n) + ": without a zero point the result is " +
                  getElementKindName(written).str() + ", not '" +
                  n.getResult()->getName().str() + "''s type";
  }
  Value *bias = operand(form.bias);
  if (!c.refusal.empty() || !bias)
    return;
  // The bias is added to the integer accumulator: its step is the product
  // of the input and weight scales, per output channel like the weight's
  // (QGemm's times alpha, which the float Gemm applies to the product
  // alone: C is on alpha * a_scale * b_scale).
  const QuantType *x = c.inputs[0].second, *w = c.inputs[1].second;
  float alpha =
      n.getOp() == ops::MsQGemm ? getFloatAttrOr(n, "alpha", 1.0f) : 1.0f;
  if (bias->getType()->getStorageKind() != ElementKind::I32 ||
      !getConstantData(bias)) {
    c.refusal = describeNode(n) + ": the bias is not an i32 constant";
    return;
  }
  std::vector<float> steps;
  for (float ws : w->getScales())
    steps.push_back(x->getScale() * ws * alpha);
  std::optional<int64_t> axis;
  const TensorType *biasType = bias->getType();
  if (w->isPerAxis()) {
    if (!biasType->hasRank() || biasType->getRank() == 0 ||
        biasType->getShape().back().size != int64_t(steps.size())) {
      c.refusal = describeNode(n) + ": the bias has not one value per "
                                    "output channel";
      return;
    }
    axis = biasType->getRank() - 1;
  }
  c.bias = {bias,
            ctx.getQuantType(ElementKind::I32, ElementKind::F32, axis, steps,
                             std::vector<int64_t>(steps.size(), 0))};
}

void Raising::joinRegions() {
  auto insert = [&](Value *v) {
    if (v)
      regions.insert(v);
  };
  for (Value *in : graph.getInputs())
    insert(in);
  std::vector<std::pair<Value *, Node *>> ties;
  for (Node &n : graph.getNodes()) {
    for (Value *v : n.getOperands())
      insert(v);
    for (Value *r : n.getResults())
      insert(r);
    // The values a signature gives one type variable must keep one type:
    // Pad's data, constant value and result; a Concat's inputs and result.
    // A candidate's and a Q/DQ's types come from their grids instead.
    const OpDef *def = n.getOpDef();
    if (!def || formOf(n) || n.getDialect() == "q")
      continue;
    llvm::StringMap<Value *> firstOfVar;
    auto join = [&](const SignatureSlot *slot, Value *v) {
      if (!v || !slot || slot->typeVar.empty())
        return;
      auto [it, inserted] = firstOfVar.try_emplace(slot->typeVar, v);
      if (inserted)
        return;
      // Only int8 data movement carries a grid; any other op tying stored
      // integers to each other (linear Resize, Clip, Add) reads them, even
      // values of one region already (Less(%s, Reshape(%s))).
      if (!carriesIntegers(n))
        ties.push_back({v, &n});
      regions.unionSets(it->second, v);
    };
    for (unsigned i = 0; i < n.getNumOperands(); ++i)
      join(def->operandSlot(i), n.getOperand(i));
    for (unsigned i = 0; i < n.getNumResults(); ++i)
      join(def->resultSlot(i), n.getResult(i));
  }
  for (auto it = regions.begin(); it != regions.end(); ++it) {
    if (!it->isLeader())
      continue;
    RegionFacts &f = facts[it->getData()];
    for (auto m = regions.member_begin(it); m != regions.member_end(); ++m) {
      ++f.size;
      const QuantType *q = getStoredQuantType(*m);
      if (q && f.stored && q != f.stored)
        f.storedDisagree = true;
      if (q && !f.stored)
        f.stored = q;
    }
  }
  for (auto [v, n] : ties) {
    RegionFacts &f = facts[regions.getLeaderValue(v)];
    if (!f.tie)
      f.tie = n;
  }
}

void Raising::settleConflicts(std::vector<Candidate> &candidates) {
  for (bool changed = true; changed;) {
    changed = false;
    // The grid each region must carry: its Q/DQ types, then the grids of
    // the candidates not refused yet.
    llvm::DenseMap<Value *, const QuantType *> wanted;
    llvm::SmallPtrSet<Value *, 8> conflicting;
    for (const Candidate &c : candidates) {
      if (!c.refusal.empty())
        continue;
      for (auto [v, q] : c.grids()) {
        Value *leader = regions.getLeaderValue(v);
        const RegionFacts &f = facts[leader];
        auto [it, inserted] = wanted.try_emplace(leader, q);
        if (f.storedDisagree || (f.stored && f.stored != q) ||
            (!inserted && it->second != q))
          conflicting.insert(leader);
      }
    }
    for (Candidate &c : candidates) {
      if (!c.refusal.empty())
        continue;
      for (auto [v, q] : c.grids()) {
        const RegionFacts &f = factsOf(v);
        if (conflicting.count(regions.getLeaderValue(v)))
          c.refusal = describeNode(*c.node) + ": '" + v->getName().str() +
                      "' is read or written on another grid too";
        else if (f.tie)
          c.refusal = describeNode(*c.node) + ": '" + v->getName().str() +
                      "' is tied to " + describeNode(*f.tie) +
                      ", which computes on its integers";
        else if (q->isPerAxis() && f.size > 1)
          c.refusal = describeNode(*c.node) + ": '" + v->getName().str() +
                      "' has per-axis parameters and moves through data "
                      "movement";
        else
          continue;
        changed = true;
        break;
      }
    }
  }
}

void Raising::raise(const Candidate &c) {
  Node &n = *c.node;
  rewriter.setInsertionPoint(&n);
  rewriter.setRoot(&n);
  std::vector<Value *> floats;
  // The operands as they are now: raising the producer of one replaced it.
  for (const Slot &slot : c.slots)
    floats.push_back(
        createDequantize(rewriter, n.getOperand(slot.value))->getResult());
  if (c.bias.first)
    floats.push_back(
        createDequantize(rewriter, n.getOperand(c.form->bias))->getResult());
  std::vector<NamedAttribute> attrs;
  for (const NamedAttribute &a : n.getAttrs())
    if (a.name != "channels_last")
      attrs.push_back(a);
  const TensorType *floatType =
      withElement(n.getResult()->getType(), ElementKind::F32);
  Node *op = rewriter.create(c.form->floatOp, floats, {{floatType, ""}},
                             std::move(attrs), n.getName().str());
  Value *y = op->getResult();
  if (c.output.second)
    y = createQuantize(rewriter, y, c.output.second)->getResult();
  rewriter.replaceNode(n, {y});
}

bool Raising::run() {
  std::vector<Candidate> candidates;
  for (Node &n : graph.getNodes())
    if (const QOperatorForm *form = formOf(n)) {
      Candidate c;
      c.node = &n;
      c.form = form;
      collect(c);
      candidates.push_back(std::move(c));
    }
  if (candidates.empty())
    return false;
  joinRegions();
  settleConflicts(candidates);

  // Every value of a region that a raised node touches takes its grid.
  llvm::DenseMap<Value *, const QuantType *> gridOfRegion;
  for (const Candidate &c : candidates)
    if (c.refusal.empty())
      for (auto [v, q] : c.grids())
        gridOfRegion[regions.getLeaderValue(v)] = q;
  for (auto [leader, q] : gridOfRegion)
    for (auto m = regions.findLeader(leader); m != regions.member_end(); ++m)
      if (!getStoredQuantType(*m))
        rewriter.setType(**m, withElement((*m)->getType(), q));

  unsigned raised = 0;
  std::vector<std::string> refusals;
  for (const Candidate &c : candidates) {
    if (!c.refusal.empty()) {
      refusals.push_back(c.refusal);
      continue;
    }
    raise(c);
    ++raised;
  }
  if (raised)
    report.recordNote(kRaiseQOperatorPass,
                      std::to_string(raised) +
                          " QOperator node(s) raised to Q/DQ form: float "
                          "math where the node accumulated in integers, "
                          "within 1 LSB of its output");
  for (const std::string &why : refusals)
    report.recordNote(kRaiseQOperatorPass, "left as it is: " + why);
  return raised > 0;
}

} // namespace

PreservedAnalyses RaiseQOperatorPass::run(Graph &g, AnalysisManager &am) {
  bool nbits = raiseMatMulNBits(g) > 0;
  return Raising(g, am.getCostReport()).run() || nbits
             ? PreservedAnalyses::none()
             : PreservedAnalyses::all();
}
