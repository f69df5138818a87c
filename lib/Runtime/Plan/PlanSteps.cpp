//===- PlanSteps.cpp - What each kind of plan step does -------------------===//

#include "../ActivationMath.h"
#include "../NNUtil.h"
#include "qopt/Runtime/Plan.h"
#include "qopt/Runtime/Transpose.h"

#include "llvm/ADT/StringSwitch.h"

#include <cassert>
#include <cstring>
#include <functional>

using namespace qopt;
using namespace qopt::rt;

static llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

//===----------------------------------------------------------------------===//
// Int8 conv
//===----------------------------------------------------------------------===//

llvm::Expected<Int8ConvShape>
ConvStep::getShape(const KernelOp &op, const Shape &x, const Shape &w) {
  KernelContext ctx(op, {}, 0);
  auto g = convGeometry(ctx, x, w);
  if (!g)
    return g.takeError();
  if (g->inSpatial.size() != 2)
    return ctx.error("the int8 conv step is 2-D");
  Int8ConvShape s;
  s.batch = g->batch;
  s.inC = g->inChannels;
  s.inH = g->inSpatial[0];
  s.inW = g->inSpatial[1];
  s.outC = g->outChannels;
  s.kernelH = g->kernel[0];
  s.kernelW = g->kernel[1];
  s.strideH = g->strides[0];
  s.strideW = g->strides[1];
  s.dilationH = g->dilations[0];
  s.dilationW = g->dilations[1];
  s.padTop = g->padBegin[0];
  s.padLeft = g->padBegin[1];
  s.padBottom = g->padEnd[0];
  s.padRight = g->padEnd[1];
  s.groups = g->group;
  return s;
}

int64_t ConvStep::getMacs() const {
  const Int8ConvShape &s = conv.getShape();
  return s.batch * s.outH() * s.outW() * s.outC * s.kernelH * s.kernelW *
         (s.inC / s.groups);
}

