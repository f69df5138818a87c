//===- QuantKernels.cpp - Reference kernels: quantization -----------------===//
//
// ONNX semantics, computed in float32 like the ONNX reference and ONNX
// Runtime: Q(x) = saturate(round_half_even(x / s) + zp), DQ(q) = (q - zp) * s.
// Integer convolutions and matrix products accumulate exactly; QLinear*
// requantize with the float scale (s_a * s_b) / s_y. The arithmetic of one
// value is qopt::quant's (qopt/IR/QuantMath.h), which passes share, so that
// folded constants match what these kernels compute.
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/Float8.h"
#include "qopt/Interpreter/NNUtil.h"

#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"

#include <cmath>

using namespace qopt;
using namespace qopt::interp;

namespace {

/// Per-element quantization parameters, per tensor or along one axis.
struct QuantParams {
  std::vector<float> scales;
  std::vector<int64_t> zeroPoints;
  ElementKind storage = ElementKind::U8;
  int64_t axis = -1; // -1: per tensor
  int64_t block = 0; // block-wise along the axis when > 0
  /// float8 storage (zero points are codes then): QuantizeLinear's
  /// saturate attribute.
  bool saturate = true;
  float scale(int64_t c) const { return scales[axis < 0 ? 0 : c]; }
  int64_t zeroPoint(int64_t c) const { return zeroPoints[axis < 0 ? 0 : c]; }
};

QuantParams fromType(const QuantType *q) {
  QuantParams p;
  p.scales.assign(q->getScales().begin(), q->getScales().end());
  p.zeroPoints.assign(q->getZeroPoints().begin(), q->getZeroPoints().end());
  p.storage = q->getStorageKind();
  p.axis = q->isPerAxis() ? q->getAxis() : -1;
  p.block = q->getBlockSize();
  return p;
}

llvm::Error checkAxis(const KernelContext &ctx, const QuantParams &p,
                      const Shape &shape) {
  if (p.axis < 0)
    return llvm::Error::success();
  if (p.block > 0 && p.axis < static_cast<int64_t>(shape.size())) {
    int64_t want = 1;
    for (size_t d = 0; d < shape.size(); ++d)
      want *= int64_t(d) == p.axis ? quant::blocksAlong(shape[d], p.block)
                                   : shape[d];
    if (want != static_cast<int64_t>(p.scales.size()))
      return ctx.error("block-wise parameters (" +
                       llvm::Twine(p.scales.size()) + ", blocks of " +
                       llvm::Twine(p.block) + " on axis " +
                       llvm::Twine(p.axis) + ") do not fit input shape " +
                       shapeToString(shape));
    return llvm::Error::success();
  }
  if (p.axis >= static_cast<int64_t>(shape.size()) ||
      shape[p.axis] != static_cast<int64_t>(p.scales.size()))
    return ctx.error("per-axis parameters (" + llvm::Twine(p.scales.size()) +
                     " channels on axis " + llvm::Twine(p.axis) +
                     ") do not fit input shape " + shapeToString(shape));
  return llvm::Error::success();
}

/// Allocates `y` (errors name the node).
llvm::Error allocate(const KernelContext &ctx, Tensor &y, ElementKind kind,
                     const Shape &shape) {
  auto t = Tensor::allocate(kind, shape);
  if (!t)
    return ctx.error(llvm::toString(t.takeError()));
  y = std::move(*t);
  return llvm::Error::success();
}

llvm::Error quantize(const KernelContext &ctx, const Tensor &x,
                     const QuantParams &p, Tensor &y) {
  if (!isFloatKind(x.kind()))
    return ctx.error("quantize input must be float, got " +
                     getElementKindName(x.kind()));
  if (auto err = checkAxis(ctx, p, x.shape()))
    return err;
  if (auto err = allocate(ctx, y, p.storage, x.shape()))
    return err;
  quant::ChannelIndexer ch(x.shape(), p.axis, p.block);
  if (isMinifloatKind(p.storage)) {
    // ONNX: x / scale + zero point in float32, then to the nearest float8
    // value (ties to even), saturated or not.
    for (int64_t i = 0; i < x.numElements(); ++i) {
      int64_t c = ch(i);
      float zero =
          static_cast<float>(decodeFloat8(uint8_t(p.zeroPoint(c)), p.storage));
      float v = static_cast<float>(x.getDouble(i)) / p.scale(c) + zero;
      y.setInt(i, encodeFloat8(v, p.storage, p.saturate));
    }
    return llvm::Error::success();
  }
  for (int64_t i = 0; i < x.numElements(); ++i) {
    int64_t c = ch(i);
    y.setInt(i, quant::quantizeValue(static_cast<float>(x.getDouble(i)),
                                     p.scale(c), p.zeroPoint(c), p.storage));
  }
  return llvm::Error::success();
}

llvm::Error dequantize(const KernelContext &ctx, const Tensor &x,
                       const QuantParams &p, ElementKind outKind, Tensor &y) {
  bool float8 = isMinifloatKind(x.kind());
  if (!float8 && !isIntegerKind(x.kind()))
    return ctx.error("dequantize input must be an integer or float8 tensor, "
                     "got " +
                     getElementKindName(x.kind()));
  if (auto err = checkAxis(ctx, p, x.shape()))
    return err;
  if (auto err = allocate(ctx, y, outKind, x.shape()))
    return err;
  quant::ChannelIndexer ch(x.shape(), p.axis, p.block);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    int64_t c = ch(i);
    if (!float8) {
      y.setDouble(
          i, quant::dequantizeValue(x.getInt(i), p.scale(c), p.zeroPoint(c)));
      continue;
    }
    // ONNX: (x - zero point) * scale in float32; a float8 zero point is a
    // code.
    float zero =
        static_cast<float>(decodeFloat8(uint8_t(p.zeroPoint(c)), x.kind()));
    y.setDouble(i, (static_cast<float>(x.getDouble(i)) - zero) * p.scale(c));
  }
  return llvm::Error::success();
}

