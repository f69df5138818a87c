//===- ReluIntoQuantize.cpp - Relu absorbed by a uint8 Q (relu-into-q) ----===//
//
// Lossy, reported. A Relu (or a Clip at 0 with no upper bound below the new
// grid's top) before an int8 Q with zero point 0 keeps values in [0, 127]
// steps. A uint8 Q with zero point 0 and the same scale clamps at 0 by
// itself, so the Relu disappears into the Q (ONNX Runtime then drops nothing
// and fuses Conv + Q):
//
//   %r = onnx.Relu(%c)
//   %q = q.quantize(%r) : !quant.uniform<i8:f32, 0.05>
//   =>
//   %q = q.quantize(%c) : !quant.uniform<u8:f32, 0.05>
//
// Every value on [0, 127] steps is unchanged; values that saturated at 127
// steps now keep up to 255 (the cost report gives the range gained per
// tensor). A uint8 Q with a zero point z > 0 after a Relu (torch.ao's and
// ONNX Runtime's quantizers calibrate it on the Relu's input) spends z steps
// on negatives the Relu never gives; zero point 0 and the same scale keep
// every value on [0, 255 - z] steps and the ones above up to 255:
//
//   %r = onnx.Relu(%c)
//   %q = q.quantize(%r) : !quant.uniform<u8:f32, 0.05:60>
//   =>
//   %q = q.quantize(%c) : !quant.uniform<u8:f32, 0.05>
//
// A Relu between a Q -> DQ and Qs on the same grid (torch.ao's nn.ReLU after
// a residual add keeps the add's grid) first moves before the Q, exactly
// (per tensor Q(0) = z and DQ(z) = 0, so Q(relu(DQ(Q(x)))) = Q(relu(x))),
// and the Qs after it become that Q; then it folds as above:
//
//   %q = q.quantize(%a) : A; %d = q.dequantize(%q)
//   %r = onnx.Relu(%d); %q2 = q.quantize(%r) : A
//   =>
//   %q = q.quantize(%a) : A with zero point 0   (uses of %q2 read %q) The Q's
//   whole stored region is retyped, as in
// to-uint8-activations; all users of the Relu must be such Qs.
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/QdqUtils.h"

#include "llvm/Support/Format.h"

using namespace qopt;

static constexpr const char *kReluIntoQuantizePass = "relu-into-q";

/// Relu(x), or Clip(x, 0, hi) with hi absent or at least `top`.
static bool isReluLike(const Node &n, double top) {
  if (n.isa(ops::Relu))
    return true;
  if (!n.isa(ops::Clip) || n.getNumOperands() < 2 || !n.getOperand(1))
    return false;
  const DenseElements *lo = getConstantData(n.getOperand(1));
  if (!lo || lo->getNumElements() != 1 || lo->getAsDouble(0) != 0)
    return false;
  if (n.getNumOperands() < 3 || !n.getOperand(2))
    return true;
  const DenseElements *hi = getConstantData(n.getOperand(2));
  return hi && hi->getNumElements() == 1 && hi->getAsDouble(0) >= top;
}

/// True when relu-into-q can fold a Relu into a Q on grid `t`.
static bool foldableGrid(const QuantType *t) {
  return !t->isPerAxis() &&
         ((t->getStorageKind() == ElementKind::I8 && t->getZeroPoint() == 0) ||
          (t->getStorageKind() == ElementKind::U8 && t->getZeroPoint() > 0));
}

