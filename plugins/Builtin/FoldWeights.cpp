//===- FoldWeights.cpp - Weights stored as the integers they are ----------===//
//
// Exact (outputs bit-identical) by default. Four rewrites, each skipped when
// its condition does not hold; the weight DQ itself always stays.
//
// (a) Q of a float constant becomes a quantized constant (quantizeDense, the
//     interpreter's arithmetic); one per Q when the constant is shared.
//
//   %w = onnx.Constant() : tensor<4x3xf32>        %w_folded = onnx.Constant()
//   %q = q.quantize(%w) : tensor<4x3x!qw>    =>               : tensor<4x3x!qw>
//   %d = q.dequantize(%q) : tensor<4x3xf32>       %d = q.dequantize(%w_folded)
//
// (b) Transpose / Reshape / Squeeze / Unsqueeze / Flatten after the DQ of a
//     quantized constant are applied to the stored integers; a per-axis axis
//     is remapped by the op table (refused, and nothing done, when a reshape
//     merges it). Chains fold one op at a time. When the DQ has other users a
//     new constant + DQ serve this path and the old ones stay.
//
//   %w = onnx.Constant() : tensor<3x3x8x16x!quant.uniform<i8:f32:3, {..}>>
//   %d = q.dequantize(%w) : tensor<3x3x8x16xf32>
//   %t = onnx.Transpose(%d) {perm = [3, 2, 0, 1]} : tensor<16x8x3x3xf32>
//   %c = onnx.Conv(%x, %t)
//   =>
//   %w_folded = onnx.Constant() : tensor<16x8x3x3x!quant.uniform<i8:f32:0,..>>
//   %d = q.dequantize(%w_folded) : tensor<16x8x3x3xf32>
//   %c = onnx.Conv(%x, %d)
//
// (c) The float bias of a Conv / Gemm whose input and weight come from DQs
//     becomes i32 on scale s_x * s_w[c] (zp 0) behind a DQ, only when every
//     element survives Q then DQ bit for bit; otherwise it stays float.
//
//   %c = onnx.Conv(%dx, %dw, %b)      =>   %b_folded = onnx.Constant()
//                                                  : tensor<4x!quant.uniform<
//                                                      i32:f32:0, {sx*sw..}>>
//                                          %b_DQ = q.dequantize(%b_folded)
//                                          %c = onnx.Conv(%dx, %dw, %b_DQ)
//
// (d) Lossy, only with `fold-weights<requantize-float-weights>`: the plain
//     float weight of a Conv / ConvTranspose / Gemm whose data input comes
//     from a DQ becomes int8 per output channel (scale max|w[c]|/127, zp 0)
//     behind a DQ. Each weight is reported to the CostReport as a note with
//     its largest error in LSB of the largest channel scale.
//
//   %c = onnx.Conv(%dx, %w)           =>   %w_folded = onnx.Constant()
//                                                  : tensor<..x!quant.uniform<
//                                                      i8:f32:0, {..}>>
//                                          %w_DQ = q.dequantize(%w_folded)
//                                          %c = onnx.Conv(%dx, %w_DQ)
//
// Constants that the model lets users override (initializers also listed as
// graph inputs) are never folded.
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/PassRegistry.h"
#include "qopt/Passes/QdqUtils.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <numeric>

using namespace qopt;

static constexpr llvm::StringLiteral kFoldWeightsPass = "fold-weights";

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static std::vector<int64_t> staticDims(const TensorType *t) {
  std::vector<int64_t> dims;
  for (const Dim &d : t->getShape())
    dims.push_back(d.size);
  return dims;
}

//===----------------------------------------------------------------------===//
// (a) Q of a float constant
//===----------------------------------------------------------------------===//

static bool foldQuantizeOfConstant(Graph &g, Node &q) {
  Value *in = q.getOperand(0);
  const DenseElements *data = getConstantData(in);
  const QuantType *qt = getStoredQuantType(q.getResult());
  // A Q that is itself a graph output is not a weight: ONNX outputs are
  // produced by nodes.
  if (!data || !qt || in->getType()->isQuantized() ||
      !isFloatKind(data->getKind()) || isOverridableInitializer(in) ||
      q.getResult()->isGraphOutput() || q.getResult()->isCaptured())
    return false;
  auto folded =
      quant::quantizeDense(*data, qt, getIntAttrOr(q, "saturate", 1) != 0);
  if (!folded) {
    llvm::consumeError(folded.takeError());
    return false;
  }
  PatternRewriter r(g);
  r.setRoot(&q);
  r.setInsertionPoint(&q);
  Value *c = createConstant(r, **folded, qt, foldedConstantName(in->getName()));
  r.replaceNode(q, {c});
  eraseIfDead(r, in, /*alsoDataMovement=*/true);
  return true;
}

