//===- FoldConvBatchNorm.cpp - BatchNormalization into the conv -----------===//
//
// Lossy at float rounding, reported. With f[c] = gamma[c] / sqrt(var[c] + eps)
// computed in float32, the conv (or Gemm) gets weights w[c,...] * f[c] and
// bias (b[c] - mean[c]) * f[c] + beta[c]. The result equals running the BN
// after the conv up to float rounding of these products, so the pass is
// checked by cosine similarity (qopt-run --compare-passes), not bit for bit.
//
//   %c = onnx.Conv(%x, %w, %b)                %c = onnx.Conv(%x, %w_folded,
//   %y = onnx.BatchNormalization(%c, %g,  =>                     %b_folded)
//            %beta, %mean, %var)              (uses of %y read %c)
//
// The weight may be
//   - a float constant: scaled directly (any sign of f);
//   - a float constant behind q.quantize -> q.dequantize: the constant is
//     scaled by f[c] before the Q, and the Q/DQ scale of channel c is
//     multiplied by |f[c]| (a per-tensor grid becomes per channel), so the
//     stored integers stay what they were, negated where f[c] < 0, up to
//     float rounding of w*f / (s*|f|);
//   - a quantized constant -> q.dequantize: the integers are kept, negated
//     around the zero point (q' = 2 zp - q) where f[c] < 0, and the scale
//     of channel c is multiplied by |f[c]|. Negation saturates: a stored
//     -128 of an int8 channel with zero point 0 becomes 127, one step of
//     the new grid from the exact -(-128); the cost report counts them.
// Per-axis grids must be on the output-channel axis.
//
// Conditions: inference-form BN (training_mode 0, only its first result
// read) whose parameters are f32 constants of one element per channel; the
// conv output read by the BN alone; the bias absent or a float constant (an
// i32 bias behind a DQ would change grid: left alone). ConvTranspose folds
// when group is 1 (its output channels are weight axis 1); Gemm when alpha
// and beta are 1, A is not transposed and C is absent or one value per
// output channel (the output channel axis of B is 0 with transB, else 1).
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/QdqUtils.h"

#include <cmath>

using namespace qopt;

/// The f32 elements of a constant of shape [channels], or nothing.
static std::optional<std::vector<float>> channelVector(const Value *v,
                                                       int64_t channels) {
  const DenseElements *d = v ? getConstantData(v) : nullptr;
  if (!d || v->getType()->isQuantized() || d->getKind() != ElementKind::F32 ||
      d->getDims().size() != 1 || d->getDims()[0] != channels ||
      isOverridableInitializer(v))
    return std::nullopt;
  std::vector<float> out;
  for (int64_t i = 0; i < channels; ++i)
    out.push_back(static_cast<float>(d->getAsDouble(i)));
  return out;
}

/// `data` (f32) with every element of channel c along `axis` times f[c].
static DenseElementsRef scaleChannels(const DenseElements &data, int64_t axis,
                                      llvm::ArrayRef<float> f) {
  quant::ChannelIndexer channelOf(data.getDims(), axis);
  std::vector<float> values(data.getNumElements());
  for (int64_t i = 0; i < data.getNumElements(); ++i)
    values[i] = static_cast<float>(data.getAsDouble(i)) * f[channelOf(i)];
  return quant::makeDenseF32(data.getDims(), values);
}

/// q with the scale of channel c times f[c], per axis on `axis` (a
/// per-tensor q is spread over the channels); null when q is per axis on
/// another axis or a scale leaves (0, inf).
static const QuantType *scaledGrid(Context &ctx, const QuantType *q,
                                   int64_t axis, llvm::ArrayRef<float> f) {
  if (q->isPerAxis() && (q->isBlocked() || q->getAxis() != axis ||
                         q->getNumChannels() != f.size()))
    return nullptr;
  std::vector<float> scales;
  std::vector<int64_t> zps;
  for (size_t c = 0; c < f.size(); ++c) {
    float s = quant::getChannelScale(q, c) * f[c];
    if (!std::isfinite(s) || !(s > 0))
      return nullptr;
    scales.push_back(s);
    zps.push_back(quant::getChannelZeroPoint(q, c));
  }
  return ctx.getQuantType(q->getStorageKind(), q->getExpressedKind(), axis,
                          scales, zps);
}

