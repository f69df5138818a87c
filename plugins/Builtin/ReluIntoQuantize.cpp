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
//   %q = q.quantize(%c) : !quant.uniform<u8:f32, 0.05> The Q's whole stored
//   region is retyped, as in
// to-uint8-activations; all users of the Relu must be such Qs.
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/QdqUtils.h"

#include "llvm/Support/Format.h"

using namespace qopt;

static constexpr const char *kPassName = "relu-into-q";

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

PreservedAnalyses ReluIntoQuantizePass::run(Graph &g, AnalysisManager &am) {
  PatternRewriter r(g);
  Context &ctx = g.getContext();
  bool changed = false;
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
    am.getCostReport().recordNote(kPassName, os.str());
    r.replaceAllUsesWith(out, relu->getOperand(0));
    r.eraseNode(*relu);
    changed = true;
  }
  return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