llvm::Error ConvStep::run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                          void *scratch) const {
  // Inputs: x, then the residual and the pair table's operand if any.
  const Int8Epilogue &e = conv.getEpilogue();
  auto bytesOf = [&](int id) {
    return reinterpret_cast<const uint8_t *>(run.read(id));
  };
  const uint8_t *residual = e.hasResidual ? bytesOf(inputs[1]) : nullptr;
  const uint8_t *pairOperand =
      e.pairTable.empty() ? nullptr : bytesOf(inputs.back());
  conv.runTiles(bytesOf(inputs[0]), residual, run.write(outputs[0]), tileBegin,
                tileEnd, scratch, pairOperand);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Int8 Gemm/MatMul: a 1x1 conv over the rows
//===----------------------------------------------------------------------===//

namespace {

constexpr size_t kScratchAlignment = 64;

size_t alignUp(size_t n) {
  return (n + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment;
}

/// dst = src with the top bit of each byte toggled (s8 <-> u8 + 128).
void copyFlipped(uint8_t *dst, const uint8_t *src, size_t n) {
  for (size_t i = 0; i < n; ++i)
    dst[i] = src[i] ^ 0x80;
}

} // namespace

bool GemmStep::isGemmShape(const Int8ConvShape &s) {
  return s.batch == 1 && s.inW == 1 && s.kernelH == 1 && s.kernelW == 1 &&
         s.strideH == 1 && s.strideW == 1 && s.dilationH == 1 &&
         s.dilationW == 1 && s.padTop == 0 && s.padLeft == 0 &&
         s.padBottom == 0 && s.padRight == 0 && s.groups == 1 &&
         s.inputDilationH == 1 && s.inputDilationW == 1;
}

Int8ConvShape GemmStep::makeShape(int64_t m, int64_t k, int64_t n) {
  Int8ConvShape s;
  s.inH = m;
  s.inC = k;
  s.outC = n;
  return s;
}

size_t GemmStep::getScratchBytes() const {
  const Int8ConvShape &s = conv.getShape();
  // The conv's own, then a row group of x's rows and of the residual's
  // (flipped from s8).
  int64_t rows = conv.getRowsPerCall();
  return alignUp(conv.getScratchBytes()) + alignUp(size_t(rows * s.inC)) +
         alignUp(size_t(rows * s.outC));
}

int64_t GemmStep::getMacs() const {
  const Int8ConvShape &s = conv.getShape();
  return s.inH * s.inC * s.outC;
}

llvm::Error GemmStep::run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                          void *scratch) const {
  const Int8ConvShape &s = conv.getShape();
  const Int8Epilogue &e = conv.getEpilogue();
  int64_t k = s.inC, n = s.outC;
  bool flipX = run.tensor(inputs[0]).kind == ElementKind::I8;
  bool flipResidual =
      e.hasResidual && run.tensor(inputs[1]).kind == ElementKind::I8;
  bool flipY = run.tensor(outputs[0]).kind == ElementKind::I8;
  size_t resultBytes = e.outputScale == 0 ? sizeof(float) : 1;
  const uint8_t *x = reinterpret_cast<const uint8_t *>(run.read(inputs[0]));
  const uint8_t *residual =
      e.hasResidual ? reinterpret_cast<const uint8_t *>(run.read(inputs[1]))
                    : nullptr;
  char *y = run.write(outputs[0]);
  char *convScratch = static_cast<char *>(scratch);
  uint8_t *xRows = reinterpret_cast<uint8_t *>(convScratch +
                                               alignUp(conv.getScratchBytes()));
  int64_t maxRows = conv.getRowsPerCall();
  uint8_t *residualRows = xRows + alignUp(size_t(maxRows * k));
  // A run of tiles at a time: one row group (maxRows rows at most) and
  // adjacent channel blocks of it.
  conv.forEachTileRun(
      tileBegin, tileEnd,
      [&](int64_t row, int64_t rowEnd, int64_t blockBegin, int64_t blockEnd) {
        int64_t rows = rowEnd - row;
        assert(rows <= maxRows && "a row group is one GEMM call");
        const uint8_t *in = x + row * k;
        if (flipX) {
          copyFlipped(xRows, in, size_t(rows * k));
          in = xRows;
        }
        const uint8_t *res = residual ? residual + row * n : nullptr;
        if (flipResidual) {
          copyFlipped(residualRows, res, size_t(rows * n));
          res = residualRows;
        }
        char *out = y + row * n * resultBytes;
        conv.runRows(in, res, out, 0, rows, blockBegin, blockEnd, convScratch);
        if (flipY) {
          // Only this run's channels: other tiles write the rest of the rows.
          auto [first, last] = conv.getBlockChannels(blockBegin, blockEnd);
          for (int64_t r = 0; r < rows; ++r) {
            uint8_t *bytes = reinterpret_cast<uint8_t *>(out) + r * n + first;
            copyFlipped(bytes, bytes, size_t(last - first));
          }
        }
      });
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Reformat: NCHW <-> NHWC, s8 <-> u8 (+128)
//===----------------------------------------------------------------------===//

int64_t ReformatStep::getNumTiles() const { return shape[0] * shape[2]; }

namespace {

/// Rows (n, h) of a 4-D tensor moved between NCHW and NHWC; `flip` toggles
/// the top bit of each byte (s8 <-> u8 + 128). NCHW row (n, c) of h * w
/// elements is row n * batchRows + firstRow + c of rows `rowStride` apart,
/// from `columnOffset` on.
template <typename T>
void reformatRows(const T *in, T *out, const Shape &shape, bool toNhwc,
                  bool flip, int64_t rowStride, int64_t columnOffset,
                  int64_t firstRow, int64_t batchRows, int64_t rowBegin,
                  int64_t rowEnd) {
  int64_t c = shape[1], h = shape[2], w = shape[3];
  for (int64_t row = rowBegin; row < rowEnd; ++row) {
    int64_t n = row / h, y = row % h;
    for (int64_t ch = 0; ch < c; ++ch) {
      int64_t nchw =
          (n * batchRows + firstRow + ch) * rowStride + columnOffset + y * w;
      int64_t nhwc = (n * h + y) * w * c + ch;
      for (int64_t x = 0; x < w; ++x) {
        const T &from = toNhwc ? in[nchw + x] : in[nhwc + x * c];
        T &to = toNhwc ? out[nhwc + x * c] : out[nchw + x];
        if constexpr (sizeof(T) == 1)
          to = flip ? static_cast<T>(from ^ 0x80) : from;
        else
          to = from;
      }
    }
  }
}

} // namespace

llvm::Error ReformatStep::run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                              void * /*scratch*/) const {
  const PlanTensor &from = run.tensor(inputs[0]);
  const PlanTensor &to = run.tensor(outputs[0]);
  bool toNhwc = to.layout == PlanLayout::Nhwc;
  bool flip = from.getStoredFlip() != to.getStoredFlip();
  int64_t stride = rowStride ? rowStride : shape[2] * shape[3];
  int64_t rows = batchRows ? batchRows : shape[1];
  switch (getElementByteSize(from.kind)) {
  case 1:
    reformatRows(reinterpret_cast<const uint8_t *>(run.read(inputs[0])),
                 reinterpret_cast<uint8_t *>(run.write(outputs[0])), shape,
                 toNhwc, flip, stride, columnOffset, firstRow, rows, tileBegin,
                 tileEnd);
    return llvm::Error::success();
  case 4: {
    // Each image row: a transpose between its pixels' channels and its
    // channels' rows.
    const uint32_t *in =
        reinterpret_cast<const uint32_t *>(run.read(inputs[0]));
    uint32_t *out = reinterpret_cast<uint32_t *>(run.write(outputs[0]));
    int64_t c = shape[1], h = shape[2], w = shape[3];
    Isa isa = run.getPlan().isa;
    for (int64_t row = tileBegin; row < tileEnd; ++row) {
      int64_t n = row / h, y = row % h;
      int64_t pixels = (n * h + y) * w * c;
      int64_t channels = (n * rows + firstRow) * stride + columnOffset + y * w;
      if (toNhwc)
        transpose32(isa, in + channels, stride, c, w, out + pixels, c);
      else
        transpose32(isa, in + pixels, c, w, c, out + channels, stride);
    }
    return llvm::Error::success();
  }
  default:
    return makeError("reformat of '" + from.name + "': no NHWC layout for " +
                     getElementKindName(from.kind));
  }
}

//===----------------------------------------------------------------------===//
// Float steps: the interpreter's kernel
//===----------------------------------------------------------------------===//

FloatStep::FloatStep(std::string name, KernelOp op, KernelFn fn, int64_t opset)
    : PlanStep(Kind::Float, std::move(name)), op(std::move(op)), fn(fn),
      opset(opset), arithmetic(Arithmetic::None) {
  const KernelOp &o = this->op;
  bool plain = o.getNumResults() == 1 && !o.getOperandQuantType(0) &&
               !o.getOperandQuantType(1) && !o.getResultQuantType(0);
  if (!plain)
    return;
  if (o.getNumOperands() == 2)
    arithmetic = llvm::StringSwitch<Arithmetic>(o.op)
                     .Case("onnx.Add", Arithmetic::Add)
                     .Case("onnx.Sub", Arithmetic::Sub)
                     .Case("onnx.Mul", Arithmetic::Mul)
                     .Case("onnx.Div", Arithmetic::Div)
                     .Default(Arithmetic::None);
  if (o.getNumOperands() == 1)
    arithmetic = llvm::StringSwitch<Arithmetic>(o.op)
                     .Case("onnx.Relu", Arithmetic::Relu)
                     .Case("onnx.LeakyRelu", Arithmetic::LeakyRelu)
                     .Case("onnx.Sigmoid", Arithmetic::Sigmoid)
                     .Case("onnx.Tanh", Arithmetic::Tanh)
                     .Case("onnx.HardSigmoid", Arithmetic::HardSigmoid)
                     .Case("onnx.HardSwish", Arithmetic::HardSwish)
                     .Case("onnx.Erf", Arithmetic::Erf)
                     .Case("onnx.Sqrt", Arithmetic::Sqrt)
                     .Case("onnx.Exp", Arithmetic::Exp)
                     .Default(Arithmetic::None);
  // The attributes as the kernels read them (floats, widened).
  KernelContext ctx(o, {}, opset);
  if (arithmetic == Arithmetic::LeakyRelu)
    alpha = ctx.getFloat("alpha", 0.01f);
  if (arithmetic == Arithmetic::HardSigmoid) {
    alpha = ctx.getFloat("alpha", 0.2f);
    beta = ctx.getFloat("beta", 0.5f);
  }
}

/// y[i] = f(x[i]) as the reference computes it for f32: in double, rounded
/// once to float.
template <typename F>
static void mapFloats(const float *x, float *y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = float(f(double(x[i])));
}

/// y[i] = x[i % xPeriod] op z[i % zPeriod] for i in [begin, end), as the
/// reference computes it for f32: in double, rounded once to float.
template <typename Op>
static void flatArithmetic(const float *x, int64_t xPeriod, const float *z,
                           int64_t zPeriod, float *y, int64_t begin,
                           int64_t end, Op op) {
  if (xPeriod >= end && zPeriod >= end) {
    for (int64_t i = begin; i < end; ++i)
      y[i] = float(op(double(x[i]), double(z[i])));
    return;
  }
  if (zPeriod == 1) {
    double b = z[0];
    for (int64_t i = begin; i < end; ++i)
      y[i] = float(op(double(x[i]), b)); // x is the full operand
    return;
  }
  int64_t ix = begin % xPeriod, iz = begin % zPeriod;
  for (int64_t i = begin; i < end; ++i) {
    y[i] = float(op(double(x[ix]), double(z[iz])));
    if (++ix == xPeriod)
      ix = 0;
    if (++iz == zPeriod)
      iz = 0;
  }
}

/// How an operand of a flat arithmetic step repeats along the result's
/// elements: every element (the result's shape and layout), one, or the
/// result's trailing dims in ONNX layout (a [C] scale of a [.., C]
/// tensor); 0 when it does not.
static int64_t periodOf(const PlanTensor &t, const PlanTensor &y) {
  if (t.kind != ElementKind::F32)
    return 0;
  if (t.shape == y.shape && t.layout == y.layout)
    return y.numElements();
  int64_t n = t.numElements();
  if (n == 1)
    return 1;
  if (t.layout != PlanLayout::Onnx || y.layout != PlanLayout::Onnx)
    return 0;
  size_t lead = 0;
  while (lead < t.shape.size() && t.shape[lead] == 1)
    ++lead;
  size_t rest = t.shape.size() - lead;
  if (rest > y.shape.size() ||
      !std::equal(t.shape.begin() + lead, t.shape.end(), y.shape.end() - rest))
    return 0;
  return n;
}

/// Elements a tile of a same-shape arithmetic step takes.
static constexpr int64_t kArithmeticTileElements = 16384;

int64_t FloatStep::sameShapeElements(const PlanRun &run) const {
  if (arithmetic == Arithmetic::None || inputs.empty() || inputs.size() > 2 ||
      outputs.size() != 1 || outputs[0] < 0)
    return 0;
  const PlanTensor &y = run.tensor(outputs[0]);
  if (y.kind != ElementKind::F32)
    return 0;
  for (int id : inputs) {
    if (id < 0)
      return 0;
    int64_t period = periodOf(run.tensor(id), y);
    // An activation reads every element; arithmetic may broadcast one
    // operand (not both: the result's shape would be neither's).
    if (!period ||
        (period != y.numElements() &&
         (inputs.size() == 1 ||
          periodOf(run.tensor(inputs[0] == id ? inputs[1] : inputs[0]), y) !=
              y.numElements())))
      return 0;
  }
  return y.numElements();
}

int FloatStep::channelOperand(const PlanRun &run) const {
  if (inputs.size() != 2 || outputs.size() != 1 || outputs[0] < 0 ||
      inputs[0] < 0 || inputs[1] < 0 ||
      !(arithmetic == Arithmetic::Add || arithmetic == Arithmetic::Sub ||
        arithmetic == Arithmetic::Mul || arithmetic == Arithmetic::Div))
    return -1;
  const PlanTensor &y = run.tensor(outputs[0]);
  if (y.kind != ElementKind::F32 || y.layout != PlanLayout::Nhwc)
    return -1;
  for (int i = 0; i < 2; ++i) {
    const PlanTensor &whole = run.tensor(inputs[i]);
    const PlanTensor &channels = run.tensor(inputs[1 - i]);
    if (whole.kind == ElementKind::F32 && whole.layout == PlanLayout::Nhwc &&
        whole.shape == y.shape && channels.kind == ElementKind::F32 &&
        channels.shape == Shape{y.shape[0], y.shape[1], 1, 1})
      return 1 - i;
  }
  return -1;
}

/// Pixels a tile of a channel arithmetic step takes.
static constexpr int64_t kChannelTilePixels = 256;

int64_t FloatStep::getNumTiles(const PlanRun &run) const {
  int64_t n = sameShapeElements(run);
  if (!n && channelOperand(run) >= 0) {
    const Shape &s = run.tensor(outputs[0]).shape;
    int64_t pixels = s[0] * s[2] * s[3];
    return (pixels + kChannelTilePixels - 1) / kChannelTilePixels;
  }
  return n ? (n + kArithmeticTileElements - 1) / kArithmeticTileElements : 1;
}

void FloatStep::runChannelArithmetic(PlanRun &run, int channel, int64_t begin,
                                     int64_t end) const {
  const Shape &s = run.tensor(outputs[0]).shape;
  int64_t c = s[1], imagePixels = s[2] * s[3];
  const float *x =
      reinterpret_cast<const float *>(run.read(inputs[1 - channel]));
  const float *scale =
      reinterpret_cast<const float *>(run.read(inputs[channel]));
  float *out = reinterpret_cast<float *>(run.write(outputs[0]));
  // Operands in the op's order: the channel value first or second.
  auto apply = [&](auto op) {
    for (int64_t p = begin; p < end; ++p) {
      const float *sp = scale + (p / imagePixels) * c;
      const float *xp = x + p * c;
      float *yp = out + p * c;
      if (channel == 0)
        for (int64_t k = 0; k < c; ++k)
          yp[k] = float(op(double(sp[k]), double(xp[k])));
      else
        for (int64_t k = 0; k < c; ++k)
          yp[k] = float(op(double(xp[k]), double(sp[k])));
    }
  };
  switch (arithmetic) {
  case Arithmetic::Add:
    return apply(std::plus<double>());
  case Arithmetic::Sub:
    return apply(std::minus<double>());
  case Arithmetic::Mul:
    return apply(std::multiplies<double>());
  case Arithmetic::Div:
    return apply(std::divides<double>());
  default:
    return;
  }
}

void FloatStep::runSameShapeArithmetic(PlanRun &run, int64_t begin,
                                       int64_t end) const {
  const float *x = reinterpret_cast<const float *>(run.read(inputs[0]));
  const float *z = inputs.size() == 2
                       ? reinterpret_cast<const float *>(run.read(inputs[1]))
                       : nullptr;
  float *y = reinterpret_cast<float *>(run.write(outputs[0]));
  const PlanTensor &result = run.tensor(outputs[0]);
  int64_t xPeriod = periodOf(run.tensor(inputs[0]), result);
  int64_t zPeriod = z ? periodOf(run.tensor(inputs[1]), result) : 0;
  // Whole tensors and element indices [begin, end) (x and out below are
  // the unary loops', from `begin` on).
  auto binary = [xBase = x, zBase = z, y, xPeriod, zPeriod, begin,
                 end](auto op) {
    if (xPeriod == 1 || (zPeriod != 1 && xPeriod < zPeriod)) {
      // The broadcast operand second, the op's operands in their order.
      flatArithmetic(zBase, zPeriod, xBase, xPeriod, y, begin, end,
                     [&](double b, double a) { return op(a, b); });
      return;
    }
    flatArithmetic(xBase, xPeriod, zBase, zPeriod, y, begin, end, op);
  };
  x += begin;
  float *out = y + begin;
  int64_t n = end - begin;
  double alpha = this->alpha, beta = this->beta;
  switch (arithmetic) {
  case Arithmetic::Relu:
    mapFloats(x, out, n, [](double v) { return act::relu(v); });
    break;
  case Arithmetic::LeakyRelu:
    mapFloats(x, out, n, [=](double v) { return act::leakyRelu(v, alpha); });
    break;
  case Arithmetic::Sigmoid:
    mapFloats(x, out, n, [](double v) { return act::sigmoid(v); });
    break;
  case Arithmetic::Tanh:
    mapFloats(x, out, n, [](double v) { return std::tanh(v); });
    break;
  case Arithmetic::HardSigmoid:
    mapFloats(x, out, n,
              [=](double v) { return act::hardSigmoid(v, alpha, beta); });
    break;
  case Arithmetic::HardSwish:
    mapFloats(x, out, n, [](double v) { return act::hardSwish(v); });
    break;
  case Arithmetic::Erf:
    mapFloats(x, out, n, [](double v) { return std::erf(v); });
    break;
  case Arithmetic::Sqrt:
    mapFloats(x, out, n, [](double v) { return std::sqrt(v); });
    break;
  case Arithmetic::Exp:
    mapFloats(x, out, n, [](double v) { return std::exp(v); });
    break;
  case Arithmetic::Add:
    binary(std::plus<double>());
    break;
  case Arithmetic::Sub:
    binary(std::minus<double>());
    break;
  case Arithmetic::Mul:
    binary(std::multiplies<double>());
    break;
  case Arithmetic::Div:
    binary(std::divides<double>());
    break;
  case Arithmetic::None:
    break;
  }
}

llvm::Error FloatStep::run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                           void * /*scratch*/) const {
  if (int64_t n = sameShapeElements(run)) {
    runSameShapeArithmetic(run,
                           std::min(n, tileBegin * kArithmeticTileElements),
                           std::min(n, tileEnd * kArithmeticTileElements));
    return llvm::Error::success();
  }
  if (int channel = channelOperand(run); channel >= 0) {
    const Shape &s = run.tensor(outputs[0]).shape;
    int64_t pixels = s[0] * s[2] * s[3];
    runChannelArithmetic(run, channel,
                         std::min(pixels, tileBegin * kChannelTilePixels),
                         std::min(pixels, tileEnd * kChannelTilePixels));
    return llvm::Error::success();
  }
  if (tileBegin > 0 || tileEnd <= tileBegin)
    return llvm::Error::success(); // the kernel runs whole, as tile 0
  std::vector<Tensor> values;
  values.reserve(inputs.size()); // operands point into it
  std::vector<const Tensor *> operands;
  for (int id : inputs) {
    if (id < 0) {
      operands.push_back(nullptr);
      continue;
    }
    // Constants (ONNX layout) are read where they are: a folded weight
    // is not copied on every run.
    if (const Tensor *constant = run.tensor(id).constant.get()) {
      operands.push_back(constant);
      continue;
    }
    values.push_back(run.copyOut(id));
    // An elementwise op may read NHWC tensors as flat arrays; int8 ones go
    // back to s8 for the kernel.
    if (uint8_t flip = run.tensor(id).getStoredFlip())
      for (char &b : llvm::MutableArrayRef<char>(values.back().bytes(),
                                                 values.back().byteSize()))
        b ^= flip;
    operands.push_back(&values.back());
  }
  KernelContext ctx(op, std::move(operands), opset);
  if (auto err = fn(ctx))
    return err;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i] < 0)
      continue;
    const PlanTensor &t = run.tensor(outputs[i]);
    const Tensor &y = ctx.outputs[i];
    if (!y.isValid() || y.kind() != t.kind || y.shape() != t.shape)
      return ctx.error("result #" + llvm::Twine(i) + " is " +
                       (y.isValid() ? getElementKindName(y.kind()).str() + " " +
                                          shapeToString(y.shape())
                                    : std::string("missing")) +
                       "; the plan expects " + getElementKindName(t.kind) +
                       " " + shapeToString(t.shape));
    char *to = run.write(outputs[i]);
    if (t.byteSize())
      std::memcpy(to, y.bytes(), t.byteSize());
    if (uint8_t flip = t.getStoredFlip())
      for (size_t b = 0, e = t.byteSize(); b < e; ++b)
        to[b] ^= flip;
  }
  return llvm::Error::success();
}