/// `stored` with channel c (along `axis`) negated around q's zero point
/// where f[c] < 0, saturated to the storage range; `saturated` counts the
/// elements that could not be negated exactly.
static DenseElementsRef negateChannels(const DenseElements &stored,
                                       const QuantType *q, int64_t axis,
                                       llvm::ArrayRef<float> f,
                                       int64_t &saturated) {
  quant::ChannelIndexer channelOf(stored.getDims(), axis);
  std::vector<int64_t> values(stored.getNumElements());
  for (int64_t i = 0; i < stored.getNumElements(); ++i) {
    int64_t c = channelOf(i);
    int64_t v = stored.getAsInt(i);
    if (f[c] < 0) {
      int64_t negated = 2 * quant::getChannelZeroPoint(q, c) - v;
      v = quant::saturateToStorage(static_cast<double>(negated),
                                   q->getStorageKind());
      saturated += v != negated;
    }
    values[i] = v;
  }
  return quant::makeDenseInt(stored.getKind(), stored.getDims(), values);
}

/// The output-channel axis of the weight of a conv, ConvTranspose or Gemm
/// that a BN may fold into, or -1.
static int64_t foldableWeightAxis(const Node &n) {
  if (n.isa(ops::Conv))
    return 0;
  if (n.isa(ops::ConvTranspose))
    return getIntAttrOr(n, "group", 1) == 1 ? 1 : -1;
  if (n.isa(ops::Gemm)) {
    if (getFloatAttrOr(n, "alpha", 1.0f) != 1.0f ||
        getFloatAttrOr(n, "beta", 1.0f) != 1.0f ||
        getIntAttrOr(n, "transA", 0) != 0)
      return -1;
    return getIntAttrOr(n, "transB", 0) ? 0 : 1;
  }
  return -1;
}

