//===- ResizePadKernels.cpp - Reference kernels: Expand, Tile, Pad, Resize ===//
//
// The ops that grow a tensor: Expand and Tile (axis maps, ShapeUtil.h), Pad
// (constant, edge, reflect, wrap) and Resize/Upsample (nearest as an axis
// map; linear and cubic the only kernels here that look at values).
//
//===----------------------------------------------------------------------===//

#include "ShapeUtil.h"
#include "qopt/IR/OpNames.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

using namespace qopt;
using namespace qopt::interp;
using namespace qopt::interp::shapeutil;

namespace {

//===----------------------------------------------------------------------===//
// Expand, Tile
//===----------------------------------------------------------------------===//

llvm::Error expandKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 2))
    return err;
  const Tensor &x = *ctx.input(0);
  auto shape = readInts(ctx, *ctx.input(1), "shape");
  if (!shape)
    return shape.takeError();
  for (int64_t d : *shape)
    if (d < 0)
      return ctx.error("negative dimension in shape " + shapeToString(*shape));
  auto outShape = broadcastShapes(x.shape(), *shape);
  if (!outShape)
    return ctx.error("cannot expand " + shapeToString(x.shape()) + " to " +
                     shapeToString(*shape));
  int64_t rank = outShape->size(), offset = rank - x.rank();
  return emitMapped(ctx, x, *outShape, [&] {
    Shape strides = stridesOf(x.shape());
    AxisMap map(rank);
    for (int64_t d = 0; d < rank; ++d) {
      map[d].assign((*outShape)[d], 0);
      if (d >= offset && x.dim(d - offset) != 1)
        for (int64_t i = 0; i < (*outShape)[d]; ++i)
          map[d][i] = i * strides[d - offset];
    }
    return map;
  });
}

llvm::Error tileKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 2))
    return err;
  const Tensor &x = *ctx.input(0);
  auto repeats = readInts(ctx, *ctx.input(1), "repeats");
  if (!repeats)
    return repeats.takeError();
  int64_t rank = x.rank();
  if (static_cast<int64_t>(repeats->size()) != rank)
    return ctx.error("repeats has " + Twine(repeats->size()) +
                     " entries for rank " + Twine(rank));
  Shape outShape(rank);
  for (int64_t d = 0; d < rank; ++d)
    if ((*repeats)[d] < 0 ||
        __builtin_mul_overflow(x.dim(d), (*repeats)[d], &outShape[d]))
      return ctx.error("invalid repeats " + shapeToString(*repeats));
  return emitMapped(ctx, x, outShape, [&] {
    Shape strides = stridesOf(x.shape());
    AxisMap map(rank);
    for (int64_t d = 0; d < rank; ++d) {
      map[d].resize(outShape[d]);
      for (int64_t i = 0; i < outShape[d]; ++i)
        map[d][i] = (i % x.dim(d)) * strides[d];
    }
    return map;
  });
}

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

