//===- FoldConvBatchNorm.cpp - BatchNormalization into the conv -----------===//
//
// Exact at float level: with f[c] = gamma[c] / sqrt(var[c] + eps) computed in
// float32, the conv gets weights w[c,...] * f[c] and bias
// (b[c] - mean[c]) * f[c] + beta[c]. The result equals running the BN after
// the conv up to float rounding of these products, so the pass is checked
// by cosine similarity (qopt-run --compare-passes), not bit for bit.
//
//   %c = onnx.Conv(%x, %w, %b)                %c = onnx.Conv(%x, %w_folded,
//   %y = onnx.BatchNormalization(%c, %g,  =>                     %b_folded)
//            %beta, %mean, %var)              (uses of %y read %c)
//
// The weight may be
//   - a float constant: scaled directly (any sign of f);
//   - a float constant behind q.quantize -> q.dequantize: the constant is
//     scaled before the Q, and the Q/DQ scale of channel c is multiplied by
//     f[c] (a per-tensor grid becomes per channel), so the stored integers
//     stay what they were up to float rounding of w*f / (s*f);
//   - a quantized constant -> q.dequantize: the integers are kept and the
//     scale of channel c is multiplied by f[c].
// The quantized forms need every f[c] > 0 (a negative factor would need the
// integers negated); otherwise the conv is left alone. Per-axis grids must be
// on the output-channel axis.
//
// Conditions: inference-form BN (training_mode 0, only its first result
// read) whose parameters are f32 constants of one element per channel; the
// conv output read by the BN alone; the bias absent or a float constant (an
// i32 bias behind a DQ would change grid: left alone). ConvTranspose folds
// too when group is 1 (its output channels are weight axis 1).
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/QdqUtils.h"

#include <cmath>

using namespace qopt;

/// "<name>_folded", without stacking suffixes when folding again.
static std::string foldedName(llvm::StringRef name) {
  name.consume_back("_folded");
  return (name.empty() ? std::string("weight") : name.str()) + "_folded";
}

/// Erases the producer of `v` once unused, then its operands' producers
/// (constants, Q/DQ and BN parameters left behind by the fold).
static void eraseIfDead(PatternRewriter &r, Value *v) {
  Node *n = v ? v->getDefiningNode() : nullptr;
  if (!n || !(n->isa(ops::Constant) || n->isa(ops::Dequantize) ||
              n->isa(ops::Quantize)))
    return;
  for (const Value *res : n->getResults())
    if (res->hasUses())
      return;
  std::vector<Value *> operands(n->getOperands().begin(),
                                n->getOperands().end());
  r.eraseNode(*n);
  for (Value *op : operands)
    eraseIfDead(r, op);
}

static bool isOverridable(const Value *v) {
  const auto &names = v->getGraph()->getInitializerInputs();
  return llvm::is_contained(names, v->getName().str());
}

