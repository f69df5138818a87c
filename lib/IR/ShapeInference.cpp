//===- ShapeInference.cpp - Shapes of elementwise, NN and quant ops -------===//
//
// ONNX semantics. Static sizes are computed exactly, symbolic dimensions
// pass through where the op keeps them, everything else becomes '?'. An
// operand shape that cannot fit the op (a Conv weight of the wrong rank,
// MatMul inner dimensions that differ) is an error naming the node.
//
//===----------------------------------------------------------------------===//

#include "OpImpl.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <limits>

using namespace qopt;
using namespace qopt::opimpl;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

llvm::Expected<int64_t> opimpl::normalizeAxis(InferenceContext &ctx,
                                              int64_t axis, int64_t rank,
                                              llvm::StringRef what) {
  if (axis < -rank || axis >= rank)
    return ctx.error(what + " " + llvm::Twine(axis) +
                     " is out of range for rank " + llvm::Twine(rank));
  return axis < 0 ? axis + rank : axis;
}

std::optional<int64_t> opimpl::staticProduct(llvm::ArrayRef<Dim> dims) {
  int64_t n = 1;
  for (const Dim &d : dims)
    if (!d.isStatic() || __builtin_mul_overflow(n, d.size, &n))
      return std::nullopt;
  return n;
}

Shape opimpl::staticShape(llvm::ArrayRef<int64_t> dims) {
  Shape s;
  for (int64_t d : dims)
    s.push_back(Dim::fixed(d));
  return s;
}

std::string opimpl::operandShapeText(InferenceContext &ctx, unsigned i) {
  return ctx.hasRank(i) ? shapeToText(ctx.getShape(i)) : "unranked";
}