llvm::Error padKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 1))
    return err;
  const Tensor &x = *ctx.input(0);
  int64_t rank = x.rank();
  std::string mode = ctx.getString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      !(mode == "wrap" && ctx.opset >= 19))
    return ctx.error("unsupported pad mode '" + mode + "'");

  std::vector<int64_t> pads, axes;
  Tensor fill;
  if (ctx.opset < 11 && !ctx.input(1)) {
    // 'paddings' in opset 1, 'pads' from opset 2.
    const char *name = ctx.hasAttr("pads") ? "pads" : "paddings";
    if (!ctx.hasAttr(name))
      return ctx.error("missing attribute 'pads'");
    pads = ctx.getInts(name);
    if (x.kind() != ElementKind::String) {
      fill = Tensor(x.kind(), {});
      fill.setDouble(0, ctx.getFloat("value", 0));
    }
  } else {
    if (auto err = requireInputs(ctx, 2))
      return err;
    auto p = readInts(ctx, *ctx.input(1), "pads");
    if (!p)
      return p.takeError();
    pads = std::move(*p);
    if (const Tensor *v = ctx.input(2); v && v->numElements() > 0) {
      if (v->numElements() != 1)
        return ctx.error("constant_value must have one element");
      if ((v->kind() == ElementKind::String) !=
          (x.kind() == ElementKind::String))
        return ctx.error("constant_value has element type " +
                         getElementKindName(v->kind()) + ", data has " +
                         getElementKindName(x.kind()));
      fill = v->reshaped({}).castTo(x.kind());
    }
    if (const Tensor *a = ctx.input(3)) {
      auto v = readInts(ctx, *a, "axes");
      if (!v)
        return v.takeError();
      axes = std::move(*v);
    }
  }
  if (!ctx.input(3)) {
    axes.resize(rank);
    for (int64_t d = 0; d < rank; ++d)
      axes[d] = d;
  }
  auto norm = normalizeAxes(ctx, axes, rank);
  if (!norm)
    return norm.takeError();
  size_t n = norm->size();
  if (pads.size() != 2 * n)
    return ctx.error("pads has " + Twine(pads.size()) + " entries, expected " +
                     Twine(2 * n));
  Shape begin(rank, 0), end(rank, 0);
  for (size_t i = 0; i < n; ++i) {
    begin[(*norm)[i]] = pads[i];
    end[(*norm)[i]] = pads[n + i];
  }

  // Negative pads crop first; the remaining [lo, hi) range is then padded.
  Shape outShape(rank), lo(rank), len(rank), before(rank);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = x.dim(d), b = begin[d], e = end[d];
    if (b < -dim || e < -dim || (b < 0 && e < 0 && -b > dim + e))
      return ctx.error("pads remove more than dimension " + Twine(d) +
                       " of size " + Twine(dim));
    lo[d] = b < 0 ? -b : 0;
    len[d] = (e < 0 ? dim + e : dim) - lo[d];
    before[d] = std::max<int64_t>(b, 0);
    if (__builtin_add_overflow(len[d], before[d], &outShape[d]) ||
        __builtin_add_overflow(outShape[d], std::max<int64_t>(e, 0),
                               &outShape[d]))
      return ctx.error("padded dimension " + Twine(d) + " is too large");
    if (len[d] == 0 && outShape[d] > 0 && mode != "constant")
      return ctx.error("cannot pad an empty dimension in '" + mode + "' mode");
  }
  auto buildMap = [&] {
    Shape strides = stridesOf(x.shape());
    AxisMap map(rank);
    for (int64_t d = 0; d < rank; ++d) {
      int64_t n = len[d];
      map[d].resize(outShape[d]);
      for (int64_t o = 0; o < outShape[d]; ++o) {
        int64_t p = o - before[d], src;
        if (p >= 0 && p < n) {
          src = p;
        } else if (mode == "constant") {
          map[d][o] = kOutside;
          continue;
        } else if (mode == "edge") {
          src = std::clamp<int64_t>(p, 0, n - 1);
        } else if (mode == "wrap") {
          src = ((p % n) + n) % n;
        } else if (n == 1) { // reflect
          src = 0;
        } else {
          int64_t period = 2 * (n - 1);
          src = ((p % period) + period) % period;
          if (src >= n)
            src = period - src;
        }
        map[d][o] = (lo[d] + src) * strides[d];
      }
    }
    return map;
  };
  return emitMapped(ctx, x, outShape, buildMap,
                    fill.isValid() ? &fill : nullptr);
}

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

enum class CoordMode {
  HalfPixel,
  HalfPixelSymmetric,
  PytorchHalfPixel,
  AlignCorners,
  Asymmetric,
  TfHalfPixelForNN,
  TfCropAndResize,
};

enum class NearestMode {
  Simple,
  RoundPreferFloor,
  RoundPreferCeil,
  Floor,
  Ceil
};

enum class InterpMode { Nearest, Linear, Cubic };

struct ResizeAxis {
  int64_t inLen = 0, outLen = 0;
  double scale = 1;
  double roiStart = 0, roiEnd = 1;
};

struct Tap {
  int64_t index;
  double weight;
};