llvm::Error qQuantizeKernel(KernelContext &ctx) {
  const QuantType *q = ctx.op.getResultQuantType();
  if (!q || !ctx.input(0))
    return ctx.error("q.quantize needs an input and a quantized result type");
  QuantParams p = fromType(q);
  p.saturate = ctx.getInt("saturate", 1) != 0;
  return quantize(ctx, *ctx.input(0), p, ctx.outputs[0]);
}

llvm::Error qDequantizeKernel(KernelContext &ctx) {
  const QuantType *q = ctx.op.getOperandQuantType(0);
  if (!q || !ctx.input(0))
    return ctx.error("q.dequantize needs a quantized input");
  return dequantize(ctx, *ctx.input(0), fromType(q), q->getExpressedKind(),
                    ctx.outputs[0]);
}

/// Q_out(DQ_in(x)) element by element, exactly as the chain of a
/// q.dequantize to the expressed type and a q.quantize computes it.
llvm::Error qRequantizeKernel(KernelContext &ctx) {
  const QuantType *in = ctx.op.getOperandQuantType(0);
  const QuantType *out = ctx.op.getResultQuantType();
  const Tensor *x = ctx.input(0);
  if (!in || !out || !x)
    return ctx.error("q.requantize needs quantized input and result types");
  if (!isIntegerKind(x->kind()))
    return ctx.error("dequantize input must be an integer tensor, got " +
                     getElementKindName(x->kind()));
  if (auto err = checkAxis(ctx, fromType(in), x->shape()))
    return err;
  if (!isFloatKind(in->getExpressedKind()))
    return ctx.error("quantize input must be float, got " +
                     getElementKindName(in->getExpressedKind()));
  if (auto err = checkAxis(ctx, fromType(out), x->shape()))
    return err;
  if (auto err = ctx.allocateOutput(0, out->getStorageKind(), x->shape()))
    return err;
  Tensor &y = ctx.outputs[0];
  quant::ChannelIndexer inChannel(x->shape(), in), outChannel(x->shape(), out);
  for (int64_t i = 0; i < x->numElements(); ++i)
    y.setInt(i, quant::requantizeValue(x->getInt(i), in, inChannel(i), out,
                                       outChannel(i)));
  return llvm::Error::success();
}

