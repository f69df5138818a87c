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
// the weights a constant s8 or u8 tensor (per tensor or per output channel;
// u8 weights become s8 values - 128, their zero points too), the bias
// constant, the activation one of the epilogue's
// and the result an int8 grid or f32.
//
// q.conv_transpose is the same step on an input dilated by the strides:
//
//   y[o, p] = sum of x[i] * W[i, o, k] over i, k with i*s + k*d - pb = p
//           = a conv of x with s - 1 zero points between its pixels,
//             weights W'[o, i, k] = W[i, o, K - 1 - k], pads
//             d * (K - 1) - pb before and out - (in - 1) * s - 1 + pb after
//
// when neither pad is negative (a crop) and the weights are per tensor or
// per output channel (ONNX's axis 1).
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderImpl.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"

#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <cmath>

using namespace qopt;
using namespace qopt::codegen;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

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

/// The zero point as the kernels store the tensor (u8).
int32_t storedZeroPoint(const QuantType *q) {
  return static_cast<int32_t>(q->getZeroPoint()) +
         (q->getStorageKind() == ElementKind::I8 ? 128 : 0);
}

/// ConvTranspose's output extent and begin pad along one axis, by the
/// reference kernel's rules (pads, output_padding, output_shape, auto_pad).
struct TransposedAxis {
  int64_t out, padBegin;
};
std::optional<TransposedAxis>
transposedAxis(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
               int64_t outPad, int64_t padBegin, int64_t padEnd,
               std::optional<int64_t> target, llvm::StringRef autoPad) {
  int64_t full = stride * (in - 1) + outPad + (kernel - 1) * dilation + 1;
  if (target || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    int64_t wanted = target ? *target : in * stride;
    int64_t total = full - wanted;
    int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
    return TransposedAxis{wanted,
                          autoPad == "SAME_UPPER" ? half : total - half};
  }
  if (autoPad != "NOTSET")
    padBegin = padEnd = 0;
  return TransposedAxis{full - padBegin - padEnd, padBegin};
}