llvm::Expected<Shape> opimpl::broadcastShapes(InferenceContext &ctx,
                                              llvm::ArrayRef<Dim> a,
                                              llvm::ArrayRef<Dim> b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim *x = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
    const Dim *y = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
    Dim one = Dim::fixed(1);
    const Dim &p = x ? *x : one, &q = y ? *y : one;
    if (p.isStatic() && q.isStatic()) {
      if (p.size != q.size && p.size != 1 && q.size != 1)
        return ctx.error("operand shapes " + shapeToText(a) + " and " +
                         shapeToText(b) + " do not broadcast");
      out[i] = p.size == 1 ? q : p;
    } else if (p.isStatic()) {
      out[i] = p.size == 1 ? q : p;
    } else if (q.isStatic()) {
      out[i] = q.size == 1 ? p : q;
    } else {
      out[i] = p == q ? p : Dim::dynamic();
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

llvm::Error opimpl::inferSameShape(InferenceContext &ctx) {
  for (unsigned i = 0; i < ctx.getNumResults(); ++i)
    ctx.setResultShapeLike(i, 0);
  return llvm::Error::success();
}

llvm::Error opimpl::inferBroadcast(InferenceContext &ctx) {
  Shape shape;
  bool first = true;
  for (unsigned i = 0; i < ctx.getNumOperands(); ++i) {
    if (!ctx.getOperand(i))
      continue;
    if (!ctx.hasRank(i))
      return llvm::Error::success(); // unranked result
    if (first) {
      llvm::ArrayRef<Dim> s = ctx.getShape(i);
      shape.assign(s.begin(), s.end());
      first = false;
      continue;
    }
    auto b = broadcastShapes(ctx, shape, ctx.getShape(i));
    if (!b)
      return b.takeError();
    shape = std::move(*b);
  }
  if (!first)
    ctx.setResultShape(0, shape);
  return llvm::Error::success();
}

llvm::Error opimpl::inferCast(InferenceContext &ctx) {
  int64_t to = ctx.getInt("to");
  auto kind = elementKindFromOnnxDataType(to);
  if (!kind || *kind == ElementKind::Unknown)
    return ctx.error("cast to ONNX data type " + llvm::Twine(to) +
                     ", which qopt does not support");
  ctx.setResultElement(0, ctx.ctx.getElementType(*kind));
  ctx.setResultShapeLike(0, 0);
  return llvm::Error::success();
}

llvm::Error opimpl::inferEyeLike(InferenceContext &ctx) {
  if (ctx.hasAttr("dtype")) {
    auto kind = elementKindFromOnnxDataType(ctx.getInt("dtype"));
    if (!kind || *kind == ElementKind::Unknown)
      return ctx.error("unsupported dtype " + llvm::Twine(ctx.getInt("dtype")));
    ctx.setResultElement(0, ctx.ctx.getElementType(*kind));
  } else if (const TensorType *t = ctx.getOperandType(0)) {
    ctx.setResultElement(0, ctx.ctx.getElementType(t->getStorageKind()));
  }
  if (ctx.hasRank(0) && ctx.getRank(0) != 2)
    return ctx.error("input must be 2-D, got " + operandShapeText(ctx, 0));
  ctx.setResultShapeLike(0, 0);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// q dialect and ONNX quantization ops
//===----------------------------------------------------------------------===//

llvm::Error opimpl::inferQuantize(InferenceContext &ctx) {
  return inferSameShape(ctx); // the result type holds the parameters
}

llvm::Error opimpl::inferDequantize(InferenceContext &ctx) {
  if (const TensorType *t = ctx.getOperandType(0))
    if (const QuantType *q = t->getQuantType())
      ctx.setResultElement(0, ctx.ctx.getElementType(q->getExpressedKind()));
  return inferSameShape(ctx);
}

llvm::Error opimpl::inferRequantize(InferenceContext &ctx) {
  return inferSameShape(ctx);
}

llvm::Error opimpl::inferQuantizeLinear(InferenceContext &ctx) {
  if (!ctx.getOperand(2)) {
    ElementKind storage = ElementKind::U8;
    if (int64_t dt = ctx.getInt("output_dtype"))
      if (auto k = elementKindFromOnnxDataType(dt))
        storage = *k;
    const Type *cur = ctx.getResultElement(0);
    if (!cur || llvm::isa<ElementType>(cur))
      ctx.setResultElement(0, ctx.ctx.getElementType(storage));
  }
  return inferSameShape(ctx);
}

llvm::Error opimpl::inferDequantizeLinear(InferenceContext &ctx) {
  return inferSameShape(ctx);
}

llvm::Error opimpl::inferDynamicQuantizeLinear(InferenceContext &ctx) {
  ctx.setResultShapeLike(0, 0);
  ctx.setResultShape(1, {});
  ctx.setResultShape(2, {});
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Constants and shape queries
//===----------------------------------------------------------------------===//

llvm::Error opimpl::inferConstant(InferenceContext &ctx) {
  const Node &n = ctx.node;
  Context &c = ctx.ctx;
  auto set = [&](ElementKind kind, Shape shape) {
    const Type *cur = ctx.getResultElement(0);
    // An integer weight may be typed with its quantization parameters.
    bool keep = cur && llvm::isa<QuantType>(cur) &&
                llvm::cast<QuantType>(cur)->getStorageKind() == kind;
    ctx.setResultElement(0, keep ? cur : c.getElementType(kind));
    ctx.setResultShape(0, std::move(shape));
  };
  if (const Attribute *a = n.getAttr("value")) {
    if (const DenseElementsRef *d = a->getIf<DenseElementsRef>())
      set((*d)->getKind(), staticShape((*d)->getDims()));
  } else if (n.getAttr("value_float")) {
    set(ElementKind::F32, {});
  } else if (n.getAttr("value_int")) {
    set(ElementKind::I64, {});
  } else if (n.getAttr("value_string")) {
    set(ElementKind::String, {});
  } else if (const Attribute *a = n.getAttr("value_floats")) {
    if (auto *v = a->getIf<std::vector<float>>())
      set(ElementKind::F32, {Dim::fixed(v->size())});
  } else if (const Attribute *a = n.getAttr("value_ints")) {
    set(ElementKind::I64, {Dim::fixed(a->getInts().size())});
  } else if (const Attribute *a = n.getAttr("value_strings")) {
    if (auto *v = a->getIf<std::vector<std::string>>())
      set(ElementKind::String, {Dim::fixed(v->size())});
  }
  return llvm::Error::success();
}

llvm::Error opimpl::inferConstantOfShape(InferenceContext &ctx) {
  ElementKind kind = ElementKind::F32;
  if (const Attribute *a = ctx.node.getAttr("value"))
    if (const DenseElementsRef *d = a->getIf<DenseElementsRef>())
      kind = (*d)->getKind();
  ctx.setResultElement(0, ctx.ctx.getElementType(kind));
  if (auto dims = ctx.getConstantInts(0)) {
    for (int64_t d : *dims)
      if (d < 0)
        return ctx.error("negative dimension " + llvm::Twine(d) +
                         " in the requested shape");
    ctx.setResultShape(0, staticShape(*dims));
  } else if (ctx.hasRank(0) && ctx.getRank(0) == 1 &&
             ctx.getShape(0)[0].isStatic()) {
    ctx.setResultShape(0, Shape(ctx.getShape(0)[0].size, Dim::dynamic()));
  }
  return llvm::Error::success();
}

llvm::Error opimpl::inferShapeOp(InferenceContext &ctx) {
  if (!ctx.hasRank(0)) {
    ctx.setResultShape(0, {Dim::dynamic()});
    return llvm::Error::success();
  }
  int64_t rank = ctx.getRank(0);
  auto clamp = [&](int64_t v) {
    if (v < 0)
      v += rank;
    return std::min(std::max<int64_t>(v, 0), rank);
  };
  int64_t start = clamp(ctx.getInt("start"));
  int64_t end = ctx.hasAttr("end") ? clamp(ctx.getInt("end")) : rank;
  ctx.setResultShape(0, {Dim::fixed(std::max<int64_t>(end - start, 0))});
  return llvm::Error::success();
}

llvm::Error opimpl::inferSize(InferenceContext &ctx) {
  ctx.setResultShape(0, {});
  return llvm::Error::success();
}

llvm::Error opimpl::inferRange(InferenceContext &ctx) {
  const DenseElements *s = ctx.getConstant(0), *l = ctx.getConstant(1),
                      *d = ctx.getConstant(2);
  if (!s || !l || !d || s->getNumElements() != 1 || l->getNumElements() != 1 ||
      d->getNumElements() != 1) {
    ctx.setResultShape(0, {Dim::dynamic()});
    return llvm::Error::success();
  }
  double delta = d->getAsDouble(0);
  if (delta == 0)
    return ctx.error("delta is 0");
  double count = std::ceil((l->getAsDouble(0) - s->getAsDouble(0)) / delta);
  if (!std::isfinite(count) || count > kMaxInferredDim)
    return ctx.error("the range has " +
                     (std::isfinite(count) ? std::to_string(count)
                                           : std::string("no finite")) +
                     " elements");
  ctx.setResultShape(0, {Dim::fixed(std::max<int64_t>(0, count))});
  return llvm::Error::success();
}

llvm::Error opimpl::inferNonZero(InferenceContext &ctx) {
  ctx.setResultShape(
      0, {ctx.hasRank(0) ? Dim::fixed(ctx.getRank(0)) : Dim::dynamic(),
          Dim::dynamic()});
  return llvm::Error::success();
}

llvm::Error opimpl::inferOneHot(InferenceContext &ctx) {
  if (!ctx.hasRank(0))
    return llvm::Error::success();
  Shape out(ctx.getShape(0).begin(), ctx.getShape(0).end());
  auto axis = normalizeAxis(ctx, ctx.getInt("axis"), out.size() + 1, "axis");
  if (!axis)
    return axis.takeError();
  Dim depth = Dim::dynamic();
  if (const DenseElements *d = ctx.getConstant(1))
    if (d->getNumElements() == 1) {
      double v = d->getAsDouble(0);
      if (!(v >= 0 && v <= kMaxInferredDim))
        return ctx.error("depth " + std::to_string(v) + " is not a valid size");
      depth = Dim::fixed(static_cast<int64_t>(v));
    }
  out.insert(out.begin() + *axis, depth);
  ctx.setResultShape(0, out);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

static llvm::Error reduceOver(InferenceContext &ctx, std::vector<int64_t> axes,
                              bool all) {
  int64_t rank = ctx.getRank(0);
  bool keep = ctx.getInt("keepdims") != 0;
  std::vector<bool> reduced(rank, all);
  for (int64_t a : axes) {
    auto axis = normalizeAxis(ctx, a, rank, "reduction axis");
    if (!axis)
      return axis.takeError();
    reduced[*axis] = true;
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i])
      out.push_back(ctx.getShape(0)[i]);
    else if (keep)
      out.push_back(Dim::fixed(1));
  }
  ctx.setResultShape(0, out);
  return llvm::Error::success();
}

llvm::Error opimpl::inferReduce(InferenceContext &ctx) {
  if (!ctx.hasRank(0))
    return llvm::Error::success();
  std::optional<std::vector<int64_t>> axes;
  if (ctx.getOperand(1))
    axes = ctx.getConstantInts(1);
  else
    axes = ctx.getInts("axes"); // empty: every axis, or none (noop)
  if (!axes) { // computed axes: only the rank is known with keepdims
    if (ctx.getInt("keepdims"))
      ctx.setResultShape(0, Shape(ctx.getRank(0), Dim::dynamic()));
    return llvm::Error::success();
  }
  if (axes->empty() && ctx.getInt("noop_with_empty_axes"))
    return inferSameShape(ctx);
  return reduceOver(ctx, *axes, axes->empty());
}

llvm::Error opimpl::inferArgReduce(InferenceContext &ctx) {
  if (!ctx.hasRank(0))
    return llvm::Error::success();
  return reduceOver(ctx, {ctx.getInt("axis")}, false);
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// ONNX gives a window's padding either by auto_pad or by pads: pads only
/// with auto_pad NOTSET (or absent); its checker refuses both.
static llvm::Error checkAutoPadWithoutPads(InferenceContext &ctx,
                                           llvm::StringRef autoPad) {
  if (!autoPad.empty() && autoPad != "NOTSET" && ctx.hasAttr("pads"))
    return ctx.error("auto_pad " + autoPad +
                     " and pads are both given; pads go with auto_pad "
                     "NOTSET only");
  return llvm::Error::success();
}

/// Spatial output sizes of a sliding window. `kernel` are the effective
/// kernel sizes before dilation; reads pads/strides/dilations/auto_pad.
llvm::Expected<Shape> opimpl::slidingWindowShape(InferenceContext &ctx,
                                                 llvm::ArrayRef<Dim> input,
                                                 llvm::ArrayRef<int64_t> kernel,
                                                 Dim channels, bool ceilMode) {
  size_t spatial = input.size() - 2;
  if (kernel.size() != spatial)
    return ctx.error("kernel has " + llvm::Twine(kernel.size()) +
                     " spatial dimensions but the input " + shapeToText(input) +
                     " has " + llvm::Twine(spatial));
  auto listOr = [&](llvm::StringRef name, size_t size,
                    int64_t fill) -> llvm::Expected<std::vector<int64_t>> {
    std::vector<int64_t> v = ctx.getInts(name);
    if (v.empty())
      return std::vector<int64_t>(size, fill);
    if (v.size() != size)
      return ctx.error("'" + name + "' has " + llvm::Twine(v.size()) +
                       " values, expected " + llvm::Twine(size));
    return v;
  };
  auto strides = listOr("strides", spatial, 1);
  if (!strides)
    return strides.takeError();
  auto dilations = listOr("dilations", spatial, 1);
  if (!dilations)
    return dilations.takeError();
  auto pads = listOr("pads", 2 * spatial, 0);
  if (!pads)
    return pads.takeError();
  std::string autoPad = ctx.getString("auto_pad");
  if (auto err = checkAutoPadWithoutPads(ctx, autoPad))
    return err;
  Shape out{input[0], channels};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t s = (*strides)[i], d = (*dilations)[i], k = kernel[i];
    if (s <= 0 || d <= 0 || k <= 0)
      return ctx.error("strides, dilations and kernel sizes must be > 0");
    const Dim &in = input[i + 2];
    if (!in.isStatic()) {
      out.push_back(Dim::dynamic());
      continue;
    }
    // In 128 bits: a dilation or pad near 2^62 overflows 64.
    __int128 effective = __int128(k - 1) * d + 1, size;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      size = (__int128(in.size) + s - 1) / s;
    } else if (autoPad == "VALID" || autoPad == "NOTSET" || autoPad.empty()) {
      bool valid = autoPad == "VALID"; // no padding at all
      __int128 begin = valid ? 0 : (*pads)[i];
      __int128 padded =
          in.size + begin + (valid ? 0 : __int128((*pads)[i + spatial]));
      if (padded < effective)
        size = 0;
      else if (ceilMode) {
        size = (padded - effective + s - 1) / s + 1;
        // The last window must start inside the input or its left padding.
        if ((size - 1) * s >= in.size + begin)
          --size;
      } else {
        size = (padded - effective) / s + 1;
      }
    } else {
      return ctx.error("unknown auto_pad '" + autoPad + "'");
    }
    if (size > std::numeric_limits<int64_t>::max())
      return ctx.error("the window's output on spatial axis " + llvm::Twine(i) +
                       " is too large");
    if (size <= 0)
      return ctx.error("input " + shapeToText(input) +
                       " is smaller than the kernel window (spatial axis " +
                       llvm::Twine(i) + ")");
    out.push_back(Dim::fixed(size));
  }
  return out;
}

/// Conv-like ops: input `x`, weight `w` [M, C/group, k...].
static llvm::Error inferConvLike(InferenceContext &ctx, unsigned x,
                                 unsigned w) {
  if (!ctx.hasRank(x) || !ctx.hasRank(w))
    return llvm::Error::success();
  llvm::ArrayRef<Dim> xs = ctx.getShape(x), ws = ctx.getShape(w);
  if (xs.size() < 3)
    return ctx.error("input must have rank >= 3 (N, C, spatial...), got " +
                     shapeToText(xs));
  if (ws.size() != xs.size())
    return ctx.error("weight of rank " + llvm::Twine(ws.size()) + " (" +
                     shapeToText(ws) + ") does not fit the input of rank " +
                     llvm::Twine(xs.size()) + " (" + shapeToText(xs) + ")");
  int64_t group = ctx.getInt("group");
  if (group <= 0)
    return ctx.error("group must be > 0, got " + llvm::Twine(group));
  if (xs[1].isStatic() && ws[1].isStatic() && xs[1].size != ws[1].size * group)
    return ctx.error("input has " + llvm::Twine(xs[1].size) +
                     " channels but the weight " + shapeToText(ws) +
                     " with group " + llvm::Twine(group) + " expects " +
                     llvm::Twine(ws[1].size * group));
  std::vector<int64_t> kernel = ctx.getInts("kernel_shape");
  for (size_t i = 2; i < ws.size(); ++i) {
    if (kernel.size() == ws.size() - 2) {
      if (ws[i].isStatic() && ws[i].size != kernel[i - 2])
        return ctx.error("kernel_shape does not match the weight " +
                         shapeToText(ws));
    } else if (!ws[i].isStatic()) {
      ctx.setResultShape(0, Shape(xs.size(), Dim::dynamic()));
      return llvm::Error::success();
    }
  }
  if (kernel.size() != ws.size() - 2) {
    kernel.clear();
    for (size_t i = 2; i < ws.size(); ++i)
      kernel.push_back(ws[i].size);
  }
  auto out = slidingWindowShape(ctx, xs, kernel, ws[0], false);
  if (!out)
    return out.takeError();
  ctx.setResultShape(0, *out);
  return llvm::Error::success();
}

static llvm::Error checkBias(InferenceContext &ctx, unsigned b,
                             const Dim &channels) {
  if (!ctx.getOperand(b) || !ctx.hasRank(b))
    return llvm::Error::success();
  llvm::ArrayRef<Dim> bs = ctx.getShape(b);
  if (bs.size() != 1 ||
      (bs[0].isStatic() && channels.isStatic() && bs[0].size != channels.size))
    return ctx.error("bias " + shapeToText(bs) + " does not match " +
                     (channels.isStatic() ? std::to_string(channels.size)
                                          : std::string("the")) +
                     " output channels");
  return llvm::Error::success();
}

llvm::Error opimpl::inferConv(InferenceContext &ctx) {
  if (auto err = inferConvLike(ctx, 0, 1))
    return err;
  return ctx.hasRank(1) && ctx.getRank(1) > 0
             ? checkBias(ctx, 2, ctx.getShape(1)[0])
             : llvm::Error::success();
}

/// A QOperator op's scale or zero point: one value, or (where `perAxis`
/// gives the weight's channel count) one per channel; a scalar or 1-D.
/// With `axisFromEnd` (QLinearMatMul's a: 2, b: 1), a higher rank is that
/// of its operand's values too ([1, N] for a 2-D b): its dims other than
/// that one must be 1 to be checked here; batched ones are the kernel's.
llvm::Error opimpl::checkQLinearParam(InferenceContext &ctx, unsigned i,
                                      llvm::StringRef name,
                                      std::optional<Dim> perAxis,
                                      llvm::StringRef axisName,
                                      size_t axisFromEnd) {
  if (!ctx.getOperand(i) || !ctx.hasRank(i))
    return llvm::Error::success();
  llvm::ArrayRef<Dim> shape = ctx.getShape(i);
  Dim values = shape.empty() ? Dim::fixed(1) : shape[0];
  if (shape.size() > 1) {
    if (axisFromEnd == 0 || axisFromEnd > shape.size())
      return ctx.error(name + " has rank " + llvm::Twine(shape.size()) +
                       "; a scale or zero point is a scalar or 1-D");
    size_t axis = shape.size() - axisFromEnd;
    for (size_t d = 0; d < shape.size(); ++d)
      if (d != axis && !(shape[d].isStatic() && shape[d].size == 1))
        return llvm::Error::success();
    values = shape[axis];
  }
  if (!values.isStatic() || values.size == 1)
    return llvm::Error::success();
  if (perAxis && (!perAxis->isStatic() || perAxis->size == values.size))
    return llvm::Error::success();
  return ctx.error(name + " has " + llvm::Twine(values.size) +
                   " values; it must have one" +
                   (perAxis ? " or one per " + axisName : llvm::Twine()));
}

llvm::Error opimpl::inferQLinearConv(InferenceContext &ctx) {
  if (auto err = inferConvLike(ctx, 0, 3))
    return err;
  Dim channels = ctx.hasRank(3) && ctx.getRank(3) > 0 ? ctx.getShape(3)[0]
                                                      : Dim::dynamic();
  const char *names[] = {"",        "x_scale",     "x_zero_point",
                         "",        "w_scale",     "w_zero_point",
                         "y_scale", "y_zero_point"};
  for (unsigned i : {1, 2, 6, 7})
    if (auto err = checkQLinearParam(ctx, i, names[i]))
      return err;
  for (unsigned i : {4, 5})
    if (auto err =
            checkQLinearParam(ctx, i, names[i], channels, "output channel"))
      return err;
  // A weight of rank 0 (its input's rank unknown, so not yet refused) has
  // no output channel to check a bias against.
  return ctx.hasRank(3) && ctx.getRank(3) > 0 ? checkBias(ctx, 8, channels)
                                              : llvm::Error::success();
}

llvm::Error opimpl::inferConvInteger(InferenceContext &ctx) {
  return inferConvLike(ctx, 0, 1);
}

llvm::Error opimpl::inferConvTranspose(InferenceContext &ctx) {
  if (!ctx.hasRank(0) || !ctx.hasRank(1))
    return llvm::Error::success();
  llvm::ArrayRef<Dim> xs = ctx.getShape(0), ws = ctx.getShape(1);
  if (xs.size() < 3 || ws.size() != xs.size())
    return ctx.error("weight " + shapeToText(ws) + " does not fit the input " +
                     shapeToText(xs));
  int64_t group = ctx.getInt("group");
  if (group <= 0)
    return ctx.error("group must be > 0");
  if (xs[1].isStatic() && ws[0].isStatic() && xs[1].size != ws[0].size)
    return ctx.error("input has " + llvm::Twine(xs[1].size) +
                     " channels but the weight " + shapeToText(ws) +
                     " expects " + llvm::Twine(ws[0].size));
  size_t spatial = xs.size() - 2;
  Dim channels =
      ws[1].isStatic() ? Dim::fixed(ws[1].size * group) : Dim::dynamic();
  Shape out{xs[0], channels};
  std::vector<int64_t> outputShape = ctx.getInts("output_shape");
  std::vector<int64_t> kernel = ctx.getInts("kernel_shape");
  auto get = [&](llvm::StringRef name, size_t i, int64_t fill) {
    std::vector<int64_t> v = ctx.getInts(name);
    return i < v.size() ? v[i] : fill;
  };
  std::string autoPad = ctx.getString("auto_pad");
  if (auto err = checkAutoPadWithoutPads(ctx, autoPad))
    return err;
  for (size_t i = 0; i < spatial; ++i) {
    if (outputShape.size() == spatial) {
      out.push_back(Dim::fixed(outputShape[i]));
      continue;
    }
    int64_t k = i < kernel.size()      ? kernel[i]
                : ws[i + 2].isStatic() ? ws[i + 2].size
                                       : -1;
    if (!xs[i + 2].isStatic() || k < 0) {
      out.push_back(Dim::dynamic());
      continue;
    }
    int64_t s = get("strides", i, 1), d = get("dilations", i, 1);
    int64_t in = xs[i + 2].size, size;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER")
      size = in * s;
    else
      size = s * (in - 1) + get("output_padding", i, 0) + (k - 1) * d + 1 -
             get("pads", i, 0) - get("pads", i + spatial, 0);
    if (size <= 0)
      return ctx.error("output size would be " + llvm::Twine(size));
    out.push_back(Dim::fixed(size));
  }
  ctx.setResultShape(0, out);
  return checkBias(ctx, 2, channels);
}

llvm::Error opimpl::inferPool(InferenceContext &ctx) {
  if (!ctx.hasRank(0))
    return llvm::Error::success();
  llvm::ArrayRef<Dim> xs = ctx.getShape(0);
  if (xs.size() < 3)
    return ctx.error("input must have rank >= 3 (N, C, spatial...), got " +
                     shapeToText(xs));
  auto out = slidingWindowShape(ctx, xs, ctx.getInts("kernel_shape"), xs[1],
                                ctx.getInt("ceil_mode") != 0);
  if (!out)
    return out.takeError();
  for (unsigned i = 0; i < ctx.getNumResults(); ++i)
    ctx.setResultShape(i, *out);
  return llvm::Error::success();
}

llvm::Error opimpl::inferFusedPool(InferenceContext &ctx) {
  std::string mode = ctx.getString("mode");
  if (mode == "global_average")
    return inferGlobalPool(ctx);
  if (mode == "average")
    return inferPool(ctx);
  return ctx.error("unknown pooling mode '" + mode +
                   "' (expected average or global_average)");
}

llvm::Error opimpl::inferGlobalPool(InferenceContext &ctx) {
  if (!ctx.hasRank(0))
    return llvm::Error::success();
  llvm::ArrayRef<Dim> xs = ctx.getShape(0);
  if (xs.size() < 2)
    return ctx.error("input must have rank >= 2, got " + shapeToText(xs));
  Shape out{xs[0], xs[1]};
  out.resize(xs.size(), Dim::fixed(1));
  ctx.setResultShape(0, out);
  return llvm::Error::success();
}