/// Parameters given as tensors (ONNX QuantizeLinear/DequantizeLinear).
llvm::Expected<QuantParams> paramsFromTensors(const KernelContext &ctx,
                                              const Tensor &x,
                                              const Tensor *scale,
                                              const Tensor *zp,
                                              ElementKind defaultStorage) {
  if (!scale)
    return ctx.error("missing scale");
  int64_t block = ctx.getInt("block_size", 0);
  if (block < 0)
    return ctx.error("block_size must be positive, got " + llvm::Twine(block));
  if (!isFloatKind(scale->kind()))
    return ctx.error("scale must be float");
  QuantParams p;
  p.storage = zp ? zp->kind() : defaultStorage;
  int64_t n = scale->numElements();
  if (n == 0 || (zp && zp->numElements() != n))
    return ctx.error("scale and zero point sizes differ");
  if (block > 0) {
    // Block-wise: the scale has x's shape but along the axis, where it has
    // ceil(size / block_size); checkAxis checks the count.
    auto axis = normalizeAxis(ctx, ctx.getInt("axis", 1), x.rank());
    if (!axis)
      return axis.takeError();
    Shape want = x.shape();
    want[*axis] = quant::blocksAlong(want[*axis], block);
    if (scale->shape() != want)
      return ctx.error(
          "block-wise scale of shape " + shapeToString(scale->shape()) +
          " does not fit input " + shapeToString(x.shape()) + " in blocks of " +
          llvm::Twine(block) + " along axis " + llvm::Twine(*axis) +
          " (expected " + shapeToString(want) + ")");
    p.axis = *axis;
    p.block = block;
  } else if (n > 1 || scale->rank() == 1) {
    if (n > 1) {
      auto axis = normalizeAxis(ctx, ctx.getInt("axis", 1), x.rank());
      if (!axis)
        return axis.takeError();
      p.axis = *axis;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    p.scales.push_back(static_cast<float>(scale->getDouble(i)));
    p.zeroPoints.push_back(zp ? zp->getInt(i) : 0);
  }
  return p;
}

llvm::Error quantizeLinearKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.error("missing input");
  ElementKind storage = ElementKind::U8;
  if (int64_t dt = ctx.getInt("output_dtype", 0)) {
    auto k = elementKindFromOnnxDataType(dt);
    if (!k || !(isQuantStorageKind(*k) || isMinifloatKind(*k)))
      return ctx.error("unsupported output_dtype " + llvm::Twine(dt));
    storage = *k;
  }
  auto p = paramsFromTensors(ctx, *x, ctx.input(1), ctx.input(2), storage);
  if (!p)
    return p.takeError();
  p->saturate = ctx.getInt("saturate", 1) != 0;
  return quantize(ctx, *x, *p, ctx.outputs[0]);
}

llvm::Error dequantizeLinearKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.error("missing input");
  auto p = paramsFromTensors(ctx, *x, ctx.input(1), ctx.input(2), x->kind());
  if (!p)
    return p.takeError();
  return dequantize(ctx, *x, *p, ctx.input(1)->kind(), ctx.outputs[0]);
}

/// x - zp as doubles; zp is a scalar or per-channel along `axis`.
std::vector<double> centered(const Tensor &x, const Tensor *zp, int64_t axis) {
  std::vector<double> v = x.toDoubles();
  if (!zp)
    return v;
  if (zp->numElements() == 1) {
    double z = zp->getDouble(0);
    for (double &e : v)
      e -= z;
    return v;
  }
  quant::ChannelIndexer ch(x.shape(), axis);
  for (int64_t i = 0; i < x.numElements(); ++i)
    v[i] -= zp->getDouble(ch(i));
  return v;
}

/// Shared by QLinearConv and ConvInteger: integer accumulators, exact.
llvm::Expected<std::vector<double>>
integerConv(KernelContext &ctx, const Tensor &x, const Tensor *xZp,
            const Tensor &w, const Tensor *wZp, ConvGeometry &g) {
  if (!isIntegerKind(x.kind()) || !isIntegerKind(w.kind()))
    return ctx.error("integer convolution needs integer x and w");
  auto geometry = convGeometry(ctx, x.shape(), w.shape());
  if (!geometry)
    return geometry.takeError();
  g = *geometry;
  if (xZp && xZp->numElements() != 1)
    return ctx.error("x zero point must be a scalar");
  if (wZp && wZp->numElements() != 1 && wZp->numElements() != g.outChannels)
    return ctx.error("w zero point must be a scalar or per output channel");
  std::vector<double> xv = centered(x, xZp, -1);
  std::vector<double> wv = centered(w, wZp, 0);
  auto count = shapeNumElements(g.outputShape());
  if (!count)
    return ctx.error("output too large");
  std::vector<double> acc(*count);
  convolve(g, xv.data(), wv.data(), nullptr, acc.data());
  return acc;
}