/// The conv step of 2-D q.conv_transpose `n` on input `x` (NCHW) and
/// weights of `wDims` (C x M/group x kH x kW), with its weights (OIHW),
/// or none.
std::optional<std::pair<Int8ConvShape, std::vector<int8_t>>>
transposedAsConv(const Node &n, const Shape &x, llvm::ArrayRef<int64_t> wDims,
                 const int8_t *w) {
  int64_t group = n.getIntAttr("group").value_or(1);
  if (x.size() != 4 || wDims.size() != 4 || group < 1 || x[1] % group ||
      wDims[0] != x[1])
    return std::nullopt;
  Shape strides = getIntsAttrOr(n, "strides", {1, 1});
  Shape dilations = getIntsAttrOr(n, "dilations", {1, 1});
  Shape outPad = getIntsAttrOr(n, "output_padding", {0, 0});
  Shape pads = getIntsAttrOr(n, "pads", {0, 0, 0, 0});
  Shape outShape = getIntsAttrOr(n, "output_shape", {});
  std::string autoPad = getStringAttrOr(n, "auto_pad", "NOTSET");
  if (strides.size() != 2 || dilations.size() != 2 || outPad.size() != 2 ||
      pads.size() != 4 ||
      !(outShape.empty() || outShape.size() == 2 || outShape.size() == 4))
    return std::nullopt;
  // Sizes the int8 conv takes at all, so the arithmetic below stays small.
  constexpr int64_t kLimit = int64_t(1) << 31;
  auto within = [&](llvm::ArrayRef<int64_t> values, int64_t low) {
    return llvm::all_of(values,
                        [&](int64_t v) { return v >= low && v <= kLimit; });
  };
  if (!within(strides, 1) || !within(dilations, 1) || !within(outPad, 0) ||
      !within(pads, 0) || !within(outShape, 1) || !within(x, 1) ||
      !within(wDims, 1))
    return std::nullopt;
  if (outShape.size() == 4)
    outShape.erase(outShape.begin(), outShape.begin() + 2);
  Int8ConvShape s;
  s.batch = x[0];
  s.inC = x[1];
  s.inH = x[2];
  s.inW = x[3];
  s.outC = wDims[1] * group;
  s.kernelH = wDims[2];
  s.kernelW = wDims[3];
  s.groups = group;
  s.dilationH = dilations[0];
  s.dilationW = dilations[1];
  s.inputDilationH = strides[0];
  s.inputDilationW = strides[1];
  int64_t *padsBegin[2] = {&s.padTop, &s.padLeft};
  int64_t *padsEnd[2] = {&s.padBottom, &s.padRight};
  for (int d = 0; d < 2; ++d) {
    int64_t in = x[2 + d], kernel = wDims[2 + d];
    auto axis = transposedAxis(
        in, kernel, strides[d], dilations[d], outPad[d], pads[d], pads[d + 2],
        outShape.empty() ? std::nullopt : std::optional<int64_t>(outShape[d]),
        autoPad);
    if (!axis || axis->out < 1)
      return std::nullopt;
    *padsBegin[d] = dilations[d] * (kernel - 1) - axis->padBegin;
    *padsEnd[d] = axis->out - (in - 1) * strides[d] - 1 + axis->padBegin;
    if (*padsBegin[d] < 0 || *padsEnd[d] < 0)
      return std::nullopt; // a crop
  }
  // W[g * cin + i][o][ky][kx] -> W'[g * mout + o][i][kH - 1 - ky][kW - 1 - kx]
  int64_t cin = s.inC / group, mout = wDims[1], kH = s.kernelH, kW = s.kernelW;
  std::vector<int8_t> oihw(s.outC * cin * kH * kW);
  for (int64_t g = 0; g < group; ++g)
    for (int64_t i = 0; i < cin; ++i)
      for (int64_t o = 0; o < mout; ++o)
        for (int64_t ky = 0; ky < kH; ++ky)
          for (int64_t kx = 0; kx < kW; ++kx)
            oihw[(((g * mout + o) * cin + i) * kH + kH - 1 - ky) * kW + kW - 1 -
                 kx] = w[(((g * cin + i) * mout + o) * kH + ky) * kW + kx];
  return std::make_pair(s, std::move(oihw));
}

} // namespace

bool codegen::isDequantizedFinite(const QuantType &q, int32_t centered) {
  return llvm::all_of(q.getScales(), [&](float scale) {
    return std::isfinite(float(centered) * scale);
  });
}

const QuantType *codegen::getActivationGrid(const Value *v) {
  const QuantType *q = v ? v->getType()->getQuantType() : nullptr;
  if (!q || q->isPerAxis() || q->getExpressedKind() != ElementKind::F32)
    return nullptr;
  if (q->getStorageKind() != ElementKind::I8 &&
      q->getStorageKind() != ElementKind::U8)
    return nullptr;
  return q;
}

QuantizeGrid codegen::getQuantizeGrid(const QuantType &q, uint8_t flip) {
  QuantizeGrid grid;
  grid.scale = q.getScale();
  grid.zero = int32_t(q.getZeroPoint());
  grid.isSigned = q.getStorageKind() == ElementKind::I8;
  grid.flip = flip;
  return grid;
}