/// Q2(Relu(DQ(Q1(x)))) with Q1 and every such Q2 on one foldable grid: the
/// Relu goes before Q1 (exact: per tensor Q(0) = z and DQ(z) = 0), the Q2s
/// become Q1 (their regions read Q1's integers), and the loop below folds
/// the Relu into Q1. Only where each Q2 is its region's only producer, so
/// that the whole of it takes Q1's new grid.
static bool hoistBetweenQdq(PatternRewriter &r, Node &relu) {
  if (!relu.isa(ops::Relu))
    return false;
  Value *deq = relu.getOperand(0);
  Node *dq = getProducer(deq, ops::QDequantize);
  if (!dq || !deq->hasOneUse() || deq->isGraphOutput() || deq->isCaptured())
    return false;
  Value *stored = dq->getOperand(0);
  Node *q1 = getProducer(stored, ops::QQuantize);
  const QuantType *t = getStoredQuantType(stored);
  Value *out = relu.getResult();
  if (!q1 || !isActivationQuantize(*q1) || !t || !foldableGrid(t) ||
      !stored->hasOneUse() || stored->isGraphOutput() || stored->isCaptured() ||
      out->isGraphOutput() || out->isCaptured() ||
      !allUsersAre(out, ops::QQuantize))
    return false;
  for (auto [q2, index] : getUsers(out)) {
    if (getStoredQuantType(q2->getResult()) != t)
      return false;
    StoredRegion region = collectStoredRegion(q2->getResult());
    if (!region.blocker.empty() || region.producers.size() != 1)
      return false;
  }
  Value *x = q1->getOperand(0);
  r.setInsertionPoint(q1);
  Node *moved = r.create(ops::Relu, {x}, {{x->getType(), ""}},
                         std::vector<NamedAttribute>(), relu.getName().str());
  q1->setOperand(0, moved->getResult());
  r.notifyModified(*q1);
  for (auto [q2, index] : getUsers(out))
    r.replaceNode(*q2, {stored});
  r.eraseNode(relu);
  if (!deq->hasUses())
    r.eraseNode(*dq);
  return true;
}

PreservedAnalyses ReluIntoQuantizePass::run(Graph &g, AnalysisManager &am) {
  PatternRewriter r(g);
  Context &ctx = g.getContext();
  bool changed = false;
  std::vector<Node *> between;
  for (Node &n : g.getNodes())
    if (n.isa(ops::Relu))
      between.push_back(&n);
  for (Node *relu : between)
    changed |= hoistBetweenQdq(r, *relu);
  std::vector<Node *> relus;
  for (Node &n : g.getNodes())
    if (n.isa(ops::Relu) || n.isa(ops::Clip))
      relus.push_back(&n);
  for (Node *relu : relus) {
    Value *out = relu->getResult();
    if (!allUsersAre(out, ops::QQuantize))
      continue;
    // Every Q must be int8, zero point 0, per tensor, on one grid, and its
    // region must be retypable.
    const QuantType *grid = nullptr;
    std::vector<StoredRegion> regions;
    bool ok = true;
    for (auto [q, index] : getUsers(out)) {
      const QuantType *t = getStoredQuantType(q->getResult());
      bool i8AtZero =
          t->getStorageKind() == ElementKind::I8 && t->getZeroPoint() == 0;
      bool u8AboveZero =
          t->getStorageKind() == ElementKind::U8 && t->getZeroPoint() > 0;
      if (t->isPerAxis() || !(i8AtZero || u8AboveZero) || (grid && t != grid)) {
        ok = false;
        break;
      }
      grid = t;
      regions.push_back(collectStoredRegion(q->getResult()));
      if (!regions.back().blocker.empty() ||
          llvm::any_of(regions.back().producers,
                       [&](Node *p) { return p->getOperand(0) != out; })) {
        ok = false;
        break;
      }
    }
    if (!ok || !grid)
      continue;
    const QuantType *u8 =
        withParams(ctx, grid, ElementKind::U8, grid->getScales(), {0});
    if (!isReluLike(*relu, 255.0 * grid->getScale()))
      continue;
    for (const StoredRegion &region : regions)
      retypeRegion(r, region, u8);
    // Steps above 0 the old grid kept: 127 on i8 zp 0, 255 - z on u8.
    double stepsBefore =
        grid->getStorageKind() == ElementKind::I8
            ? 127.0
            : 255.0 - static_cast<double>(grid->getZeroPoint());
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "%" << out->getName() << ": " << relu->getOp() << " '"
       << (relu->getName().empty() ? relu->getResult()->getName()
                                   : relu->getName())
       << "' folded into " << quant::describeParams(u8)
       << llvm::format("; values above %.4g (%d steps) now kept up to %.4g",
                       stepsBefore * grid->getScale(), int(stepsBefore),
                       255.0 * grid->getScale())
       << " instead of clipping";
    am.getCostReport().recordNote(kReluIntoQuantizePass, os.str());
    r.replaceAllUsesWith(out, relu->getOperand(0));
    r.eraseNode(*relu);
    changed = true;
  }
  return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