/// y = saturate(round(acc * (sa * sb[c] / sy)) + zy) for channel c of
/// `axis` (per-tensor when sb has one element).
llvm::Error requantizeOutput(KernelContext &ctx, const std::vector<double> &acc,
                             const Shape &shape, int64_t axis, const Tensor &sa,
                             const Tensor &sb, const Tensor &sy,
                             const Tensor *zy) {
  ElementKind kind = zy ? zy->kind() : ElementKind::U8;
  if (!isQuantStorageKind(kind))
    return ctx.error("output zero point must be 8 or 16 bit");
  if (sa.numElements() != 1 || sy.numElements() != 1 ||
      (zy && zy->numElements() != 1))
    return ctx.error("the input's scale and the output's scale and zero "
                     "point must have one value each");
  int64_t channels = sb.numElements();
  int64_t rank = static_cast<int64_t>(shape.size());
  if (channels != 1 && (axis < 0 || axis >= rank || shape[axis] != channels))
    return ctx.error("weight scale with " + llvm::Twine(channels) +
                     " values does not fit the result " + shapeToString(shape));
  if (auto err = ctx.allocateOutput(0, kind, shape))
    return err;
  float a = static_cast<float>(sa.getDouble(0));
  float y = static_cast<float>(sy.getDouble(0));
  int64_t z = zy ? zy->getInt(0) : 0;
  quant::ChannelIndexer ch(shape, channels > 1 ? axis : -1);
  Tensor &out = ctx.outputs[0];
  for (size_t i = 0; i < acc.size(); ++i) {
    float b = static_cast<float>(sb.getDouble(channels > 1 ? ch(i) : 0));
    float multiplier = a * b / y;
    out.setInt(i, quant::quantizeWithMultiplier(static_cast<float>(acc[i]),
                                                multiplier, z, kind));
  }
  return llvm::Error::success();
}

llvm::Error qlinearConvKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0), *xs = ctx.input(1), *xz = ctx.input(2),
               *w = ctx.input(3), *ws = ctx.input(4), *wz = ctx.input(5),
               *ys = ctx.input(6), *yz = ctx.input(7), *b = ctx.input(8);
  if (!x || !xs || !w || !ws || !ys)
    return ctx.error("QLinearConv needs x, x_scale, w, w_scale, y_scale");
  ConvGeometry g;
  auto acc = integerConv(ctx, *x, xz, *w, wz, g);
  if (!acc)
    return acc.takeError();
  Shape shape = g.outputShape();
  if (b) {
    if (b->numElements() != g.outChannels)
      return ctx.error("bias must have one value per output channel");
    quant::ChannelIndexer ch(shape, 1);
    for (size_t i = 0; i < acc->size(); ++i)
      (*acc)[i] += b->getDouble(ch(i));
  }
  if (ws->numElements() != 1 && ws->numElements() != g.outChannels)
    return ctx.error("w_scale must be a scalar or per output channel");
  return requantizeOutput(ctx, *acc, shape, 1, *xs, *ws, *ys, yz);
}

llvm::Error convIntegerKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0), *w = ctx.input(1);
  if (!x || !w)
    return ctx.error("ConvInteger needs x and w");
  ConvGeometry g;
  auto acc = integerConv(ctx, *x, ctx.input(2), *w, ctx.input(3), g);
  if (!acc)
    return acc.takeError();
  if (auto err = ctx.allocateOutput(0, ElementKind::I32, g.outputShape()))
    return err;
  int32_t *y = ctx.outputs[0].data<int32_t>();
  for (size_t i = 0; i < acc->size(); ++i)
    y[i] = static_cast<int32_t>((*acc)[i]);
  return llvm::Error::success();
}

/// Integer matrix product with zero points: a's per row (dim -2), b's per
/// column (last dim).
llvm::Expected<std::vector<double>>
integerMatmul(KernelContext &ctx, const Tensor &a, const Tensor *az,
              const Tensor &b, const Tensor *bz, Shape &outShape) {
  if (!isIntegerKind(a.kind()) || !isIntegerKind(b.kind()))
    return ctx.error("integer matmul needs integer operands");
  if (a.rank() == 0 || b.rank() == 0)
    return ctx.error("integer matmul needs operands of rank >= 1");
  // A 1-D a is one row, a 1-D b one column.
  int64_t aAxis = a.rank() >= 2 ? a.rank() - 2 : 0;
  int64_t bAxis = b.rank() - 1;
  if (az && az->numElements() != 1 &&
      (a.rank() < 2 || az->numElements() != a.dim(aAxis)))
    return ctx.error("a zero point must be a scalar or one per row");
  if (bz && bz->numElements() != 1 &&
      (b.rank() < 2 || bz->numElements() != b.dim(bAxis)))
    return ctx.error("b zero point must be a scalar or one per column");
  std::vector<double> out;
  if (auto err = matmul(ctx, a.shape(), centered(a, az, aAxis), b.shape(),
                        centered(b, bz, bAxis), outShape, out))
    return std::move(err);
  return out;
}