std::optional<WeightedUnit> codegen::getWeightedUnit(const Node &n,
                                                     int64_t weightRank,
                                                     int64_t channelAxis) {
  WeightedUnit u;
  auto operand = [&](unsigned i) {
    return n.getNumOperands() > i ? n.getOperand(i) : nullptr;
  };
  u.x = operand(0);
  u.w = operand(1);
  u.bias = operand(2);
  u.residual = operand(3);
  u.y = n.getResult();
  u.xq = getActivationGrid(u.x);
  if (!u.xq || !u.w)
    return std::nullopt;

  // Weights: a constant s8 or u8 tensor, per output channel or per tensor.
  const DenseElements *wData = getConstantData(u.w);
  u.wq = u.w->getType()->getQuantType();
  if (!wData || !u.wq ||
      (wData->getKind() != ElementKind::I8 &&
       wData->getKind() != ElementKind::U8) ||
      int64_t(wData->getDims().size()) != weightRank ||
      (u.wq->isPerAxis() && u.wq->getAxis() != channelAxis))
    return std::nullopt;
  u.wDims = wData->getDims();
  // The kernels multiply s8: u8 weights are the same numbers - 128, their
  // zero points too.
  llvm::StringRef bytes = wData->getRawBytes();
  int32_t shift = wData->getKind() == ElementKind::U8 ? 128 : 0;
  u.weights.reserve(bytes.size());
  for (char b : bytes)
    u.weights.push_back(int8_t(int32_t(uint8_t(b)) - shift));
  for (int64_t z : u.wq->getZeroPoints())
    u.weightZeros.push_back(int32_t(z) - shift);
  // The reference dequantizes in f32: a weight whose dequantized value
  // overflows to inf gives inf - inf or inf * 0 = NaN in its sums, which
  // integer sums cannot reproduce (128 LSB apart after a zero point of
  // 128). Such a unit stays a float step; the bound is the largest
  // |w - z| times the largest scale, each as the f32 the reference uses.
  int32_t largestCentered = 0;
  int32_t lowestZero = 0, highestZero = 0;
  if (!u.weightZeros.empty()) {
    lowestZero = *std::min_element(u.weightZeros.begin(), u.weightZeros.end());
    highestZero = *std::max_element(u.weightZeros.begin(), u.weightZeros.end());
  }
  for (int8_t w : u.weights)
    largestCentered = std::max(
        {largestCentered, std::abs(w - lowestZero), std::abs(w - highestZero)});
  if (!isDequantizedFinite(*u.wq, largestCentered) ||
      !isDequantizedFinite(*u.xq, 255))
    return std::nullopt;
  if (llvm::all_of(u.weightZeros, [](int32_t z) { return z == 0; }))
    u.weightZeros.clear();

  // The result: a per-tensor int8 grid, or f32.
  u.yq = getActivationGrid(u.y);
  if (!u.yq && (u.y->getType()->isQuantized() ||
                u.y->getType()->getStorageKind() != ElementKind::F32))
    return std::nullopt;
  u.rq = u.residual ? getActivationGrid(u.residual) : nullptr;
  if (u.residual && !u.rq)
    return std::nullopt;

  Int8Epilogue &e = u.epilogue;
  e.inputZero = storedZeroPoint(u.xq);
  auto activation = parseActivation(
      n.getAttr("activation") && n.getAttr("activation")->isString()
          ? llvm::StringRef(*n.getAttr("activation")->getIf<std::string>())
          : "none");
  if (!activation)
    return std::nullopt;
  e.activation = *activation;
  std::vector<float> params;
  if (const Attribute *a = n.getAttr("activation_params"))
    if (auto *v = a->getIf<std::vector<float>>())
      params = *v;
  e.alpha = params.size() > 0 ? params[0] : 0;
  e.beta = params.size() > 1 ? params[1] : 0;
  if (u.rq) {
    e.hasResidual = true;
    e.residualAfterActivation =
        n.getIntAttr("residual_after_activation").value_or(0) != 0;
    e.residualScale = u.rq->getScale();
    e.residualZero = storedZeroPoint(u.rq);
  }
  if (u.yq) {
    e.outputScale = u.yq->getScale();
    e.outputZero = storedZeroPoint(u.yq);
  }
  return u;
}

std::optional<std::vector<float>>
codegen::getColumnBias(const Value *addend, int64_t columns, double beta) {
  const DenseElements *data = getConstantData(addend);
  const QuantType *q = addend->getType()->getQuantType();
  if (!data || (!q && data->getKind() != ElementKind::F32))
    return std::nullopt;
  llvm::ArrayRef<int64_t> dims = data->getDims();
  int64_t count = data->getNumElements();
  bool alongLastAxis =
      count == columns && (dims.empty() || dims.back() == columns) &&
      llvm::all_of(dims.drop_back(), [](int64_t d) { return d == 1; });
  if (count != 1 && !alongLastAxis)
    return std::nullopt;
  std::vector<float> bias;
  for (int64_t c = 0; c < columns; ++c) {
    int64_t i = count == 1 ? 0 : c;
    double value = q ? quant::dequantizeValue(data->getAsInt(i), q, i)
                     : data->getAsDouble(i);
    bias.push_back(float(beta * value));
  }
  return bias;
}

