//===- LowerConv.cpp - q.conv to an int8 conv step ------------------------===//
//
//   %y = q.conv(%x, %w, %b, %r) {activation = "relu"}
//        : tensor<1x64x56x56x!q.i8<0.05:-3>>
//     =>
//   conv step  x: NHWC u8 (zero point -3 + 128), w packed for the ISA,
//              epilogue: scale[c] = s_x * s_w[c], bias DQ(b), residual on
//              r's grid, relu, output grid 0.05 : -3 + 128
//
// The step runs the unit when x and the residual are per-tensor int8 grids,
// the weights a constant s8 tensor with zero points 0 (per tensor or per
// output channel), the bias constant, the activation one of the epilogue's
// and the result an int8 grid or f32.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderImpl.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/QuantMath.h"

#include "llvm/ADT/StringSwitch.h"

using namespace qopt;
using namespace qopt::codegen;
using namespace qopt::rt;

namespace {

/// The activation of a unit's `activation` attribute, if the conv epilogue
/// has it.
std::optional<Activation> parseActivation(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Activation>>(name)
      .Case("none", Activation::None)
      .Case("relu", Activation::Relu)
      .Case("leaky_relu", Activation::LeakyRelu)
      .Case("clip", Activation::Clip)
      .Case("sigmoid", Activation::Sigmoid)
      .Case("tanh", Activation::Tanh)
      .Case("hard_sigmoid", Activation::HardSigmoid)
      .Case("hard_swish", Activation::HardSwish)
      .Case("silu", Activation::Silu)
      .Default(std::nullopt);
}

/// A per-tensor s8/u8 grid over f32: the int8 kernels' activations.
const QuantType *getActivationGrid(const Value *v) {
  const QuantType *q = v ? v->getType()->getQuantType() : nullptr;
  if (!q || q->isPerAxis() || q->getExpressedKind() != ElementKind::F32)
    return nullptr;
  if (q->getStorageKind() != ElementKind::I8 &&
      q->getStorageKind() != ElementKind::U8)
    return nullptr;
  return q;
}

/// The zero point as the kernels store the tensor (u8).
int32_t storedZeroPoint(const QuantType *q) {
  return static_cast<int32_t>(q->getZeroPoint()) +
         (q->getStorageKind() == ElementKind::I8 ? 128 : 0);
}

} // namespace

llvm::Expected<bool> PlanBuilder::lowerConv(const Node &n) {
  constexpr bool none = false;
  const Value *x = n.getOperand(0);
  const Value *w = n.getNumOperands() > 1 ? n.getOperand(1) : nullptr;
  const Value *b = n.getNumOperands() > 2 ? n.getOperand(2) : nullptr;
  const Value *r = n.getNumOperands() > 3 ? n.getOperand(3) : nullptr;
  const Value *y = n.getResult();
  const QuantType *xq = getActivationGrid(x);
  if (!xq || !w || !x->getType()->hasRank() || x->getType()->getRank() != 4)
    return none;

  // Weights: a constant s8 OIHW tensor, zero points 0, per output channel
  // or per tensor.
  const DenseElements *wData = getConstantData(w);
  const QuantType *wq = w->getType()->getQuantType();
  if (!wData || !wq || wData->getKind() != ElementKind::I8 ||
      wData->getDims().size() != 4 || (wq->isPerAxis() && wq->getAxis() != 0))
    return none;
  for (int64_t z : wq->getZeroPoints())
    if (z != 0)
      return none;

  // The result: a per-tensor int8 grid, or f32.
  const QuantType *yq = getActivationGrid(y);
  if (!yq && (y->getType()->isQuantized() ||
              y->getType()->getStorageKind() != ElementKind::F32))
    return none;
  const QuantType *rq = r ? getActivationGrid(r) : nullptr;
  if (r && !rq)
    return none;

  auto activation = parseActivation(
      n.getAttr("activation") && n.getAttr("activation")->isString()
          ? llvm::StringRef(*n.getAttr("activation")->getIf<std::string>())
          : "none");
  if (!activation)
    return none;

  auto xShape = staticShape(x);
  if (!xShape)
    return xShape.takeError();
  auto yShape = staticShape(y);
  if (!yShape)
    return yShape.takeError();
  llvm::ArrayRef<int64_t> wDims = wData->getDims();
  auto geometry = ConvStep::getShape(makeKernelOp(n), *xShape,
                                     Shape(wDims.begin(), wDims.end()));
  if (!geometry) {
    // The float step reports what is wrong with the attributes.
    llvm::consumeError(geometry.takeError());
    return none;
  }
  const Int8ConvShape &s = *geometry;
  if (*yShape != Shape{s.batch, s.outC, s.outH(), s.outW()})
    return none;

  Int8Epilogue e;
  e.inputZero = storedZeroPoint(xq);
  for (int64_t c = 0, count = wq->isPerAxis() ? s.outC : 1; c < count; ++c)
    e.scale.push_back(xq->getScale() * quant::getChannelScale(wq, c));
  if (b) {
    const DenseElements *bData = getConstantData(b);
    const QuantType *bq = b->getType()->getQuantType();
    if (!bData || bData->getNumElements() != s.outC ||
        (!bq && bData->getKind() != ElementKind::F32))
      return none;
    for (int64_t c = 0; c < s.outC; ++c)
      e.bias.push_back(bq ? quant::dequantizeValue(bData->getAsInt(c), bq, c)
                          : static_cast<float>(bData->getAsDouble(c)));
  }
  e.activation = *activation;
  std::vector<float> params;
  if (const Attribute *a = n.getAttr("activation_params"))
    if (auto *v = a->getIf<std::vector<float>>())
      params = *v;
  e.alpha = params.size() > 0 ? params[0] : 0;
  e.beta = params.size() > 1 ? params[1] : 0;
  if (r) {
    auto rShape = staticShape(r);
    if (!rShape)
      return rShape.takeError();
    if (*rShape != *yShape)
      return none;
    e.hasResidual = true;
    e.residualAfterActivation =
        n.getIntAttr("residual_after_activation").value_or(0) != 0;
    e.residualScale = rq->getScale();
    e.residualZero = storedZeroPoint(rq);
  }
  if (yq) {
    e.outputScale = yq->getScale();
    e.outputZero = storedZeroPoint(yq);
  }

  auto xId = tensorFor(x, PlanLayout::Nhwc);
  if (!xId)
    return xId.takeError();
  std::vector<int> inputs{*xId};
  if (r) {
    auto rId = tensorFor(r, PlanLayout::Nhwc);
    if (!rId)
      return rId.takeError();
    inputs.push_back(*rId);
  }
  auto yId = defineResult(y, PlanLayout::Nhwc,
                          yq ? yq->getStorageKind() : ElementKind::F32);
  if (!yId)
    return yId.takeError();
  auto step = std::make_unique<ConvStep>(
      n.getName().str(),
      Int8Conv(options.isa, s,
               reinterpret_cast<const int8_t *>(wData->getRawBytes().data()),
               std::move(e)));
  addStep(std::move(step), n, std::move(inputs), {*yId});
  return true;
}