llvm::Error qlinearMatMulKernel(KernelContext &ctx) {
  const Tensor *a = ctx.input(0), *as = ctx.input(1), *az = ctx.input(2),
               *b = ctx.input(3), *bs = ctx.input(4), *bz = ctx.input(5),
               *ys = ctx.input(6), *yz = ctx.input(7);
  if (!a || !as || !b || !bs || !ys)
    return ctx.error("QLinearMatMul needs a, a_scale, b, b_scale, y_scale");
  Shape shape;
  auto acc = integerMatmul(ctx, *a, az, *b, bz, shape);
  if (!acc)
    return acc.takeError();
  if (as->numElements() != 1)
    return ctx.error("per-row a_scale is not supported");
  if (bs->numElements() != 1 &&
      (b->rank() < 2 || bs->numElements() != b->dim(b->rank() - 1)))
    return ctx.error("b_scale must be a scalar or one per column of b");
  return requantizeOutput(ctx, *acc, shape,
                          static_cast<int64_t>(shape.size()) - 1, *as, *bs, *ys,
                          yz);
}

llvm::Error matMulIntegerKernel(KernelContext &ctx) {
  const Tensor *a = ctx.input(0), *b = ctx.input(1);
  if (!a || !b)
    return ctx.error("MatMulInteger needs a and b");
  Shape shape;
  auto acc = integerMatmul(ctx, *a, ctx.input(2), *b, ctx.input(3), shape);
  if (!acc)
    return acc.takeError();
  if (auto err = ctx.allocateOutput(0, ElementKind::I32, shape))
    return err;
  int32_t *y = ctx.outputs[0].data<int32_t>();
  for (size_t i = 0; i < acc->size(); ++i)
    y[i] = static_cast<int32_t>((*acc)[i]);
  return llvm::Error::success();
}

/// ONNX DynamicQuantizeLinear's parameters of `x`: u8, the range of x and 0
/// over 255 steps, the zero point rounded half to even and saturated.
std::pair<float, int64_t> dynamicParams(const Tensor &x) {
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < x.numElements(); ++i) {
    float v = x.data<float>()[i];
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  float scale = (hi - lo) / 255.0f;
  int64_t zp =
      scale > 0 ? quant::saturateToStorage(std::nearbyintf(0.0f - lo / scale),
                                           ElementKind::U8)
                : 0;
  return {scale, zp};
}

void dynamicQuantize(const Tensor &x, float scale, int64_t zp, Tensor &y) {
  for (int64_t i = 0; i < x.numElements(); ++i)
    y.setInt(i, scale > 0 ? quant::quantizeValue(x.data<float>()[i], scale, zp,
                                                 ElementKind::U8)
                          : 0);
}

llvm::Error dynamicQuantizeLinearKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0);
  if (!x || x->kind() != ElementKind::F32)
    return ctx.error("DynamicQuantizeLinear needs a float input");
  auto [scale, zp] = dynamicParams(*x);
  if (auto err = ctx.allocateOutput(0, ElementKind::U8, x->shape()))
    return err;
  dynamicQuantize(*x, scale, zp, ctx.outputs[0]);
  if (ctx.wantsOutput(1)) {
    if (auto err = ctx.allocateOutput(1, ElementKind::F32, {}))
      return err;
    ctx.outputs[1].data<float>()[0] = scale;
  }
  if (ctx.wantsOutput(2)) {
    if (auto err = ctx.allocateOutput(2, ElementKind::U8, {}))
      return err;
    ctx.outputs[2].setInt(0, zp);
  }
  return llvm::Error::success();
}