llvm::Expected<bool>
PlanBuilder::addWeightedStep(const Node &n, const WeightedUnit &u,
                             PlanLayout layout,
                             std::unique_ptr<PlanStep> step) {
  std::vector<std::pair<const Value *, PlanLayout>> reads{{u.x, layout}};
  if (u.residual) {
    auto shapes = staticShapes({u.residual, u.y});
    if (!shapes)
      return shapes.takeError();
    if ((*shapes)[0] != (*shapes)[1])
      return false;
    reads.push_back({u.residual, layout});
  }
  return addStepFor(n, reads, u.y, layout,
                    u.yq ? u.yq->getStorageKind() : ElementKind::F32,
                    [&](const PlanTensor &) { return std::move(step); });
}

llvm::Expected<bool> PlanBuilder::lowerConv(const Node &n) {
  constexpr bool none = false;
  bool transposed = n.isa(ops::QConvTranspose);
  // OIHW weights, per output channel on axis 0 (IOHW on axis 1 transposed).
  std::optional<WeightedUnit> u = getWeightedUnit(n, 4, transposed ? 1 : 0);
  if (!u || !u->x->getType()->hasRank() || u->x->getType()->getRank() != 4)
    return none;

  auto shapes = staticShapes({u->x, u->y});
  if (!shapes)
    return shapes.takeError();
  const Shape &xShape = (*shapes)[0], &yShape = (*shapes)[1];
  llvm::ArrayRef<int64_t> wDims = u->wDims;
  const int8_t *weights = u->weights.data();
  Int8ConvShape s;
  std::vector<int8_t> transposedWeights;
  if (transposed) {
    auto asConv = transposedAsConv(n, xShape, wDims, weights);
    if (!asConv)
      return none; // the float step runs it
    s = asConv->first;
    transposedWeights = std::move(asConv->second);
    weights = transposedWeights.data();
  } else {
    auto geometry = ConvStep::getShape(makeKernelOp(n), xShape,
                                       Shape(wDims.begin(), wDims.end()));
    if (!geometry) {
      // The float step reports what is wrong with the attributes.
      llvm::consumeError(geometry.takeError());
      return none;
    }
    s = *geometry;
  }
  // The geometry (the epilogue below is valid by construction).
  if (auto err = Int8Conv::checkParams(s, Int8Epilogue{{1.0f}})) {
    llvm::consumeError(std::move(err)); // the float step runs it
    return none;
  }
  if (yShape != Shape{s.batch, s.outC, s.outH(), s.outW()})
    return none;

  Int8Epilogue e = u->epilogue;
  // Per output channel; a transposed conv's weights have axis 1 per group.
  int64_t perGroup = s.outC / s.groups;
  for (int64_t c = 0, count = u->wq->isPerAxis() ? s.outC : 1; c < count; ++c) {
    int64_t wc = transposed ? c % perGroup : c;
    e.scale.push_back(u->xq->getScale() * quant::getChannelScale(u->wq, wc));
    if (!u->weightZeros.empty())
      e.weightZero.push_back(u->weightZeros[wc]);
  }
  if (const Value *b = u->bias) {
    // One per output channel (ONNX's B is 1-D).
    const DenseElements *bData = getConstantData(b);
    auto bias = bData && bData->getNumElements() == s.outC
                    ? getColumnBias(b, s.outC, 1.0)
                    : std::nullopt;
    if (!bias)
      return none;
    e.bias = std::move(*bias);
  }
  if (auto err = Int8Conv::checkParams(s, e)) {
    llvm::consumeError(std::move(err)); // e.g. zero points over a deep kernel
    return none;
  }
  return addWeightedStep(
      n, *u, PlanLayout::Nhwc,
      std::make_unique<ConvStep>(
          n.getName().str(), Int8Conv(options.isa, s, weights, std::move(e))));
}