/// The input coordinate of output coordinate `x` along one axis. Follows the
/// ONNX reference: `outWidth` is scale * inLen, fractional for scales.
double originalCoordinate(CoordMode mode, int64_t xi, const ResizeAxis &a) {
  double x = static_cast<double>(xi);
  double in = static_cast<double>(a.inLen);
  double outWidth = a.scale * in;
  switch (mode) {
  case CoordMode::HalfPixel:
    return (x + 0.5) / a.scale - 0.5;
  case CoordMode::HalfPixelSymmetric: {
    double adjustment = static_cast<double>(a.outLen) / outWidth;
    double center = in / 2;
    double offset = center * (1 - adjustment);
    return offset + (x + 0.5) / a.scale - 0.5;
  }
  case CoordMode::PytorchHalfPixel:
    return a.outLen > 1 ? (x + 0.5) / a.scale - 0.5 : 0.0;
  case CoordMode::AlignCorners:
    return outWidth == 1 ? 0.0 : x * (in - 1) / (outWidth - 1);
  case CoordMode::Asymmetric:
    return x / a.scale;
  case CoordMode::TfHalfPixelForNN:
    return (x + 0.5) / a.scale;
  case CoordMode::TfCropAndResize: {
    double r = a.roiEnd - a.roiStart;
    double v =
        outWidth == 1 ? r * (in - 1) / 2 : x * r * (in - 1) / (outWidth - 1);
    return v + a.roiStart * (in - 1);
  }
  }
  return 0;
}

int64_t nearestIndex(NearestMode mode, double x, double scale) {
  double fl = std::floor(x);
  if (x == fl)
    return static_cast<int64_t>(fl);
  double ratio = x - fl;
  switch (mode) {
  case NearestMode::Simple: // Resize-10 (as onnxruntime)
    return scale < 1 ? static_cast<int64_t>(std::ceil(x))
                     : static_cast<int64_t>(std::trunc(x));
  case NearestMode::RoundPreferFloor:
    return static_cast<int64_t>(ratio <= 0.5 ? fl : fl + 1);
  case NearestMode::RoundPreferCeil:
    return static_cast<int64_t>(ratio < 0.5 ? fl : fl + 1);
  case NearestMode::Floor:
    return static_cast<int64_t>(fl);
  case NearestMode::Ceil:
    return static_cast<int64_t>(fl + 1);
  }
  return 0;
}

std::array<double, 4> cubicCoefficients(double r, double A) {
  double s = 1 - r;
  return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
          ((A + 2) * r - (A + 3)) * r * r + 1,
          ((A + 2) * s - (A + 3)) * s * s + 1,
          ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A};
}

/// Interpolation taps of every output coordinate along one axis; an empty
/// list means "extrapolation value" (tf_crop_and_resize outside the input).
std::vector<std::vector<Tap>> axisTaps(const ResizeAxis &a, InterpMode interp,
                                       CoordMode coord, NearestMode nearest,
                                       double cubicA, bool excludeOutside) {
  std::vector<std::vector<Tap>> taps(a.outLen);
  int64_t last = a.inLen - 1;
  for (int64_t o = 0; o < a.outLen; ++o) {
    double x = originalCoordinate(coord, o, a);
    if (coord == CoordMode::TfCropAndResize &&
        (x < 0 || x > static_cast<double>(last)))
      continue;
    if (!std::isfinite(x))
      x = 0;
    x = std::clamp(x, -1e15, 1e15);
    std::vector<Tap> &t = taps[o];
    if (interp == InterpMode::Nearest) {
      t.push_back(
          {std::clamp<int64_t>(nearestIndex(nearest, x, a.scale), 0, last),
           1.0});
      continue;
    }
    double fl = std::floor(x), r = x - fl;
    int64_t base = static_cast<int64_t>(fl);
    if (interp == InterpMode::Linear) {
      t.push_back({base, 1 - r});
      t.push_back({base + 1, r});
    } else {
      std::array<double, 4> c = cubicCoefficients(r, cubicA);
      for (int k = 0; k < 4; ++k)
        t.push_back({base - 1 + k, c[k]});
    }
    if (excludeOutside) {
      double sum = 0;
      for (Tap &tap : t) {
        if (tap.index < 0 || tap.index > last)
          tap.weight = 0;
        sum += tap.weight;
      }
      for (Tap &tap : t)
        tap.weight = sum != 0 ? tap.weight / sum : 0;
    }
    std::vector<Tap> kept;
    for (Tap &tap : t)
      if (tap.weight != 0)
        kept.push_back({std::clamp<int64_t>(tap.index, 0, last), tap.weight});
    if (kept.empty())
      kept.push_back({std::clamp<int64_t>(base, 0, last), 0.0});
    t = std::move(kept);
  }
  return taps;
}