/// ONNX Runtime's float result of an integer matmul: each int32 sum times
/// a_scale x b_scale (the product in float, b_scale per tensor or per
/// column of b), plus an optional bias per column, in float as its
/// MatMulIntegerToFloat and the Cast -> Mul chain compute it.
llvm::Error integerMatmulToFloat(KernelContext &ctx, const Tensor &a,
                                 const Tensor *az, const Tensor &b,
                                 const Tensor *bz, float aScale,
                                 const Tensor &bScale, const Tensor *bias) {
  Shape shape;
  auto acc = integerMatmul(ctx, a, az, b, bz, shape);
  if (!acc)
    return acc.takeError();
  int64_t columns = shape.empty() ? 1 : shape.back();
  if (bScale.numElements() != 1 && bScale.numElements() != columns)
    return ctx.error("b_scale must be a scalar or one per column of b");
  if (bias && bias->numElements() != columns)
    return ctx.error("bias must have one value per column of b");
  if (auto err = ctx.allocateOutput(0, ElementKind::F32, shape))
    return err;
  float *y = ctx.outputs[0].data<float>();
  for (size_t i = 0; i < acc->size(); ++i) {
    int64_t column = static_cast<int64_t>(i) % columns;
    float scale =
        aScale * bScale.data<float>()[bScale.numElements() == 1 ? 0 : column];
    float v = static_cast<float>(static_cast<int32_t>((*acc)[i])) * scale;
    y[i] = bias ? v + bias->data<float>()[column] : v;
  }
  return llvm::Error::success();
}

/// com.microsoft.MatMulIntegerToFloat(A, B, a_scale, b_scale,
/// a_zero_point?, b_zero_point?, bias?).
llvm::Error matMulIntegerToFloatKernel(KernelContext &ctx) {
  const Tensor *a = ctx.input(0), *b = ctx.input(1), *as = ctx.input(2),
               *bs = ctx.input(3);
  if (!a || !b || !as || !bs)
    return ctx.error("MatMulIntegerToFloat needs A, B, a_scale and b_scale");
  if (as->numElements() != 1 || as->kind() != ElementKind::F32 ||
      bs->kind() != ElementKind::F32)
    return ctx.error("MatMulIntegerToFloat takes a float a_scale of one "
                     "value and a float b_scale");
  return integerMatmulToFloat(ctx, *a, ctx.input(4), *b, ctx.input(5),
                              as->data<float>()[0], *bs, ctx.input(6));
}

/// com.microsoft.DynamicQuantizeMatMul(A, B, b_scale, b_zero_point?,
/// bias?): A quantized as DynamicQuantizeLinear does, then as above.
llvm::Error dynamicQuantizeMatMulKernel(KernelContext &ctx) {
  const Tensor *a = ctx.input(0), *b = ctx.input(1), *bs = ctx.input(2);
  if (!a || !b || !bs || a->kind() != ElementKind::F32 ||
      bs->kind() != ElementKind::F32)
    return ctx.error(
        "DynamicQuantizeMatMul needs a float A, B and a float b_scale");
  auto [scale, zp] = dynamicParams(*a);
  auto q = Tensor::allocate(ElementKind::U8, a->shape());
  if (!q)
    return q.takeError();
  dynamicQuantize(*a, scale, zp, *q);
  Tensor qzp = Tensor::scalar(ElementKind::U8, static_cast<double>(zp));
  return integerMatmulToFloat(ctx, *q, &qzp, *b, ctx.input(3), scale, *bs,
                              ctx.input(4));
}

} // namespace

llvm::Error interp::quantizeTensor(const KernelContext &ctx, const Tensor &x,
                                   const QuantType *q, Tensor &y) {
  return quantize(ctx, x, fromType(q), y);
}

llvm::Error interp::dequantizeTensor(const KernelContext &ctx, const Tensor &x,
                                     const QuantType *q, Tensor &y) {
  return dequantize(ctx, x, fromType(q), q->getExpressedKind(), y);
}

void interp::registerQuantKernels(KernelRegistry &r) {
  r.add(ops::QQuantize, qQuantizeKernel);
  r.add(ops::QDequantize, qDequantizeKernel);
  r.add(ops::QRequantize, qRequantizeKernel);
  r.add(ops::QuantizeLinear, quantizeLinearKernel);
  r.add(ops::DequantizeLinear, dequantizeLinearKernel);
  r.add(ops::QLinearConv, qlinearConvKernel);
  r.add(ops::QLinearMatMul, qlinearMatMulKernel);
  r.add(ops::ConvInteger, convIntegerKernel);
  r.add(ops::MatMulInteger, matMulIntegerKernel);
  r.add(ops::DynamicQuantizeLinear, dynamicQuantizeLinearKernel);
  r.add(ops::MsMatMulIntegerToFloat, matMulIntegerToFloatKernel);
  r.add(ops::MsDynamicQuantizeMatMul, dynamicQuantizeMatMulKernel);
}