static bool foldBatchNorm(Graph &g, Node &bn, CostReport &cost) {
  if (bn.getNumOperands() != 5 || getIntAttrOr(bn, "training_mode", 0) != 0)
    return false;
  for (unsigned i = 1; i < bn.getNumResults(); ++i)
    if (bn.getResult(i)->hasUses())
      return false;
  Value *convOut = bn.getOperand(0);
  Node *conv = convOut ? convOut->getDefiningNode() : nullptr;
  if (!conv || conv->getNumResults() != 1 || !convOut->hasOneUse() ||
      convOut->isGraphOutput() || convOut->isCaptured() ||
      conv->getNumOperands() < 2 || !conv->getOperand(1))
    return false;
  int64_t axis = foldableWeightAxis(*conv); // output channels of the weight
  if (axis < 0)
    return false;
  const TensorType *wt = conv->getOperand(1)->getType();
  if (!wt->hasRank() || !wt->hasStaticShape() || wt->getRank() <= axis)
    return false;
  // The BN normalises axis 1 of its input: a Gemm's is its output channel.
  const TensorType *yt = convOut->getType();
  if (!yt->hasRank() || yt->getRank() < 2 || !yt->getShape()[1].isStatic() ||
      yt->getShape()[1].size != wt->getShape()[axis].size)
    return false;
  int64_t channels = wt->getShape()[axis].size;
  auto gamma = channelVector(bn.getOperand(1), channels);
  auto beta = channelVector(bn.getOperand(2), channels);
  auto mean = channelVector(bn.getOperand(3), channels);
  auto var = channelVector(bn.getOperand(4), channels);
  if (!gamma || !beta || !mean || !var)
    return false;
  float eps = getFloatAttrOr(bn, "epsilon", 1e-5f);
  std::vector<float> f(channels), magnitude(channels);
  int64_t negative = 0;
  for (int64_t c = 0; c < channels; ++c) {
    f[c] = (*gamma)[c] / std::sqrt((*var)[c] + eps);
    if (!std::isfinite(f[c]) || f[c] == 0)
      return false; // a zero factor has no grid to scale
    magnitude[c] = std::fabs(f[c]);
    negative += f[c] < 0;
  }

  // The bias: absent (zeros) or a float constant.
  Value *bias = conv->getNumOperands() > 2 ? conv->getOperand(2) : nullptr;
  std::vector<float> b(channels, 0.0f);
  if (bias) {
    auto v = channelVector(bias, channels);
    if (!v)
      return false;
    b = *v;
  }

  // The weight, in one of the three forms.
  Context &ctx = g.getContext();
  Value *w = conv->getOperand(1);
  Node *dq = getProducer(w, ops::QDequantize);
  Node *q = dq ? getProducer(dq->getOperand(0), ops::QQuantize) : nullptr;
  Value *floatW = q ? q->getOperand(0) : dq ? nullptr : w;
  const DenseElements *floatData = floatW ? getConstantData(floatW) : nullptr;
  const DenseElements *storedData =
      dq && !q ? getConstantData(dq->getOperand(0)) : nullptr;
  const QuantType *newGrid = nullptr;
  if (floatW) {
    if (!floatData || floatW->getType()->isQuantized() ||
        floatData->getKind() != ElementKind::F32 ||
        isOverridableInitializer(floatW))
      return false;
  } else if (!storedData || isOverridableInitializer(dq->getOperand(0))) {
    return false;
  }
  const QuantType *oldGrid = nullptr;
  if (dq) {
    oldGrid = getStoredQuantType(dq->getOperand(0));
    if (!oldGrid)
      return false;
    newGrid = scaledGrid(ctx, oldGrid, axis, magnitude);
    if (!newGrid)
      return false;
  }

  // Names of the Q/DQ results, for the new ones once the old ones are gone.
  std::string qName = q ? q->getResult()->getName().str() : std::string();
  std::string dqName = dq ? dq->getResult()->getName().str() : std::string();

  // For the cost note: the BN is erased by the rewrite.
  std::string bnName = bn.getName().str(), convName = conv->describe();
  int64_t saturated = 0;
  PatternRewriter r(g);
  r.setRoot(conv);
  r.setInsertionPoint(conv);
  Value *newW;
  Value *newQOut = nullptr;
  if (floatW) {
    DenseElementsRef scaled = scaleChannels(*floatData, axis, f);
    newW = createConstant(r, *scaled, ctx.getElementType(ElementKind::F32),
                          foldedConstantName(floatW->getName()));
    if (q) {
      Node *newQ =
          createQuantize(r, newW, newGrid, nullptr, q->getName().str());
      newW = newQOut = newQ->getResult();
    }
  } else {
    DenseElementsRef stored =
        negateChannels(*storedData, oldGrid, axis, f, saturated);
    newW = createConstant(r, *stored, newGrid,
                          foldedConstantName(dq->getOperand(0)->getName()));
  }
  if (dq)
    newW = createDequantize(r, newW, nullptr, dq->getName().str())->getResult();

  std::vector<float> newB(channels);
  for (int64_t c = 0; c < channels; ++c)
    newB[c] = (b[c] - (*mean)[c]) * f[c] + (*beta)[c];
  std::string biasBase =
      bias ? bias->getName().str()
           : (conv->getName().empty() ? convOut->getName().str()
                                      : conv->getName().str()) +
                 "_bias";
  Value *newBias = createConstant(r, *quant::makeDenseF32({channels}, newB),
                                  ctx.getElementType(ElementKind::F32),
                                  foldedConstantName(biasBase));

  std::vector<Value *> params(bn.getOperands().begin() + 1,
                              bn.getOperands().end());
  conv->setOperand(1, newW);
  if (conv->getNumOperands() > 2)
    conv->setOperand(2, newBias);
  else
    conv->addOperand(newBias);
  r.notifyModified(*conv);
  std::vector<Value *> replacements(bn.getNumResults(), nullptr);
  replacements[0] = convOut;
  r.replaceNode(bn, replacements);
  eraseIfDead(r, w);
  eraseIfDead(r, bias);
  for (Value *p : params)
    eraseIfDead(r, p);
  // The new Q/DQ take the old ones' names when those are free again.
  auto rename = [&](Value *v, const std::string &name) {
    if (v && !name.empty() && v->getName() != name)
      v->setName(g.makeUniqueName(g.lookupValue(name) ? foldedConstantName(name)
                                                      : name));
  };
  rename(newQOut, qName);
  if (dq)
    rename(newW, dqName);
  std::string note = "BatchNormalization '" + bnName + "' folded into " +
                     convName + ": weights and bias rounded to float32";
  if (dq)
    note += ", weight grid scales times |gamma / sqrt(var + eps)|";
  if (negative)
    note += ", " + std::to_string(negative) + " of " +
            std::to_string(channels) + " channels negated";
  if (saturated)
    note += " (" + std::to_string(saturated) +
            " stored values saturated, one step off)";
  cost.recordNote("fold-conv-bn", note);
  return true;
}

PreservedAnalyses FoldConvBatchNormPass::run(Graph &g, AnalysisManager &am) {
  std::vector<Node *> bns;
  for (Node &n : g.getNodes())
    if (n.isa(ops::BatchNormalization))
      bns.push_back(&n);
  bool changed = false;
  // A fold erases only its BN and nodes before its conv: never another BN.
  for (Node *bn : bns)
    changed |= foldBatchNorm(g, *bn, am.getCostReport());
  return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