struct ResizeOptions {
  InterpMode interp;
  CoordMode coord;
  NearestMode nearest;
  double cubicA;
  bool excludeOutside;
  double extrapolation;
};

/// Resizes `x` to the output lengths in `ax` (one entry per dimension).
llvm::Error runResize(KernelContext &ctx, const Tensor &x,
                      const std::vector<ResizeAxis> &ax,
                      const ResizeOptions &opt) {
  int64_t rank = x.rank();
  InterpMode interp = opt.interp;
  double extrapolation = opt.extrapolation;
  Shape outShape(rank);
  for (int64_t d = 0; d < rank; ++d) {
    outShape[d] = ax[d].outLen;
    if (ax[d].inLen == 0 && ax[d].outLen > 0)
      return ctx.error("cannot resize an empty dimension");
  }
  if (auto err = ctx.allocateOutput(0, x.kind(), outShape))
    return err;
  Tensor &out = ctx.outputs[0];
  if (out.numElements() == 0)
    return llvm::Error::success();

  std::vector<std::vector<std::vector<Tap>>> taps(rank);
  for (int64_t d = 0; d < rank; ++d)
    taps[d] = axisTaps(ax[d], interp, opt.coord, opt.nearest, opt.cubicA,
                       opt.excludeOutside);

  if (interp == InterpMode::Nearest) {
    Shape strides = stridesOf(x.shape());
    AxisMap map(rank);
    for (int64_t d = 0; d < rank; ++d) {
      map[d].resize(outShape[d]);
      for (int64_t o = 0; o < outShape[d]; ++o)
        map[d][o] =
            taps[d][o].empty() ? kOutside : taps[d][o][0].index * strides[d];
    }
    Tensor fill;
    if (x.kind() != ElementKind::String)
      fill = Tensor::scalar(x.kind(), extrapolation);
    copyMapped(x, out, map, fill.isValid() ? &fill : nullptr);
    return llvm::Error::success();
  }

  if (!isFloatKind(x.kind()) && !isIntegerKind(x.kind()))
    return ctx.error("linear and cubic interpolation need a numeric input");
  // Separable interpolation in double, innermost axis first (the order of the
  // ONNX reference's recursion).
  std::vector<double> cur = x.toDoubles();
  Shape curShape = x.shape();
  for (int64_t d = rank - 1; d >= 0; --d) {
    const ResizeAxis &a = ax[d];
    bool identity = a.outLen == a.inLen;
    for (int64_t o = 0; identity && o < a.outLen; ++o)
      identity = taps[d][o].size() == 1 && taps[d][o][0].index == o &&
                 taps[d][o][0].weight == 1.0;
    if (identity)
      continue;
    Shape nextShape = curShape;
    nextShape[d] = a.outLen;
    auto count = shapeNumElements(nextShape);
    if (!count || *count > (int64_t(1) << 31))
      return ctx.error("intermediate resize result is too large");
    int64_t outer = product(llvm::ArrayRef<int64_t>(curShape).take_front(d));
    int64_t inner =
        product(llvm::ArrayRef<int64_t>(curShape).drop_front(d + 1));
    std::vector<double> next(*count, 0.0);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < a.outLen; ++j) {
        double *dst = next.data() + (o * a.outLen + j) * inner;
        if (taps[d][j].empty()) {
          std::fill(dst, dst + inner, extrapolation);
          continue;
        }
        for (const Tap &t : taps[d][j]) {
          const double *src = cur.data() + (o * a.inLen + t.index) * inner;
          for (int64_t k = 0; k < inner; ++k)
            dst[k] += t.weight * src[k];
        }
      }
    }
    cur = std::move(next);
    curShape = std::move(nextShape);
  }
  for (int64_t i = 0; i < out.numElements(); ++i)
    out.setDouble(i, cur[i]);
  return llvm::Error::success();
}

