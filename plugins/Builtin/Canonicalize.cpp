//===- Canonicalize.cpp - Remove ops that do nothing (canonicalize) -------===//
//
// Exact. Removes what leaves its input unchanged, so the placement passes
// and the backends' fusers see Q/DQ next to the ops that compute:
//
//   %i = onnx.Identity(%x)                       (uses read %x)
//   %t = onnx.Transpose(%x) {perm = [0, 1, 2]}   (uses read %x)
//   %r = onnx.Reshape(%x, %s) : same shape as %x (uses read %x)
//   %c = onnx.Cast(%q) {to = 2} : tensor<..x!quant.uniform<u8:..>>
//                                 the element type %q is stored in (uses read
//                                 %q; torch.ao's Q -> Cast(to=UINT8) -> DQ)
//
// and a Relu or Clip that the following Q makes redundant (ONNX Runtime's
// rule): when every user is a per-tensor q.quantize whose grid already
// clamps where the Relu/Clip would, Q(clamp(x)) == Q(x) for every x:
//
//   %r = onnx.Relu(%c)
//   %q = q.quantize(%r) : !quant.uniform<u8:f32, 0.05>   (zp 0 = u8 minimum)
//   =>
//   %q = q.quantize(%c) : !quant.uniform<u8:f32, 0.05>
//
// A Clip's lower bound is redundant when it quantizes to the storage
// minimum, its upper bound when it quantizes to the maximum.
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/IR/ConstantFolding.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/QdqUtils.h"

using namespace qopt;

namespace {

bool sameStaticShape(const TensorType *a, const TensorType *b) {
  return a->hasRank() && b->hasRank() && a->hasStaticShape() &&
         b->hasStaticShape() && a->getShape() == b->getShape();
}

/// Identity, identity-perm Transpose, shape-preserving Reshape, a Cast to
/// the stored type.
struct RemoveNoOp : RewritePattern {
  RemoveNoOp() : RewritePattern("", 1, "remove-no-op") {}
  bool matchAndRewrite(Node &n, PatternRewriter &r) const override {
    if (n.getNumResults() != 1 || n.getNumOperands() == 0)
      return false;
    Value *in = n.getOperand(0);
    Value *out = n.getResult();
    bool noOp = false;
    if (n.isa(ops::Identity)) {
      noOp = true;
    } else if (n.isa(ops::Cast)) {
      noOp = isNoOpCast(n);
    } else if (n.isa(ops::Transpose)) {
      std::vector<int64_t> perm = getIntsAttrOr(n, "perm");
      noOp = !perm.empty();
      for (size_t i = 0; i < perm.size(); ++i)
        noOp &= perm[i] == static_cast<int64_t>(i);
    } else if (n.isa(ops::Reshape) || n.isa(ops::Flatten) ||
               n.isa(ops::Squeeze) || n.isa(ops::Unsqueeze)) {
      noOp = sameStaticShape(in->getType(), out->getType());
    }
    if (!noOp || in->getType() != out->getType() ||
        r.replacementNeedsIdentity(*out, *in))
      return false;
    r.replaceNode(n, {in});
    return true;
  }
};

/// Q(x) at the storage minimum and maximum, per tensor.
bool clampsBelow(const QuantType *q, double bound) {
  auto [lo, hi] = getIntegerRange(q->getStorageKind());
  (void)hi;
  return quant::quantizeValue(static_cast<float>(bound), q, 0) == lo;
}
bool clampsAbove(const QuantType *q, double bound) {
  auto [lo, hi] = getIntegerRange(q->getStorageKind());
  (void)lo;
  return quant::quantizeValue(static_cast<float>(bound), q, 0) == hi;
}

/// A scalar constant operand, absent = infinite bound.
std::optional<double> boundOf(const Node &n, unsigned i, double absent) {
  if (i >= n.getNumOperands() || !n.getOperand(i))
    return absent;
  const DenseElements *d = getConstantData(n.getOperand(i));
  if (!d || d->getNumElements() != 1)
    return std::nullopt;
  return d->getAsDouble(0);
}

struct RemoveClampBeforeQuantize : RewritePattern {
  RemoveClampBeforeQuantize()
      : RewritePattern("", 1, "remove-clamp-before-quantize") {}
  bool matchAndRewrite(Node &n, PatternRewriter &r) const override {
    std::optional<double> lo, hi;
    if (n.isa(ops::Relu)) {
      lo = 0.0;
      hi = INFINITY;
    } else if (n.isa(ops::Clip)) {
      lo = boundOf(n, 1, -INFINITY);
      hi = boundOf(n, 2, INFINITY);
    } else {
      return false;
    }
    if (!lo || !hi)
      return false;
    Value *out = n.getResult();
    if (!allUsersAre(out, ops::QQuantize))
      return false;
    for (auto [q, index] : getUsers(out)) {
      const QuantType *t = getStoredQuantType(q->getResult());
      if (t->isPerAxis() || (std::isfinite(*lo) && !clampsBelow(t, *lo)) ||
          (std::isfinite(*hi) && !clampsAbove(t, *hi)))
        return false;
    }
    r.replaceAllUsesWith(out, n.getOperand(0));
    r.eraseNode(n);
    return true;
  }
};

} // namespace

PreservedAnalyses CanonicalizePass::run(Graph &g, AnalysisManager &) {
  PatternList patterns;
  patterns.push_back(std::make_unique<RemoveNoOp>());
  patterns.push_back(std::make_unique<RemoveClampBeforeQuantize>());
  GreedyRewriteResult result = applyPatternsGreedily(g, patterns);
  return result.changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