/// The f32 elements of a constant of shape [channels], or nothing.
static std::optional<std::vector<float>> channelVector(const Value *v,
                                                       int64_t channels) {
  const DenseElements *d = v ? getConstantData(v) : nullptr;
  if (!d || v->getType()->isQuantized() || d->getKind() != ElementKind::F32 ||
      d->getDims().size() != 1 || d->getDims()[0] != channels ||
      isOverridable(v))
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
  if (q->isPerAxis() &&
      (q->getAxis() != axis || q->getNumChannels() != f.size()))
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

static bool foldBatchNorm(Graph &g, Node &bn) {
  if (bn.getNumOperands() != 5 || getIntAttrOr(bn, "training_mode", 0) != 0)
    return false;
  for (unsigned i = 1; i < bn.getNumResults(); ++i)
    if (bn.getResult(i)->hasUses())
      return false;
  Value *convOut = bn.getOperand(0);
  Node *conv = convOut ? convOut->getDefiningNode() : nullptr;
  if (!conv || !(conv->isa("onnx.Conv") || conv->isa("onnx.ConvTranspose")) ||
      conv->getNumResults() != 1 || !convOut->hasOneUse() ||
      convOut->isGraphOutput() || convOut->isCaptured() ||
      conv->getNumOperands() < 2 || !conv->getOperand(1))
    return false;
  int64_t axis = 0; // output channels of the weight
  if (conv->isa("onnx.ConvTranspose")) {
    if (getIntAttrOr(*conv, "group", 1) != 1)
      return false;
    axis = 1;
  }
  const TensorType *wt = conv->getOperand(1)->getType();
  if (!wt->hasRank() || !wt->hasStaticShape() || wt->getRank() <= axis)
    return false;
  int64_t channels = wt->getShape()[axis].size;
  auto gamma = channelVector(bn.getOperand(1), channels);
  auto beta = channelVector(bn.getOperand(2), channels);
  auto mean = channelVector(bn.getOperand(3), channels);
  auto var = channelVector(bn.getOperand(4), channels);
  if (!gamma || !beta || !mean || !var)
    return false;
  float eps = getFloatAttrOr(bn, "epsilon", 1e-5f);
  std::vector<float> f(channels);
  bool allPositive = true;
  for (int64_t c = 0; c < channels; ++c) {
    f[c] = (*gamma)[c] / std::sqrt((*var)[c] + eps);
    if (!std::isfinite(f[c]))
      return false;
    allPositive &= f[c] > 0;
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
  Node *dq = getProducer(w, ops::Dequantize);
  Node *q = dq ? getProducer(dq->getOperand(0), ops::Quantize) : nullptr;
  Value *floatW = q ? q->getOperand(0) : dq ? nullptr : w;
  const DenseElements *floatData = floatW ? getConstantData(floatW) : nullptr;
  const DenseElements *storedData =
      dq && !q ? getConstantData(dq->getOperand(0)) : nullptr;
  const QuantType *newGrid = nullptr;
  if (floatW) {
    if (!floatData || floatW->getType()->isQuantized() ||
        floatData->getKind() != ElementKind::F32 || isOverridable(floatW))
      return false;
  } else if (!storedData || isOverridable(dq->getOperand(0))) {
    return false;
  }
  if (dq) {
    const QuantType *old = getStoredQuantType(dq->getOperand(0));
    if (!allPositive || !old)
      return false;
    newGrid = scaledGrid(ctx, old, axis, f);
    if (!newGrid)
      return false;
  }

  // Names of the Q/DQ results, for the new ones once the old ones are gone.
  std::string qName = q ? q->getResult()->getName().str() : std::string();
  std::string dqName = dq ? dq->getResult()->getName().str() : std::string();

  PatternRewriter r(g);
  r.setRoot(conv);
  r.setInsertionPoint(conv);
  Value *newW;
  Value *newQOut = nullptr;
  if (floatW) {
    DenseElementsRef scaled = scaleChannels(*floatData, axis, f);
    newW = createConstant(r, *scaled, ctx.getElementType(ElementKind::F32),
                          foldedName(floatW->getName()));
    if (q) {
      Node *newQ =
          createQuantize(r, newW, newGrid, nullptr, q->getName().str());
      newW = newQOut = newQ->getResult();
    }
  } else {
    newW = createConstant(r, *storedData, newGrid,
                          foldedName(dq->getOperand(0)->getName()));
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
                                  foldedName(biasBase));

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
      v->setName(
          g.makeUniqueName(g.lookupValue(name) ? foldedName(name) : name));
  };
  rename(newQOut, qName);
  if (dq)
    rename(newW, dqName);
  return true;
}

PreservedAnalyses FoldConvBatchNormPass::run(Graph &g, AnalysisManager &) {
  std::vector<Node *> bns;
  for (Node &n : g.getNodes())
    if (n.isa("onnx.BatchNormalization"))
      bns.push_back(&n);
  bool changed = false;
  // A fold erases only its BN and nodes before its conv: never another BN.
  for (Node *bn : bns)
    changed |= foldBatchNorm(g, *bn);
  return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