llvm::Error resizeKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 1))
    return err;
  const Tensor &x = *ctx.input(0);
  int64_t rank = x.rank();

  std::string modeName = ctx.getString("mode", "nearest");
  InterpMode interp;
  if (modeName == "nearest")
    interp = InterpMode::Nearest;
  else if (modeName == "linear")
    interp = InterpMode::Linear;
  else if (modeName == "cubic" && ctx.opset >= 11)
    interp = InterpMode::Cubic;
  else
    return ctx.error("unsupported Resize mode '" + modeName + "'");
  if (ctx.getInt("antialias", 0) != 0)
    return ctx.error("Resize with antialias=1 is not supported");

  CoordMode coord = CoordMode::Asymmetric;
  NearestMode nearest = NearestMode::Simple;
  if (ctx.opset >= 11) {
    std::string c =
        ctx.getString("coordinate_transformation_mode", "half_pixel");
    if (c == "half_pixel")
      coord = CoordMode::HalfPixel;
    else if (c == "half_pixel_symmetric")
      coord = CoordMode::HalfPixelSymmetric;
    else if (c == "pytorch_half_pixel")
      coord = CoordMode::PytorchHalfPixel;
    else if (c == "align_corners")
      coord = CoordMode::AlignCorners;
    else if (c == "asymmetric")
      coord = CoordMode::Asymmetric;
    else if (c == "tf_half_pixel_for_nn")
      coord = CoordMode::TfHalfPixelForNN;
    else if (c == "tf_crop_and_resize")
      coord = CoordMode::TfCropAndResize;
    else
      return ctx.error("unsupported coordinate_transformation_mode '" + c +
                       "'");
    std::string n = ctx.getString("nearest_mode", "round_prefer_floor");
    if (n == "round_prefer_floor")
      nearest = NearestMode::RoundPreferFloor;
    else if (n == "round_prefer_ceil")
      nearest = NearestMode::RoundPreferCeil;
    else if (n == "floor")
      nearest = NearestMode::Floor;
    else if (n == "ceil")
      nearest = NearestMode::Ceil;
    else
      return ctx.error("unsupported nearest_mode '" + n + "'");
  }
  bool excludeOutside = ctx.getInt("exclude_outside", 0) != 0;
  double cubicA = ctx.getFloat("cubic_coeff_a", -0.75f);
  double extrapolation = ctx.getFloat("extrapolation_value", 0.0f);
  std::string policy = ctx.getString("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    return ctx.error("unsupported keep_aspect_ratio_policy '" + policy + "'");

  // Inputs: (X, scales) in opset 10; (X, roi, scales, sizes) from 11. An
  // empty tensor stands for an absent input.
  auto present = [&](size_t i) -> const Tensor * {
    const Tensor *t = ctx.input(i);
    return t && t->numElements() > 0 ? t : nullptr;
  };
  const Tensor *roi = nullptr, *scales, *sizes = nullptr;
  if (ctx.opset < 11 && ctx.op.getNumOperands() == 2) {
    scales = present(1);
  } else {
    roi = present(1);
    scales = present(2);
    sizes = present(3);
  }
  if (!scales == !sizes)
    return ctx.error(scales ? "Resize has both scales and sizes"
                            : "Resize needs scales or sizes");

  std::vector<int64_t> axes;
  if (ctx.opset >= 18 && ctx.hasAttr("axes")) {
    auto norm = normalizeAxes(ctx, ctx.getInts("axes"), rank);
    if (!norm)
      return norm.takeError();
    axes = std::move(*norm);
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  size_t n = axes.size();

  std::vector<ResizeAxis> ax(rank);
  for (int64_t d = 0; d < rank; ++d)
    ax[d].inLen = ax[d].outLen = x.dim(d);
  // roi only matters for tf_crop_and_resize; other modes ignore it.
  if (roi && coord == CoordMode::TfCropAndResize) {
    if (!isFloatKind(roi->kind()) || roi->numElements() != int64_t(2 * n))
      return ctx.error("roi must be a float tensor of " + Twine(2 * n) +
                       " elements");
    for (size_t i = 0; i < n; ++i) {
      ax[axes[i]].roiStart = roi->getDouble(i);
      ax[axes[i]].roiEnd = roi->getDouble(n + i);
    }
  }
  if (scales) {
    if (!isFloatKind(scales->kind()) || scales->numElements() != int64_t(n))
      return ctx.error("scales must be a float tensor of " + Twine(n) +
                       " elements");
    for (size_t i = 0; i < n; ++i) {
      ResizeAxis &a = ax[axes[i]];
      a.scale = scales->getDouble(i);
      if (!(a.scale > 0) || !std::isfinite(a.scale))
        return ctx.error("scales must be positive");
      // The product in float, as ONNX Runtime and the shape inference in
      // lib/IR compute it (3 * 5/3 gives 5, not 4).
      double out = std::floor(static_cast<double>(static_cast<float>(a.inLen) *
                                                  static_cast<float>(a.scale)));
      if (out > double(int64_t(1) << 40))
        return ctx.error("resized dimension is too large");
      a.outLen = static_cast<int64_t>(out);
    }
  } else {
    auto v = readInts(ctx, *sizes, "sizes");
    if (!v)
      return v.takeError();
    if (v->size() != n)
      return ctx.error("sizes must have " + Twine(n) + " elements");
    for (size_t i = 0; i < n; ++i) {
      ResizeAxis &a = ax[axes[i]];
      if ((*v)[i] < 0)
        return ctx.error("sizes must not be negative");
      a.outLen = (*v)[i];
      if (a.inLen == 0 && a.outLen > 0)
        return ctx.error("cannot resize an empty dimension to " +
                         Twine(a.outLen));
      a.scale = a.inLen == 0 ? 1.0
                             : static_cast<double>(a.outLen) /
                                   static_cast<double>(a.inLen);
    }
    if (policy != "stretch" && n > 0) {
      double s = ax[axes[0]].scale;
      for (int64_t d : axes)
        s = policy == "not_larger" ? std::min(s, ax[d].scale)
                                   : std::max(s, ax[d].scale);
      for (int64_t d : axes) {
        ax[d].scale = s;
        ax[d].outLen =
            static_cast<int64_t>(static_cast<double>(ax[d].inLen) * s + 0.5);
      }
    }
  }
  return runResize(
      ctx, x, ax,
      {interp, coord, nearest, cubicA, excludeOutside, extrapolation});
}

/// Upsample (deprecated by Resize-10): scales as an attribute before opset 9,
/// as input 1 from 9; asymmetric coordinates, nearest or linear, with the
/// nearest pixel rounding of Resize-10.
llvm::Error upsampleKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 1))
    return err;
  const Tensor &x = *ctx.input(0);
  std::string modeName = ctx.getString("mode", "nearest");
  if (modeName != "nearest" && modeName != "linear")
    return ctx.error("unsupported Upsample mode '" + modeName + "'");
  std::vector<double> scales;
  if (ctx.opset < 9) {
    if (!ctx.hasAttr("scales"))
      return ctx.error("missing attribute 'scales'");
    for (float f : ctx.getFloats("scales"))
      scales.push_back(f);
  } else {
    if (auto err = requireInputs(ctx, 2))
      return err;
    const Tensor &t = *ctx.input(1);
    if (!isFloatKind(t.kind()))
      return ctx.error("scales must be a float tensor");
    scales = t.toDoubles();
  }
  if (static_cast<int64_t>(scales.size()) != x.rank())
    return ctx.error("scales has " + Twine(scales.size()) +
                     " entries for rank " + Twine(x.rank()));
  std::vector<ResizeAxis> ax(x.rank());
  for (int64_t d = 0; d < x.rank(); ++d) {
    ResizeAxis &a = ax[d];
    a.inLen = x.dim(d);
    a.scale = scales[d];
    if (!(a.scale >= 1) || !std::isfinite(a.scale))
      return ctx.error("Upsample scales must be >= 1");
    double out = std::floor(static_cast<double>(a.inLen) * a.scale);
    if (out > double(int64_t(1) << 40))
      return ctx.error("upsampled dimension is too large");
    a.outLen = static_cast<int64_t>(out);
  }
  InterpMode interp =
      modeName == "nearest" ? InterpMode::Nearest : InterpMode::Linear;
  return runResize(
      ctx, x, ax,
      {interp, CoordMode::Asymmetric, NearestMode::Simple, -0.75, false, 0.0});
}

} // namespace

void interp::registerResizeKernels(KernelRegistry &r) {
  r.add(ops::Expand, expandKernel);
  r.add(ops::Tile, tileKernel);
  r.add(ops::Pad, padKernel);
  r.add(ops::Resize, resizeKernel);
  r.add(ops::Upsample, upsampleKernel);
}