//===----------------------------------------------------------------------===//
// (b) Data movement after a weight DQ
//===----------------------------------------------------------------------===//

static bool isFoldableMovement(const Node &n) {
  return n.isa(ops::Transpose) || n.isa(ops::Reshape) || n.isa(ops::Squeeze) ||
         n.isa(ops::Unsqueeze) || n.isa(ops::Flatten);
}

/// The stored integers of `data` moved as `mv` moves its input, or null.
static DenseElementsRef moveData(const Node &mv, const DenseElements &data,
                                 llvm::ArrayRef<int64_t> outDims) {
  if (!mv.isa(ops::Transpose)) {
    int64_t count = 1;
    for (int64_t d : outDims)
      count *= d;
    if (count != data.getNumElements())
      return nullptr;
    return quant::reshapeDense(data, outDims);
  }
  int64_t rank = data.getDims().size();
  std::vector<int64_t> perm = getIntsAttrOr(mv, "perm");
  if (!mv.getAttr("perm")) {
    perm.resize(rank);
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  if (auto err = quant::checkPermutation(perm, rank)) {
    llvm::consumeError(std::move(err));
    return nullptr;
  }
  DenseElementsRef moved = quant::transposeDense(data, perm);
  if (!moved || moved->getDims() != outDims)
    return nullptr;
  return moved;
}

static bool foldMovementIntoWeight(Graph &g, Node &mv) {
  if (mv.getNumOperands() == 0 || mv.getNumResults() != 1)
    return false;
  Node *dq = getProducer(mv.getOperand(0), ops::QDequantize);
  if (!dq)
    return false;
  Value *stored = dq->getOperand(0);
  const DenseElements *data = getConstantData(stored);
  const QuantType *q = getStoredQuantType(stored);
  if (!data || !q || data->getKind() != q->getStorageKind() ||
      isOverridableInitializer(stored))
    return false;
  const TensorType *outType = mv.getResult()->getType();
  if (!outType->hasRank() || !outType->hasStaticShape() ||
      outType->getStorageKind() != dq->getResult()->getType()->getStorageKind())
    return false;
  std::vector<int64_t> outDims = staticDims(outType);
  DenseElementsRef moved = moveData(mv, *data, outDims);
  if (!moved)
    return false;
  // The per-axis axis crosses as the op table says, or nothing is done.
  auto newQ = quantTypeAcross(mv, q);
  if (!newQ) {
    llvm::consumeError(newQ.takeError());
    return false;
  }
  if (auto err = quant::checkQuantTypeFits(*newQ, outDims)) {
    llvm::consumeError(std::move(err));
    return false;
  }

  // The old DQ (and its constant) go away when this path is their only
  // reader; otherwise they stay for the others and this path gets its own.
  Value *dqOut = dq->getResult();
  bool dqDies =
      dqOut->hasOneUse() && !dqOut->isGraphOutput() && !dqOut->isCaptured();
  std::string oldDqName = dqOut->getName().str();
  std::string constName = foldedConstantName(stored->getName());
  // Free the name for the new constant when the old one dies with the DQ
  // (so that a chain of folds keeps one "_folded" name).
  if (dqDies && stored->hasOneUse() && stored->getName() == constName)
    stored->setName(g.makeUniqueName(constName + ".old"));

  PatternRewriter r(g);
  r.setRoot(&mv);
  r.setInsertionPoint(&mv);
  Value *c = createConstant(r, *moved, *newQ, constName);
  // Same numbers as the old DQ: keep its parameter record and node name
  // (with a suffix when the old DQ stays).
  std::string nodeName = dq->getName().str();
  if (!dqDies && !nodeName.empty())
    nodeName = foldedConstantName(nodeName);
  Node *newDq = createDequantize(r, c, dq, nodeName);
  Value *out = newDq->getResult();
  std::vector<Value *> others(mv.getOperands().begin() + 1,
                              mv.getOperands().end()); // shape, axes
  r.replaceNode(mv, {out});
  eraseIfDead(r, dqOut, /*alsoDataMovement=*/true);
  for (Value *v : others)
    eraseIfDead(r, v, /*alsoDataMovement=*/true);
  // A graph output took its name over; otherwise the DQ keeps the old DQ's
  // name when that one is gone.
  if (!out->isGraphOutput())
    out->setName(g.makeUniqueName(
        g.lookupValue(oldDqName) ? foldedConstantName(oldDqName) : oldDqName));
  return true;
}

//===----------------------------------------------------------------------===//
// (c) Float bias -> i32
//===----------------------------------------------------------------------===//

static bool foldBias(Graph &g, Node &n) {
  if (!(n.isa(ops::Conv) || n.isa(ops::Gemm)) || n.getNumOperands() < 3 ||
      !n.getOperand(0) || !n.getOperand(1) || !n.getOperand(2))
    return false;
  // alpha/beta other than 1 break the s_x * s_w bias scale.
  if (n.isa(ops::Gemm) && (getFloatAttrOr(n, "alpha", 1.0f) != 1.0f ||
                           getFloatAttrOr(n, "beta", 1.0f) != 1.0f))
    return false;
  Node *xdq = getProducer(n.getOperand(0), ops::QDequantize);
  Node *wdq = getProducer(n.getOperand(1), ops::QDequantize);
  if (!xdq || !wdq)
    return false;
  const QuantType *qx = getStoredQuantType(xdq->getOperand(0));
  const QuantType *qw = getStoredQuantType(wdq->getOperand(0));
  Value *bias = n.getOperand(2);
  const DenseElements *b = getConstantData(bias);
  if (!qx || !qw || qx->isPerAxis() || qw->isBlocked() || !b ||
      bias->getType()->isQuantized() || b->getKind() != ElementKind::F32 ||
      b->getDims().size() != 1 || qx->getExpressedKind() != ElementKind::F32 ||
      qw->getExpressedKind() != ElementKind::F32 ||
      isOverridableInitializer(bias))
    return false;
  int64_t channels = b->getDims()[0];
  if (channels == 0)
    return false;
  if (qw->isPerAxis()) {
    const OpDef *def = n.getOpDef();
    auto wi = def ? def->getWeightInfo(n) : std::nullopt;
    if (!wi || qw->getAxis() != wi->outputChannelAxis ||
        static_cast<int64_t>(qw->getNumChannels()) != channels)
      return false;
  }
  std::vector<float> scales;
  for (size_t c = 0; c < qw->getNumChannels(); ++c) {
    float s = qx->getScale() * qw->getScales()[c];
    if (!std::isfinite(s) || !(s > 0))
      return false;
    scales.push_back(s);
  }
  Context &ctx = g.getContext();
  std::optional<int64_t> axis;
  if (qw->isPerAxis())
    axis = 0;
  const QuantType *qb =
      ctx.getQuantType(ElementKind::I32, ElementKind::F32, axis, scales,
                       std::vector<int64_t>(scales.size(), 0));
  auto stored = quant::quantizeDense(*b, qb);
  if (!stored) {
    llvm::consumeError(stored.takeError());
    return false;
  }
  auto back = quant::dequantizeDense(**stored, qb, ElementKind::F32);
  if (!back) {
    llvm::consumeError(back.takeError());
    return false;
  }
  // Exact only: every element must come back bit for bit.
  if ((*back)->getRawBytes() != b->getRawBytes())
    return false;

  PatternRewriter r(g);
  r.setRoot(&n);
  r.setInsertionPoint(&n);
  std::string base = bias->getName().str();
  Value *c = createConstant(r, **stored, qb, foldedConstantName(base));
  Node *dq = createDequantize(r, c, nullptr, base + "_DQ");
  dq->getResult()->setName(g.makeUniqueName(base + "_DQ"));
  n.setOperand(2, dq->getResult());
  r.notifyModified(n);
  eraseIfDead(r, bias, /*alsoDataMovement=*/true);
  return true;
}

//===----------------------------------------------------------------------===//
// (d) Float weight -> int8 per channel (lossy, option)
//===----------------------------------------------------------------------===//

static bool requantizeFloatWeight(Graph &g, Node &n, CostReport &cost) {
  if (!(n.isa(ops::Conv) || n.isa(ops::ConvTranspose) || n.isa(ops::Gemm)) ||
      n.getNumOperands() < 2 || !n.getOperand(0) || !n.getOperand(1) ||
      !getProducer(n.getOperand(0), ops::QDequantize))
    return false;
  const OpDef *def = n.getOpDef();
  auto wi = def ? def->getWeightInfo(n) : std::nullopt;
  if (!wi || wi->operand != 1)
    return false;
  Value *w = n.getOperand(1);
  const DenseElements *data = getConstantData(w);
  if (!data || w->getType()->isQuantized() ||
      data->getKind() != ElementKind::F32 || isOverridableInitializer(w))
    return false;
  llvm::ArrayRef<int64_t> dims = data->getDims();
  int64_t axis = wi->outputChannelAxis;
  if (axis < 0 || axis >= static_cast<int64_t>(dims.size()) ||
      dims[axis] == 0 || (n.isa(ops::Gemm) && dims.size() != 2))
    return false;
  int64_t channels = dims[axis];
  quant::ChannelIndexer channelOf(dims, axis);
  std::vector<float> maxAbs(channels, 0.0f);
  for (int64_t i = 0; i < data->getNumElements(); ++i) {
    float v = static_cast<float>(data->getAsDouble(i));
    if (!std::isfinite(v))
      return false;
    float &m = maxAbs[channelOf(i)];
    m = std::max(m, std::fabs(v));
  }
  std::vector<float> scales;
  for (float m : maxAbs) {
    float s = m / 127.0f;
    // An all-zero (or denormal-range) channel: any scale stores it as 0.
    scales.push_back(s >= std::numeric_limits<float>::min() ? s : 1.0f);
  }
  Context &ctx = g.getContext();
  const QuantType *q =
      ctx.getQuantType(ElementKind::I8, ElementKind::F32, axis, scales,
                       std::vector<int64_t>(channels, 0));
  auto stored = quant::quantizeDense(*data, q);
  if (!stored) {
    llvm::consumeError(stored.takeError());
    return false;
  }
  auto back = quant::dequantizeDense(**stored, q, ElementKind::F32);
  if (!back) {
    llvm::consumeError(back.takeError());
    return false;
  }
  double maxErr = 0;
  for (int64_t i = 0; i < data->getNumElements(); ++i)
    maxErr = std::max(
        maxErr, std::fabs((*back)->getAsDouble(i) - data->getAsDouble(i)));
  float largest = *std::max_element(scales.begin(), scales.end());

  PatternRewriter r(g);
  r.setRoot(&n);
  r.setInsertionPoint(&n);
  std::string base = w->getName().str();
  Value *c = createConstant(r, **stored, q, foldedConstantName(base));
  Node *dq = createDequantize(r, c, nullptr, base + "_DQ");
  dq->getResult()->setName(g.makeUniqueName(base + "_DQ"));
  n.setOperand(1, dq->getResult());
  r.notifyModified(n);
  eraseIfDead(r, w, /*alsoDataMovement=*/true);

  std::string note;
  llvm::raw_string_ostream os(note);
  os << base << ": float -> i8 per-channel (" << channels << " channel"
     << (channels == 1 ? "" : "s") << "), max error "
     << llvm::format("%.3g", maxErr / largest) << " LSB";
  cost.recordNote(kFoldWeightsPass, os.str());
  return true;
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

llvm::Expected<FoldWeightsPass> FoldWeightsPass::parse(llvm::StringRef params) {
  auto p =
      parsePassParams(kFoldWeightsPass, params, {"requantize-float-weights"});
  if (!p)
    return p.takeError();
  FoldWeightsPass pass;
  auto it = p->find("requantize-float-weights");
  if (it != p->end()) {
    auto b = parseBoolParam(kFoldWeightsPass, it->first, it->second);
    if (!b)
      return b.takeError();
    pass.requantizeFloatWeights = *b;
  }
  return pass;
}

void FoldWeightsPass::printPipeline(llvm::raw_ostream &os) const {
  os << kFoldWeightsPass;
  if (requantizeFloatWeights)
    os << "<requantize-float-weights>";
}

/// Runs `fold` on every node (in order) until a sweep changes nothing. Nodes
/// created by a fold land before the node being folded, so a chain of
/// movement ops folds in one sweep; the bound only guards odd graphs.
template <typename Fn> static bool sweep(Graph &g, Fn fold) {
  bool changed = false;
  for (unsigned round = 0; round < 64; ++round) {
    bool any = false;
    for (auto it = g.getNodes().begin(); it != g.getNodes().end();) {
      Node &n = *it++;
      // A fold may erase nodes before `it`, never `it` itself: it only
      // erases the node it folds and that node's (earlier) producers.
      any |= fold(n);
    }
    changed |= any;
    if (!any)
      break;
  }
  return changed;
}

PreservedAnalyses FoldWeightsPass::run(Graph &g, AnalysisManager &am) {
  bool changed = false;
  changed |= sweep(g, [&](Node &n) {
    return n.isa(ops::QQuantize) && foldQuantizeOfConstant(g, n);
  });
  changed |= sweep(g, [&](Node &n) {
    return isFoldableMovement(n) && foldMovementIntoWeight(g, n);
  });
  if (requantizeFloatWeights)
    changed |= sweep(g, [&](Node &n) {
      return requantizeFloatWeight(g, n, am.getCostReport());
    });
  changed |= sweep(g, [&](Node &n) { return foldBias(g, n); });
  return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
