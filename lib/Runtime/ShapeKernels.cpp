//===- ShapeKernels.cpp - Reference kernels: shape ops --------------------===//
//
// Data movement ops (Concat, Slice, Transpose, Pad, Resize, ...) and a few
// cheap index ops (Range, OneHot, CumSum, ...). Everything that only moves
// elements works on every element kind: elements are copied as bytes of
// getElementByteSize(kind), strings through Tensor::strings(). Only the
// interpolating modes of Resize and the arithmetic ops look at values.
//
// Most movements are expressed as an "axis map": for every output dimension d
// and coordinate i, the flat source offset contributed by i (or kOutside when
// the coordinate has no source element, e.g. constant padding). The source of
// an output element is the sum of its coordinates' contributions. Slice,
// Transpose, Expand, Tile, Pad, DepthToSpace, SpaceToDepth and nearest Resize
// are all such maps.
//
//===----------------------------------------------------------------------===//

#include "qopt/Runtime/Kernel.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

using namespace qopt;
using namespace qopt::rt;

namespace {

using llvm::Twine;
using AxisMap = std::vector<std::vector<int64_t>>;

constexpr int64_t kOutside = -1;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Copies elements of one kind between tensors by flat index.
class ElementCopier {
public:
  ElementCopier(const Tensor &src, Tensor &dst)
      : src(src), dst(dst), elemSize(getElementByteSize(src.kind())),
        isString(src.kind() == ElementKind::String) {}

  void copy(int64_t to, int64_t from, int64_t n = 1) {
    if (n <= 0)
      return;
    if (isString)
      std::copy_n(src.strings().begin() + from, n, dst.strings().begin() + to);
    else
      std::memcpy(dst.bytes() + to * elemSize, src.bytes() + from * elemSize,
                  static_cast<size_t>(n) * elemSize);
  }

private:
  const Tensor &src;
  Tensor &dst;
  size_t elemSize;
  bool isString;
};

/// Product of dimensions. Only used on parts of shapes whose total element
/// count is known to be non-zero and representable, so it cannot overflow;
/// unsigned arithmetic keeps it well defined regardless.
int64_t product(llvm::ArrayRef<int64_t> dims) {
  uint64_t n = 1;
  for (int64_t d : dims)
    n *= static_cast<uint64_t>(d);
  return static_cast<int64_t>(n);
}

llvm::Error requireInputs(const KernelContext &ctx, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!ctx.input(i))
      return ctx.error("missing required input #" + Twine(i));
  return llvm::Error::success();
}

/// Reads a scalar or 1-D integer tensor as int64 values.
llvm::Expected<std::vector<int64_t>>
readInts(const KernelContext &ctx, const Tensor &t, const Twine &what) {
  if (!isIntegerKind(t.kind()))
    return ctx.error(what + " must be an integer tensor, got " +
                     getElementKindName(t.kind()));
  if (t.rank() > 1)
    return ctx.error(what + " must be 1-D, got shape " +
                     shapeToString(t.shape()));
  return t.toInts();
}

/// A list that was an attribute before opset `sinceOpset` and is input
/// `index` from then on (Reshape's shape, Unsqueeze's axes); required.
llvm::Expected<std::vector<int64_t>>
requiredIntsFromAttrOrInput(const KernelContext &ctx, const char *name,
                            size_t index, int64_t sinceOpset) {
  // The IR's canonical form has the operand at every opset.
  if (ctx.opset < sinceOpset && !ctx.input(index)) {
    if (!ctx.hasAttr(name))
      return ctx.error(Twine("missing attribute '") + name + "'");
    return ctx.getInts(name);
  }
  if (auto err = requireInputs(ctx, index + 1))
    return std::move(err);
  return readInts(ctx, *ctx.input(index), name);
}

/// Reads a one-element integer tensor (scalar or shape [1]).
llvm::Expected<int64_t> readScalarInt(const KernelContext &ctx, const Tensor &t,
                                      const Twine &what) {
  if (!isIntegerKind(t.kind()))
    return ctx.error(what + " must be an integer tensor, got " +
                     getElementKindName(t.kind()));
  if (t.numElements() != 1 || t.rank() > 1)
    return ctx.error(what + " must be a scalar, got shape " +
                     shapeToString(t.shape()));
  return t.getInt(0);
}

/// Normalises a list of possibly negative axes for `rank`; duplicates are
/// errors.
llvm::Expected<std::vector<int64_t>> normalizeAxes(const KernelContext &ctx,
                                                   llvm::ArrayRef<int64_t> axes,
                                                   int64_t rank) {
  std::vector<int64_t> out;
  std::vector<bool> seen(rank, false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return ctx.error("axis " + Twine(a) + " is out of range for rank " +
                       Twine(rank));
    if (a < 0)
      a += rank;
    if (seen[a])
      return ctx.error("axis " + Twine(a) + " is repeated");
    seen[a] = true;
    out.push_back(a);
  }
  return out;
}

/// Fills `out` (allocated, same kind as `src`) from `src` through `map`; an
/// output element with a kOutside coordinate gets element 0 of `fill` (a
/// tensor of the same kind) or stays zero when `fill` is null.
void copyMapped(const Tensor &src, Tensor &out, const AxisMap &map,
                const Tensor *fill = nullptr) {
  int64_t count = out.numElements();
  if (count == 0)
    return;
  ElementCopier cp(src, out);
  int64_t rank = out.rank();
  if (rank == 0) {
    cp.copy(0, 0);
    return;
  }
  std::optional<ElementCopier> fp;
  if (fill)
    fp.emplace(*fill, out);
  const std::vector<int64_t> &last = map[rank - 1];
  int64_t inner = out.dim(rank - 1);
  bool lastContiguous = last[0] >= 0;
  for (int64_t i = 1; lastContiguous && i < inner; ++i)
    lastContiguous = last[i] == last[0] + i;
  Shape idx(rank, 0);
  for (int64_t dst = 0; dst < count; dst += inner) {
    int64_t base = 0;
    bool outside = false;
    for (int64_t d = 0; d + 1 < rank; ++d) {
      int64_t v = map[d][idx[d]];
      if (v < 0)
        outside = true;
      base += v;
    }
    if (!outside && lastContiguous) {
      cp.copy(dst, base + last[0], inner);
    } else {
      for (int64_t i = 0; i < inner; ++i) {
        if (outside || last[i] < 0) {
          if (fp)
            fp->copy(dst + i, 0);
        } else {
          cp.copy(dst + i, base + last[i]);
        }
      }
    }
    for (int64_t d = rank - 2; d >= 0; --d) {
      if (++idx[d] < out.dim(d))
        break;
      idx[d] = 0;
    }
  }
}

/// Allocates output 0 of `outShape` with `src`'s kind and fills it via the
/// map from `buildMap`, which is only called for a non-empty output (whose
/// dimensions, hence map sizes, are then bounded by the element count).
llvm::Error emitMapped(KernelContext &ctx, const Tensor &src, Shape outShape,
                       llvm::function_ref<AxisMap()> buildMap,
                       const Tensor *fill = nullptr) {
  if (auto err = ctx.allocateOutput(0, src.kind(), std::move(outShape)))
    return err;
  if (ctx.outputs[0].numElements() > 0)
    copyMapped(src, ctx.outputs[0], buildMap(), fill);
  return llvm::Error::success();
}

/// Output 0 = `src` with another shape of the same element count.
llvm::Error emitReshaped(KernelContext &ctx, const Tensor &src, Shape shape) {
  auto n = shapeNumElements(shape);
  if (!n || *n != src.numElements())
    return ctx.error("cannot reshape " + shapeToString(src.shape()) + " to " +
                     shapeToString(shape));
  ctx.outputs[0] = src.reshaped(std::move(shape));
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Identity, Shape, Size, Constant, ConstantOfShape
//===----------------------------------------------------------------------===//

llvm::Error identityKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 1))
    return err;
  ctx.outputs[0] = *ctx.input(0);
  return llvm::Error::success();
}

llvm::Error shapeKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 1))
    return err;
  const Tensor &x = *ctx.input(0);
  int64_t rank = x.rank();
  // start/end exist from opset 15; both are clamped to [0, rank].
  auto clampIndex = [&](int64_t i) {
    if (i < 0)
      i += rank;
    return std::clamp<int64_t>(i, 0, rank);
  };
  int64_t start = clampIndex(ctx.getInt("start", 0));
  int64_t end = clampIndex(ctx.getInt("end", rank));
  int64_t n = std::max<int64_t>(0, end - start);
  if (auto err = ctx.allocateOutput(0, ElementKind::I64, {n}))
    return err;
  for (int64_t i = 0; i < n; ++i)
    ctx.outputs[0].data<int64_t>()[i] = x.dim(start + i);
  return llvm::Error::success();
}

llvm::Error sizeKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 1))
    return err;
  if (auto err = ctx.allocateOutput(0, ElementKind::I64, {}))
    return err;
  ctx.outputs[0].data<int64_t>()[0] = ctx.input(0)->numElements();
  return llvm::Error::success();
}

llvm::Error constantKernel(KernelContext &ctx) {
  Tensor &out = ctx.outputs[0];
  if (const DenseElements *d = ctx.getTensorAttr("value")) {
    if (d->getKind() != ElementKind::String) {
      auto bytes =
          DenseElements::byteSizeFor(d->getKind(), d->getNumElements());
      if (!bytes || *bytes != d->getRawBytes().size())
        return ctx.error("'value' has inconsistent data size");
    } else if (static_cast<int64_t>(d->getStrings().size()) !=
               d->getNumElements()) {
      return ctx.error("'value' has inconsistent string count");
    }
    out = Tensor::fromDense(*d);
    return llvm::Error::success();
  }
  if (ctx.hasAttr("sparse_value"))
    return ctx.error("Constant with 'sparse_value' is not supported");
  if (ctx.hasAttr("value_float")) {
    out = Tensor::scalar(ElementKind::F32, ctx.getFloat("value_float", 0));
    return llvm::Error::success();
  }
  if (ctx.hasAttr("value_int")) {
    out = Tensor(ElementKind::I64, {});
    out.data<int64_t>()[0] = ctx.getInt("value_int", 0);
    return llvm::Error::success();
  }
  if (ctx.hasAttr("value_floats")) {
    std::vector<float> v = ctx.getFloats("value_floats");
    out = Tensor(ElementKind::F32, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), out.data<float>());
    return llvm::Error::success();
  }
  if (ctx.hasAttr("value_ints")) {
    std::vector<int64_t> v = ctx.getInts("value_ints");
    out = Tensor(ElementKind::I64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), out.data<int64_t>());
    return llvm::Error::success();
  }
  if (ctx.hasAttr("value_string")) {
    out = Tensor(ElementKind::String, {});
    out.strings()[0] = ctx.getString("value_string", "");
    return llvm::Error::success();
  }
  if (const Attribute *a = ctx.op.getAttr("value_strings")) {
    std::vector<std::string> v;
    if (auto *s = a->getIf<std::vector<std::string>>())
      v = *s;
    out = Tensor(ElementKind::String, {static_cast<int64_t>(v.size())});
    out.strings() = std::move(v);
    return llvm::Error::success();
  }
  return ctx.error("Constant has no value attribute");
}

llvm::Error constantOfShapeKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 1))
    return err;
  auto shape = readInts(ctx, *ctx.input(0), "shape");
  if (!shape)
    return shape.takeError();
  for (int64_t d : *shape)
    if (d < 0)
      return ctx.error("negative dimension in shape " + shapeToString(*shape));
  Tensor value = Tensor::scalar(ElementKind::F32, 0);
  if (const DenseElements *d = ctx.getTensorAttr("value")) {
    if (d->getNumElements() != 1)
      return ctx.error("'value' must have exactly one element");
    if (d->getKind() != ElementKind::String &&
        d->getRawBytes().size() < getElementByteSize(d->getKind()))
      return ctx.error("'value' has no data");
    value = Tensor::fromDense(*d);
  }
  if (auto err = ctx.allocateOutput(0, value.kind(), *shape))
    return err;
  Tensor &out = ctx.outputs[0];
  ElementCopier cp(value, out);
  for (int64_t i = 0; i < out.numElements(); ++i)
    cp.copy(i, 0);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Concat, Split
//===----------------------------------------------------------------------===//

llvm::Error concatKernel(KernelContext &ctx) {
  if (ctx.numInputs() == 0)
    return ctx.error("Concat needs at least one input");
  if (auto err = requireInputs(ctx, ctx.numInputs()))
    return err;
  const Tensor &first = *ctx.input(0);
  int64_t rank = first.rank();
  if (rank == 0)
    return ctx.error("cannot concatenate scalars");
  if (!ctx.hasAttr("axis") && ctx.opset >= 4)
    return ctx.error("missing attribute 'axis'");
  auto axis = normalizeAxis(ctx, ctx.getInt("axis", 1), rank);
  if (!axis)
    return axis.takeError();
  Shape outShape = first.shape();
  outShape[*axis] = 0;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    const Tensor &t = *ctx.input(i);
    if (t.kind() != first.kind())
      return ctx.error("input #" + Twine(i) + " has element type " +
                       getElementKindName(t.kind()) + ", expected " +
                       getElementKindName(first.kind()));
    bool ok = t.rank() == rank;
    for (int64_t d = 0; ok && d < rank; ++d)
      ok = d == *axis || t.dim(d) == first.dim(d);
    if (!ok)
      return ctx.error("input shapes " + shapeToString(first.shape()) +
                       " and " + shapeToString(t.shape()) +
                       " differ outside axis " + Twine(*axis));
    if (__builtin_add_overflow(outShape[*axis], t.dim(*axis), &outShape[*axis]))
      return ctx.error("concatenated dimension overflows");
  }
  if (auto err = ctx.allocateOutput(0, first.kind(), outShape))
    return err;
  Tensor &out = ctx.outputs[0];
  if (out.numElements() == 0)
    return llvm::Error::success();
  int64_t outer = product(llvm::ArrayRef<int64_t>(outShape).take_front(*axis));
  int64_t inner =
      product(llvm::ArrayRef<int64_t>(outShape).drop_front(*axis + 1));
  int64_t dst = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < ctx.numInputs(); ++i) {
      const Tensor &t = *ctx.input(i);
      int64_t block = t.dim(*axis) * inner;
      ElementCopier(t, out).copy(dst, o * block, block);
      dst += block;
    }
  }
  return llvm::Error::success();
}

llvm::Error splitKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 1))
    return err;
  const Tensor &x = *ctx.input(0);
  if (x.rank() == 0)
    return ctx.error("cannot split a scalar");
  auto axis = normalizeAxis(ctx, ctx.getInt("axis", 0), x.rank());
  if (!axis)
    return axis.takeError();
  int64_t numOutputs = ctx.op.getNumResults();
  int64_t dim = x.dim(*axis);

  // Split sizes: input 1 (opset 1 and >= 13) or the 'split' attribute (< 13).
  std::optional<std::vector<int64_t>> split;
  if (const Tensor *s = ctx.input(1)) {
    if (s->numElements() > 0 || numOutputs == 0) {
      auto v = readInts(ctx, *s, "split");
      if (!v)
        return v.takeError();
      split = std::move(*v);
    }
  } else if (ctx.opset < 13 && ctx.hasAttr("split")) {
    split = ctx.getInts("split");
  }
  if (ctx.hasAttr("num_outputs")) {
    if (split)
      return ctx.error("'split' and 'num_outputs' are both given");
    if (ctx.getInt("num_outputs", 0) != numOutputs)
      return ctx.error("num_outputs is " + Twine(ctx.getInt("num_outputs", 0)) +
                       " but the node has " + Twine(numOutputs) + " outputs");
  }
  std::vector<int64_t> sizes;
  if (split) {
    if (static_cast<int64_t>(split->size()) != numOutputs)
      return ctx.error("'split' has " + Twine(split->size()) + " entries for " +
                       Twine(numOutputs) + " outputs");
    int64_t sum = 0;
    for (int64_t s : *split) {
      if (s < 0 || __builtin_add_overflow(sum, s, &sum))
        return ctx.error("invalid split sizes");
    }
    if (sum != dim)
      return ctx.error("split sizes sum to " + Twine(sum) +
                       ", but the dimension is " + Twine(dim));
    sizes = *split;
  } else {
    if (numOutputs <= 0)
      return ctx.error("Split has no outputs");
    // Equal parts; if uneven, ceil(dim / n) each and a smaller last chunk.
    int64_t chunk = dim / numOutputs + (dim % numOutputs != 0);
    sizes.assign(numOutputs, chunk);
    sizes.back() = dim - chunk * (numOutputs - 1);
    if (sizes.back() < 0)
      return ctx.error("cannot split dimension " + Twine(dim) + " into " +
                       Twine(numOutputs) + " parts");
  }
  int64_t offset = 0;
  for (int64_t i = 0; i < numOutputs; ++i) {
    int64_t size = sizes[i];
    if (ctx.wantsOutput(i)) {
      Shape shape = x.shape();
      shape[*axis] = size;
      if (auto err = ctx.allocateOutput(i, x.kind(), shape))
        return err;
      if (ctx.outputs[i].numElements() == 0) {
        offset += size;
        continue;
      }
      llvm::ArrayRef<int64_t> dims = x.shape();
      int64_t outer = product(dims.take_front(*axis));
      int64_t inner = product(dims.drop_front(*axis + 1));
      ElementCopier cp(x, ctx.outputs[i]);
      for (int64_t o = 0; o < outer; ++o)
        cp.copy(o * size * inner, (o * dim + offset) * inner, size * inner);
    }
    offset += size;
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Slice
//===----------------------------------------------------------------------===//

llvm::Error sliceKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 1))
    return err;
  const Tensor &x = *ctx.input(0);
  int64_t rank = x.rank();
  std::vector<int64_t> starts, ends, axes, steps;
  bool hasAxes = false, hasSteps = false;
  if (ctx.opset < 10 && !ctx.input(1)) {
    if (!ctx.hasAttr("starts") || !ctx.hasAttr("ends"))
      return ctx.error("missing attribute 'starts' or 'ends'");
    starts = ctx.getInts("starts");
    ends = ctx.getInts("ends");
    hasAxes = ctx.hasAttr("axes");
    axes = ctx.getInts("axes");
  } else {
    if (auto err = requireInputs(ctx, 3))
      return err;
    auto readList = [&](size_t i, const char *name,
                        std::vector<int64_t> &out) -> llvm::Error {
      auto v = readInts(ctx, *ctx.input(i), name);
      if (!v)
        return v.takeError();
      out = std::move(*v);
      return llvm::Error::success();
    };
    if (auto err = readList(1, "starts", starts))
      return err;
    if (auto err = readList(2, "ends", ends))
      return err;
    if ((hasAxes = ctx.input(3)))
      if (auto err = readList(3, "axes", axes))
        return err;
    if ((hasSteps = ctx.input(4)))
      if (auto err = readList(4, "steps", steps))
        return err;
  }
  size_t n = starts.size();
  if (!hasAxes) {
    axes.resize(n);
    for (size_t i = 0; i < n; ++i)
      axes[i] = i;
  }
  if (!hasSteps)
    steps.assign(n, 1);
  if (ends.size() != n || axes.size() != n || steps.size() != n)
    return ctx.error("starts, ends, axes and steps must have the same length");
  auto normAxes = normalizeAxes(ctx, axes, rank);
  if (!normAxes)
    return normAxes.takeError();

  Shape outShape = x.shape(), firstIndex(rank, 0), stepOf(rank, 1);
  for (size_t i = 0; i < n; ++i) {
    int64_t a = (*normAxes)[i], dim = x.dim(a), step = steps[i];
    if (step == 0)
      return ctx.error("slice step cannot be 0");
    int64_t start = starts[i], end = ends[i];
    stepOf[a] = step;
    if (dim == 0) {
      outShape[a] = 0;
      continue;
    }
    if (start < 0)
      start += dim;
    if (end < 0)
      end += dim;
    int64_t len;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      len = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      uint64_t ustep = -static_cast<uint64_t>(step);
      len = start > end
                ? static_cast<int64_t>(
                      static_cast<uint64_t>(start - end - 1) / ustep + 1)
                : 0;
    }
    outShape[a] = len;
    firstIndex[a] = start;
  }
  return emitMapped(ctx, x, outShape, [&] {
    Shape strides = stridesOf(x.shape());
    AxisMap map(rank);
    for (int64_t d = 0; d < rank; ++d) {
      map[d].resize(outShape[d]);
      for (int64_t j = 0; j < outShape[d]; ++j)
        map[d][j] = (firstIndex[d] + j * stepOf[d]) * strides[d];
    }
    return map;
  });
}

//===----------------------------------------------------------------------===//
// Reshape, Flatten, Squeeze, Unsqueeze, Transpose
//===----------------------------------------------------------------------===//

llvm::Error reshapeKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 1))
    return err;
  const Tensor &x = *ctx.input(0);
  auto shapeOr = requiredIntsFromAttrOrInput(ctx, "shape", 1, 5);
  if (!shapeOr)
    return shapeOr.takeError();
  std::vector<int64_t> shape = std::move(*shapeOr);
  bool allowZero = ctx.opset >= 14 && ctx.getInt("allowzero", 0) != 0;
  int64_t inferred = -1, known = 1;
  bool hasZero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t &d = shape[i];
    if (d == -1) {
      if (inferred >= 0)
        return ctx.error("shape " + shapeToString(shape) +
                         " has more than one -1");
      inferred = i;
      continue;
    }
    if (d < -1)
      return ctx.error("invalid dimension " + Twine(d) + " in shape");
    if (d == 0) {
      hasZero = true;
      if (!allowZero) {
        if (static_cast<int64_t>(i) >= x.rank())
          return ctx.error("shape " + shapeToString(shape) +
                           " copies dimension " + Twine(i) + " of a rank-" +
                           Twine(x.rank()) + " input");
        d = x.dim(i);
      }
    }
    if (__builtin_mul_overflow(known, d, &known))
      return ctx.error("shape " + shapeToString(shape) + " overflows");
  }
  if (inferred >= 0) {
    if (allowZero && hasZero)
      return ctx.error("shape cannot contain both 0 and -1 with allowzero=1");
    if (known == 0)
      return ctx.error("cannot infer the -1 dimension of " +
                       shapeToString(shape) + " (other dimensions are 0)");
    if (x.numElements() % known != 0)
      return ctx.error("cannot reshape " + shapeToString(x.shape()) + " to " +
                       shapeToString(shape));
    shape[inferred] = x.numElements() / known;
  }
  return emitReshaped(ctx, x, shape);
}

llvm::Error flattenKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 1))
    return err;
  const Tensor &x = *ctx.input(0);
  int64_t rank = x.rank(), axis = ctx.getInt("axis", 1);
  if (axis < -rank || axis > rank)
    return ctx.error("axis " + Twine(axis) + " is out of range for rank " +
                     Twine(rank));
  if (axis < 0)
    axis += rank;
  llvm::ArrayRef<int64_t> dims = x.shape();
  auto outer = shapeNumElements(dims.take_front(axis));
  auto inner = shapeNumElements(dims.drop_front(axis));
  if (!outer || !inner)
    return ctx.error("flattened shape of " + shapeToString(dims) +
                     " overflows");
  return emitReshaped(ctx, x, {*outer, *inner});
}

llvm::Error squeezeKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 1))
    return err;
  const Tensor &x = *ctx.input(0);
  std::optional<std::vector<int64_t>> axes;
  if (ctx.opset < 13 && !ctx.input(1)) {
    if (ctx.hasAttr("axes"))
      axes = ctx.getInts("axes");
  } else if (const Tensor *a = ctx.input(1)) {
    auto v = readInts(ctx, *a, "axes");
    if (!v)
      return v.takeError();
    axes = std::move(*v);
  }
  std::vector<bool> drop(x.rank(), false);
  if (axes) {
    auto norm = normalizeAxes(ctx, *axes, x.rank());
    if (!norm)
      return norm.takeError();
    for (int64_t a : *norm) {
      if (x.dim(a) != 1)
        return ctx.error("cannot squeeze axis " + Twine(a) + " of size " +
                         Twine(x.dim(a)));
      drop[a] = true;
    }
  } else {
    for (int64_t d = 0; d < x.rank(); ++d)
      drop[d] = x.dim(d) == 1;
  }
  Shape shape;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (!drop[d])
      shape.push_back(x.dim(d));
  return emitReshaped(ctx, x, shape);
}

llvm::Error unsqueezeKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 1))
    return err;
  const Tensor &x = *ctx.input(0);
  auto axesOr = requiredIntsFromAttrOrInput(ctx, "axes", 1, 13);
  if (!axesOr)
    return axesOr.takeError();
  std::vector<int64_t> axes = std::move(*axesOr);
  // Axes index the output, whose rank is the input's plus the new axes.
  int64_t outRank = x.rank() + static_cast<int64_t>(axes.size());
  auto norm = normalizeAxes(ctx, axes, outRank);
  if (!norm)
    return norm.takeError();
  std::vector<bool> isNew(outRank, false);
  for (int64_t a : *norm)
    isNew[a] = true;
  Shape shape;
  int64_t next = 0;
  for (int64_t d = 0; d < outRank; ++d)
    shape.push_back(isNew[d] ? 1 : x.dim(next++));
  return emitReshaped(ctx, x, shape);
}

llvm::Error transposeKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 1))
    return err;
  const Tensor &x = *ctx.input(0);
  int64_t rank = x.rank();
  std::vector<int64_t> perm;
  if (ctx.hasAttr("perm")) {
    perm = ctx.getInts("perm");
  } else {
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  }
  if (static_cast<int64_t>(perm.size()) != rank)
    return ctx.error("perm has " + Twine(perm.size()) + " entries for rank " +
                     Twine(rank));
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return ctx.error("perm is not a permutation of 0.." + Twine(rank - 1));
    seen[p] = true;
  }
  Shape outShape(rank);
  for (int64_t d = 0; d < rank; ++d)
    outShape[d] = x.dim(perm[d]);
  return emitMapped(ctx, x, outShape, [&] {
    Shape strides = stridesOf(x.shape());
    AxisMap map(rank);
    for (int64_t d = 0; d < rank; ++d) {
      map[d].resize(outShape[d]);
      for (int64_t i = 0; i < outShape[d]; ++i)
        map[d][i] = i * strides[perm[d]];
    }
    return map;
  });
}

//===----------------------------------------------------------------------===//
// Gather, GatherElements, ScatterElements
//===----------------------------------------------------------------------===//

llvm::Error gatherKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 2))
    return err;
  const Tensor &data = *ctx.input(0), &indices = *ctx.input(1);
  if (data.rank() == 0)
    return ctx.error("cannot gather from a scalar");
  if (!isIntegerKind(indices.kind()))
    return ctx.error("indices must be an integer tensor");
  auto axis = normalizeAxis(ctx, ctx.getInt("axis", 0), data.rank());
  if (!axis)
    return axis.takeError();
  llvm::ArrayRef<int64_t> dims = data.shape();
  Shape outShape(dims.begin(), dims.begin() + *axis);
  outShape.insert(outShape.end(), indices.shape().begin(),
                  indices.shape().end());
  outShape.insert(outShape.end(), dims.begin() + *axis + 1, dims.end());
  int64_t dim = dims[*axis];
  std::vector<int64_t> idx = indices.toInts();
  for (int64_t &i : idx) {
    if (i < -dim || i >= dim)
      return ctx.error("index " + Twine(i) + " is out of range for axis " +
                       "of size " + Twine(dim));
    if (i < 0)
      i += dim;
  }
  if (auto err = ctx.allocateOutput(0, data.kind(), outShape))
    return err;
  if (ctx.outputs[0].numElements() == 0)
    return llvm::Error::success();
  int64_t outer = product(dims.take_front(*axis));
  int64_t inner = product(dims.drop_front(*axis + 1));
  ElementCopier cp(data, ctx.outputs[0]);
  int64_t dst = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i : idx) {
      cp.copy(dst, (o * dim + i) * inner, inner);
      dst += inner;
    }
  return llvm::Error::success();
}

/// For GatherElements / ScatterElements: the flat data offset addressed by
/// each element of `indices` along `axis`, checked against the data shape.
llvm::Expected<std::vector<int64_t>> elementOffsets(const KernelContext &ctx,
                                                    const Tensor &data,
                                                    const Tensor &indices,
                                                    int64_t axis) {
  if (!isIntegerKind(indices.kind()))
    return ctx.error("indices must be an integer tensor");
  int64_t rank = data.rank();
  if (indices.rank() != rank)
    return ctx.error("indices rank " + Twine(indices.rank()) +
                     " differs from data rank " + Twine(rank));
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices.dim(d) > data.dim(d))
      return ctx.error("indices shape " + shapeToString(indices.shape()) +
                       " exceeds data shape " + shapeToString(data.shape()));
  Shape strides = stridesOf(data.shape());
  std::vector<int64_t> offsets(indices.numElements());
  Shape pos(rank, 0);
  int64_t dim = data.dim(axis);
  for (int64_t e = 0; e < indices.numElements(); ++e) {
    int64_t i = indices.getInt(e);
    if (i < -dim || i >= dim)
      return ctx.error("index " + Twine(i) + " is out of range for axis " +
                       "of size " + Twine(dim));
    if (i < 0)
      i += dim;
    int64_t off = 0;
    for (int64_t d = 0; d < rank; ++d)
      off += (d == axis ? i : pos[d]) * strides[d];
    offsets[e] = off;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++pos[d] < indices.dim(d))
        break;
      pos[d] = 0;
    }
  }
  return offsets;
}

llvm::Error gatherElementsKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 2))
    return err;
  const Tensor &data = *ctx.input(0), &indices = *ctx.input(1);
  if (data.rank() == 0)
    return ctx.error("cannot gather from a scalar");
  auto axis = normalizeAxis(ctx, ctx.getInt("axis", 0), data.rank());
  if (!axis)
    return axis.takeError();
  auto offsets = elementOffsets(ctx, data, indices, *axis);
  if (!offsets)
    return offsets.takeError();
  if (auto err = ctx.allocateOutput(0, data.kind(), indices.shape()))
    return err;
  ElementCopier cp(data, ctx.outputs[0]);
  for (size_t e = 0; e < offsets->size(); ++e)
    cp.copy(e, (*offsets)[e]);
  return llvm::Error::success();
}

/// Reads the 'reduction' attribute of ScatterElements / ScatterND: add and
/// mul exist from opset 16, max and min from 18.
llvm::Expected<std::string> readReduction(const KernelContext &ctx,
                                          ElementKind kind) {
  std::string r = ctx.getString("reduction", "none");
  if (r == "none")
    return r;
  bool known = ((r == "add" || r == "mul") && ctx.opset >= 16) ||
               ((r == "max" || r == "min") && ctx.opset >= 18);
  if (!known)
    return ctx.error("unsupported reduction '" + r + "' in opset " +
                     Twine(ctx.opset));
  if (kind == ElementKind::String)
    return ctx.error("reduction '" + r + "' on strings");
  return r;
}

/// Writes update elements into an output with an optional reduction.
class ScatterWriter {
public:
  ScatterWriter(Tensor &out, const Tensor &updates, llvm::StringRef reduction)
      : out(out), updates(updates), cp(updates, out),
        op(reduction == "none"  ? None
           : reduction == "add" ? Add
           : reduction == "mul" ? Mul
           : reduction == "max" ? Max
                                : Min),
        isFloat(isFloatKind(out.kind())),
        isUnsigned(!isSignedIntegerKind(out.kind())) {}

  /// out[o] (op)= updates[e].
  void apply(int64_t o, int64_t e) {
    if (op == None) {
      cp.copy(o, e);
    } else if (isFloat) {
      double a = out.getDouble(o), b = updates.getDouble(e);
      out.setDouble(o, op == Add   ? a + b
                       : op == Mul ? a * b
                       : op == Max ? std::max(a, b)
                                   : std::min(a, b));
    } else {
      // Wrapping integer arithmetic; setInt truncates to the element type.
      int64_t a = out.getInt(o), b = updates.getInt(e);
      uint64_t ua = a, ub = b;
      int64_t r;
      if (op == Add)
        r = static_cast<int64_t>(ua + ub);
      else if (op == Mul)
        r = static_cast<int64_t>(ua * ub);
      else if (isUnsigned)
        r = static_cast<int64_t>(op == Max ? std::max(ua, ub)
                                           : std::min(ua, ub));
      else
        r = op == Max ? std::max(a, b) : std::min(a, b);
      out.setInt(o, r);
    }
  }

private:
  Tensor &out;
  const Tensor &updates;
  ElementCopier cp;
  enum { None, Add, Mul, Max, Min } op;
  bool isFloat, isUnsigned;
};

llvm::Error scatterElementsKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 3))
    return err;
  const Tensor &data = *ctx.input(0), &indices = *ctx.input(1),
               &updates = *ctx.input(2);
  if (data.rank() == 0)
    return ctx.error("cannot scatter into a scalar");
  if (updates.kind() != data.kind())
    return ctx.error("updates and data have different element types");
  if (updates.shape() != indices.shape())
    return ctx.error("updates shape " + shapeToString(updates.shape()) +
                     " differs from indices shape " +
                     shapeToString(indices.shape()));
  auto axis = normalizeAxis(ctx, ctx.getInt("axis", 0), data.rank());
  if (!axis)
    return axis.takeError();
  auto reduction = readReduction(ctx, data.kind());
  if (!reduction)
    return reduction.takeError();
  auto offsets = elementOffsets(ctx, data, indices, *axis);
  if (!offsets)
    return offsets.takeError();
  ctx.outputs[0] = data;
  ScatterWriter w(ctx.outputs[0], updates, *reduction);
  for (size_t e = 0; e < offsets->size(); ++e)
    w.apply((*offsets)[e], e);
  return llvm::Error::success();
}

/// For GatherND / ScatterND: the flat data offset of the slice addressed by
/// each index tuple (the last dimension of `indices`), after `batchDims`
/// leading dimensions shared by data and indices.
llvm::Expected<std::vector<int64_t>> tupleOffsets(const KernelContext &ctx,
                                                  const Tensor &data,
                                                  const Tensor &indices,
                                                  int64_t batchDims) {
  if (!isIntegerKind(indices.kind()))
    return ctx.error("indices must be an integer tensor");
  int64_t r = data.rank(), q = indices.rank();
  if (r < 1 || q < 1)
    return ctx.error("data and indices must have rank >= 1");
  if (batchDims < 0 || batchDims >= std::min(r, q))
    return ctx.error("batch_dims " + Twine(batchDims) + " is out of range");
  for (int64_t d = 0; d < batchDims; ++d)
    if (data.dim(d) != indices.dim(d))
      return ctx.error("batch dimensions of data " +
                       shapeToString(data.shape()) + " and indices " +
                       shapeToString(indices.shape()) + " differ");
  int64_t m = indices.dim(q - 1);
  if (m < 0 || m > r - batchDims)
    return ctx.error("index tuples of length " + Twine(m) +
                     " for data of rank " + Twine(r));
  if (m == 0 && indices.numElements() == 0 &&
      shapeNumElements(llvm::ArrayRef<int64_t>(indices.shape()).drop_back())
              .value_or(INT64_MAX) > (int64_t(1) << 31))
    return ctx.error("too many empty index tuples");
  Shape strides = stridesOf(data.shape());
  int64_t batchBlock = batchDims ? strides[batchDims - 1] : 0;
  int64_t count = m ? indices.numElements() / m : 0;
  if (m == 0)
    count =
        shapeNumElements(llvm::ArrayRef<int64_t>(indices.shape()).drop_back())
            .value_or(0);
  int64_t perBatch = product(llvm::ArrayRef<int64_t>(indices.shape())
                                 .slice(batchDims, q - 1 - batchDims));
  std::vector<int64_t> offsets(count);
  for (int64_t t = 0; t < count; ++t) {
    int64_t off = perBatch ? (t / perBatch) * batchBlock : 0;
    for (int64_t k = 0; k < m; ++k) {
      int64_t dim = data.dim(batchDims + k);
      int64_t i = indices.getInt(t * m + k);
      if (i < -dim || i >= dim)
        return ctx.error("index " + Twine(i) + " is out of range for axis " +
                         "of size " + Twine(dim));
      off += (i < 0 ? i + dim : i) * strides[batchDims + k];
    }
    offsets[t] = off;
  }
  return offsets;
}

llvm::Error gatherNDKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 2))
    return err;
  const Tensor &data = *ctx.input(0), &indices = *ctx.input(1);
  int64_t b = ctx.getInt("batch_dims", 0);
  auto offsets = tupleOffsets(ctx, data, indices, b);
  if (!offsets)
    return offsets.takeError();
  int64_t m = indices.dim(indices.rank() - 1);
  Shape outShape(indices.shape().begin(), indices.shape().end() - 1);
  outShape.insert(outShape.end(), data.shape().begin() + b + m,
                  data.shape().end());
  if (auto err = ctx.allocateOutput(0, data.kind(), outShape))
    return err;
  if (ctx.outputs[0].numElements() == 0)
    return llvm::Error::success();
  int64_t slice =
      product(llvm::ArrayRef<int64_t>(data.shape()).drop_front(b + m));
  ElementCopier cp(data, ctx.outputs[0]);
  for (size_t t = 0; t < offsets->size(); ++t)
    cp.copy(t * slice, (*offsets)[t], slice);
  return llvm::Error::success();
}

llvm::Error scatterNDKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 3))
    return err;
  const Tensor &data = *ctx.input(0), &indices = *ctx.input(1),
               &updates = *ctx.input(2);
  if (updates.kind() != data.kind())
    return ctx.error("updates and data have different element types");
  auto reduction = readReduction(ctx, data.kind());
  if (!reduction)
    return reduction.takeError();
  auto offsets = tupleOffsets(ctx, data, indices, 0);
  if (!offsets)
    return offsets.takeError();
  int64_t m = indices.dim(indices.rank() - 1);
  Shape expected(indices.shape().begin(), indices.shape().end() - 1);
  expected.insert(expected.end(), data.shape().begin() + m, data.shape().end());
  if (updates.shape() != expected)
    return ctx.error("updates shape " + shapeToString(updates.shape()) +
                     " should be " + shapeToString(expected));
  ctx.outputs[0] = data;
  if (updates.numElements() == 0)
    return llvm::Error::success();
  int64_t slice = product(llvm::ArrayRef<int64_t>(data.shape()).drop_front(m));
  ScatterWriter w(ctx.outputs[0], updates, *reduction);
  for (size_t t = 0; t < offsets->size(); ++t)
    for (int64_t k = 0; k < slice; ++k)
      w.apply((*offsets)[t] + k, t * slice + k);
  return llvm::Error::success();
}

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

//===----------------------------------------------------------------------===//
// DepthToSpace, SpaceToDepth
//===----------------------------------------------------------------------===//

llvm::Error depthToSpaceKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 1))
    return err;
  const Tensor &x = *ctx.input(0);
  int64_t b = ctx.getInt("blocksize", 0);
  std::string mode = ctx.getString("mode", "DCR");
  if (x.rank() != 4)
    return ctx.error("DepthToSpace needs a 4-D input");
  if (b <= 0 || b > (int64_t(1) << 20))
    return ctx.error("invalid blocksize " + Twine(b));
  if (mode != "DCR" && mode != "CRD")
    return ctx.error("unsupported DepthToSpace mode '" + mode + "'");
  int64_t c = x.dim(1);
  if (c % (b * b) != 0)
    return ctx.error("channels " + Twine(c) + " are not divisible by " +
                     Twine(b * b));
  int64_t oc = c / (b * b);
  Shape outShape = {x.dim(0), oc, 0, 0};
  if (__builtin_mul_overflow(x.dim(2), b, &outShape[2]) ||
      __builtin_mul_overflow(x.dim(3), b, &outShape[3]))
    return ctx.error("output shape overflows");
  bool dcr = mode == "DCR";
  return emitMapped(ctx, x, outShape, [&] {
    Shape s = stridesOf(x.shape());
    AxisMap map(4);
    map[0].resize(outShape[0]);
    for (int64_t i = 0; i < outShape[0]; ++i)
      map[0][i] = i * s[0];
    map[1].resize(oc);
    for (int64_t i = 0; i < oc; ++i)
      map[1][i] = (dcr ? i : i * b * b) * s[1];
    // Input channel: DCR (bh * b + bw) * oc + c, CRD c * b * b + bh * b + bw.
    for (int64_t d = 2; d < 4; ++d) {
      int64_t blockStride = d == 2 ? (dcr ? b * oc : b) : (dcr ? oc : 1);
      map[d].resize(outShape[d]);
      for (int64_t i = 0; i < outShape[d]; ++i)
        map[d][i] = (i / b) * s[d] + (i % b) * blockStride * s[1];
    }
    return map;
  });
}

llvm::Error spaceToDepthKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 1))
    return err;
  const Tensor &x = *ctx.input(0);
  int64_t b = ctx.getInt("blocksize", 0);
  if (x.rank() != 4)
    return ctx.error("SpaceToDepth needs a 4-D input");
  if (b <= 0 || b > (int64_t(1) << 20))
    return ctx.error("invalid blocksize " + Twine(b));
  if (x.dim(2) % b != 0 || x.dim(3) % b != 0)
    return ctx.error("spatial dimensions are not divisible by " + Twine(b));
  int64_t c = x.dim(1);
  Shape outShape = {x.dim(0), 0, x.dim(2) / b, x.dim(3) / b};
  if (__builtin_mul_overflow(c, b * b, &outShape[1]))
    return ctx.error("output shape overflows");
  return emitMapped(ctx, x, outShape, [&] {
    Shape s = stridesOf(x.shape());
    AxisMap map(4);
    map[0].resize(outShape[0]);
    for (int64_t i = 0; i < outShape[0]; ++i)
      map[0][i] = i * s[0];
    // Output channel = (bh * b + bw) * C + c.
    map[1].resize(outShape[1]);
    for (int64_t i = 0; i < outShape[1]; ++i)
      map[1][i] = (i % c) * s[1] + (i / (b * c)) * s[2] + ((i / c) % b) * s[3];
    for (int64_t d = 2; d < 4; ++d) {
      map[d].resize(outShape[d]);
      for (int64_t i = 0; i < outShape[d]; ++i)
        map[d][i] = i * b * s[d];
    }
    return map;
  });
}

//===----------------------------------------------------------------------===//
// Range, Trilu, OneHot, NonZero, CumSum, ReverseSequence, EyeLike
//===----------------------------------------------------------------------===//

llvm::Error rangeKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 3))
    return err;
  const Tensor &start = *ctx.input(0), &limit = *ctx.input(1),
               &delta = *ctx.input(2);
  ElementKind kind = start.kind();
  for (const Tensor *t : {&start, &limit, &delta}) {
    if (t->numElements() != 1 || t->rank() > 1)
      return ctx.error("Range inputs must be scalars");
    if (t->kind() != kind)
      return ctx.error("Range inputs have different element types");
  }
  if (!isFloatKind(kind) && !isIntegerKind(kind))
    return ctx.error("Range needs numeric inputs");
  int64_t count;
  if (isIntegerKind(kind)) {
    __int128 s = start.getInt(0), l = limit.getInt(0), d = delta.getInt(0);
    if (kind == ElementKind::U64) {
      s = static_cast<uint64_t>(start.getInt(0));
      l = static_cast<uint64_t>(limit.getInt(0));
      d = static_cast<uint64_t>(delta.getInt(0));
    }
    if (d == 0)
      return ctx.error("Range delta cannot be 0");
    __int128 diff = l - s;
    // ceil(diff / d) for either sign.
    __int128 q = diff / d;
    if (q * d != diff && ((diff > 0) == (d > 0)))
      ++q;
    if (q > (__int128(1) << 40))
      return ctx.error("Range output is too large");
    count = q > 0 ? static_cast<int64_t>(q) : 0;
    if (auto err = ctx.allocateOutput(0, kind, {count}))
      return err;
    for (int64_t i = 0; i < count; ++i)
      ctx.outputs[0].setInt(i, static_cast<int64_t>(s + d * i));
    return llvm::Error::success();
  }
  double s = start.getDouble(0), l = limit.getDouble(0), d = delta.getDouble(0);
  if (d == 0)
    return ctx.error("Range delta cannot be 0");
  // The element count is computed in the element type, as the spec says.
  double q = kind == ElementKind::F32
                 ? std::ceil(static_cast<double>(
                       (static_cast<float>(l) - static_cast<float>(s)) /
                       static_cast<float>(d)))
                 : std::ceil((l - s) / d);
  if (std::isnan(q) || q > double(int64_t(1) << 40))
    return ctx.error("Range output is too large");
  count = q > 0 ? static_cast<int64_t>(q) : 0;
  if (auto err = ctx.allocateOutput(0, kind, {count}))
    return err;
  for (int64_t i = 0; i < count; ++i)
    ctx.outputs[0].setDouble(i, s + static_cast<double>(i) * d);
  return llvm::Error::success();
}

llvm::Error triluKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 1))
    return err;
  const Tensor &x = *ctx.input(0);
  if (x.rank() < 2)
    return ctx.error("Trilu needs an input of rank >= 2");
  int64_t k = 0;
  if (const Tensor *kt = ctx.input(1)) {
    auto v = readScalarInt(ctx, *kt, "k");
    if (!v)
      return v.takeError();
    k = *v;
  }
  bool upper = ctx.getInt("upper", 1) != 0;
  if (auto err = ctx.allocateOutput(0, x.kind(), x.shape()))
    return err;
  int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  ElementCopier cp(x, ctx.outputs[0]);
  for (int64_t e = 0; e < x.numElements(); ++e) {
    int64_t j = e % cols, i = (e / cols) % rows;
    // j - i fits; compare without forming i + k.
    bool keep = upper ? j - i >= k : j - i <= k;
    if (keep)
      cp.copy(e, e);
  }
  return llvm::Error::success();
}

llvm::Error oneHotKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 3))
    return err;
  const Tensor &indices = *ctx.input(0), &depthT = *ctx.input(1),
               &values = *ctx.input(2);
  if (depthT.numElements() != 1 || depthT.rank() > 1)
    return ctx.error("depth must be a scalar");
  if (!isFloatKind(depthT.kind()) && !isIntegerKind(depthT.kind()))
    return ctx.error("depth must be numeric");
  if (!isFloatKind(indices.kind()) && !isIntegerKind(indices.kind()))
    return ctx.error("indices must be numeric");
  if (values.numElements() != 2 || values.rank() != 1)
    return ctx.error("values must be a 1-D tensor of two elements");
  double depthD = depthT.getDouble(0);
  if (!(depthD >= 1) || depthD > double(int64_t(1) << 40))
    return ctx.error("invalid depth " + std::to_string(depthD));
  int64_t depth = static_cast<int64_t>(depthD);
  int64_t outRank = indices.rank() + 1;
  auto axis = normalizeAxis(ctx, ctx.getInt("axis", -1), outRank);
  if (!axis)
    return axis.takeError();
  Shape outShape = indices.shape();
  outShape.insert(outShape.begin() + *axis, depth);
  if (auto err = ctx.allocateOutput(0, values.kind(), outShape))
    return err;
  Tensor &out = ctx.outputs[0];
  ElementCopier cp(values, out);
  for (int64_t i = 0; i < out.numElements(); ++i)
    cp.copy(i, 0);
  int64_t inner =
      product(llvm::ArrayRef<int64_t>(indices.shape()).drop_front(*axis));
  bool isInt = isIntegerKind(indices.kind());
  for (int64_t e = 0; e < indices.numElements(); ++e) {
    double v = isInt ? static_cast<double>(indices.getInt(e))
                     : std::trunc(indices.getDouble(e));
    if (std::isnan(v) || v < -static_cast<double>(depth) ||
        v >= static_cast<double>(depth))
      continue;
    int64_t idx = static_cast<int64_t>(v);
    if (idx < 0)
      idx += depth;
    int64_t o = e / inner, in = e % inner;
    cp.copy((o * depth + idx) * inner + in, 1);
  }
  return llvm::Error::success();
}

llvm::Error nonZeroKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 1))
    return err;
  const Tensor &x = *ctx.input(0);
  std::vector<int64_t> hits;
  for (int64_t e = 0; e < x.numElements(); ++e) {
    bool nz;
    if (x.kind() == ElementKind::String)
      nz = !x.strings()[e].empty();
    else if (isFloatKind(x.kind()))
      nz = x.getDouble(e) != 0;
    else
      nz = x.getInt(e) != 0;
    if (nz)
      hits.push_back(e);
  }
  // A scalar is treated as 1-D (as numpy does).
  int64_t rank = std::max<int64_t>(x.rank(), 1);
  Shape shape = x.rank() ? x.shape() : Shape{1};
  int64_t nnz = hits.size();
  if (auto err = ctx.allocateOutput(0, ElementKind::I64, {rank, nnz}))
    return err;
  int64_t *out = ctx.outputs[0].data<int64_t>();
  for (int64_t h = 0; h < nnz; ++h) {
    int64_t e = hits[h];
    for (int64_t d = rank - 1; d >= 0; --d) {
      out[d * nnz + h] = e % shape[d];
      e /= shape[d];
    }
  }
  return llvm::Error::success();
}

llvm::Error cumSumKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 2))
    return err;
  const Tensor &x = *ctx.input(0);
  if (!isFloatKind(x.kind()) && !isIntegerKind(x.kind()))
    return ctx.error("CumSum needs a numeric input");
  if (x.rank() == 0)
    return ctx.error("CumSum needs an input of rank >= 1");
  auto axisV = readScalarInt(ctx, *ctx.input(1), "axis");
  if (!axisV)
    return axisV.takeError();
  auto axis = normalizeAxis(ctx, *axisV, x.rank());
  if (!axis)
    return axis.takeError();
  bool exclusive = ctx.getInt("exclusive", 0) != 0;
  bool reverse = ctx.getInt("reverse", 0) != 0;
  if (auto err = ctx.allocateOutput(0, x.kind(), x.shape()))
    return err;
  Tensor &out = ctx.outputs[0];
  if (out.numElements() == 0)
    return llvm::Error::success();
  int64_t dim = x.dim(*axis);
  int64_t outer = product(llvm::ArrayRef<int64_t>(x.shape()).take_front(*axis));
  int64_t inner =
      product(llvm::ArrayRef<int64_t>(x.shape()).drop_front(*axis + 1));
  bool isFloat = isFloatKind(x.kind());
  // The running sum is kept in the output element, so it is rounded to the
  // element type after every addition (as a cumulative sum in T).
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      int64_t prev = -1;
      for (int64_t s = 0; s < dim; ++s) {
        int64_t k = reverse ? dim - 1 - s : s;
        int64_t e = (o * dim + k) * inner + in;
        int64_t addend = exclusive ? prev : e;
        if (isFloat) {
          double acc = prev >= 0 ? out.getDouble(prev) : 0.0;
          out.setDouble(e, acc + (addend >= 0 ? x.getDouble(addend) : 0.0));
        } else {
          uint64_t acc = prev >= 0 ? out.getInt(prev) : 0;
          uint64_t add = addend >= 0 ? x.getInt(addend) : 0;
          out.setInt(e, static_cast<int64_t>(acc + add));
        }
        prev = e;
      }
    }
  }
  return llvm::Error::success();
}

llvm::Error reverseSequenceKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 2))
    return err;
  const Tensor &x = *ctx.input(0);
  if (x.rank() < 2)
    return ctx.error("ReverseSequence needs an input of rank >= 2");
  int64_t batchAxis = ctx.getInt("batch_axis", 1);
  int64_t timeAxis = ctx.getInt("time_axis", 0);
  if (!((batchAxis == 0 && timeAxis == 1) || (batchAxis == 1 && timeAxis == 0)))
    return ctx.error("batch_axis and time_axis must be 0 and 1");
  auto lens = readInts(ctx, *ctx.input(1), "sequence_lens");
  if (!lens)
    return lens.takeError();
  int64_t batch = x.dim(batchAxis), time = x.dim(timeAxis);
  if (static_cast<int64_t>(lens->size()) != batch)
    return ctx.error("sequence_lens has " + Twine(lens->size()) +
                     " entries for batch " + Twine(batch));
  for (int64_t l : *lens)
    if (l < 0 || l > time)
      return ctx.error("sequence length " + Twine(l) + " is out of range [0, " +
                       Twine(time) + "]");
  ctx.outputs[0] = x;
  Tensor &out = ctx.outputs[0];
  ElementCopier cp(x, out);
  Shape strides = stridesOf(x.shape());
  int64_t inner = strides[1];
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < (*lens)[b]; ++t) {
      int64_t src = (*lens)[b] - 1 - t;
      cp.copy(b * strides[batchAxis] + t * strides[timeAxis],
              b * strides[batchAxis] + src * strides[timeAxis], inner);
    }
  return llvm::Error::success();
}

llvm::Error eyeLikeKernel(KernelContext &ctx) {
  if (auto err = requireInputs(ctx, 1))
    return err;
  const Tensor &x = *ctx.input(0);
  if (x.rank() != 2)
    return ctx.error("EyeLike needs a 2-D input");
  ElementKind kind = x.kind();
  if (ctx.hasAttr("dtype")) {
    auto k = elementKindFromOnnxDataType(ctx.getInt("dtype", 1));
    if (!k)
      return ctx.error("unsupported dtype " + Twine(ctx.getInt("dtype", 1)));
    kind = *k;
  }
  if (kind == ElementKind::String)
    return ctx.error("EyeLike cannot produce strings");
  int64_t k = ctx.getInt("k", 0);
  if (auto err = ctx.allocateOutput(0, kind, x.shape()))
    return err;
  if (x.numElements() == 0)
    return llvm::Error::success();
  for (int64_t i = 0; i < x.dim(0); ++i) {
    // Column i + k, computed without overflow for huge k.
    if (k >= x.dim(1) || k <= -x.dim(0))
      break;
    int64_t j = i + k;
    if (j >= 0 && j < x.dim(1))
      ctx.outputs[0].setDouble(i * x.dim(1) + j, 1.0);
  }
  return llvm::Error::success();
}

} // namespace

void rt::registerShapeKernels(KernelRegistry &r) {
  r.add("onnx.Identity", identityKernel);
  r.add("onnx.Shape", shapeKernel);
  r.add("onnx.Size", sizeKernel);
  r.add("onnx.Constant", constantKernel);
  r.add("onnx.ConstantOfShape", constantOfShapeKernel);
  r.add("onnx.Concat", concatKernel);
  r.add("onnx.Split", splitKernel);
  r.add("onnx.Slice", sliceKernel);
  r.add("onnx.Reshape", reshapeKernel);
  r.add("onnx.Flatten", flattenKernel);
  r.add("onnx.Squeeze", squeezeKernel);
  r.add("onnx.Unsqueeze", unsqueezeKernel);
  r.add("onnx.Transpose", transposeKernel);
  r.add("onnx.Gather", gatherKernel);
  r.add("onnx.GatherElements", gatherElementsKernel);
  r.add("onnx.ScatterElements", scatterElementsKernel);
  r.add("onnx.Scatter", scatterElementsKernel);
  r.add("onnx.GatherND", gatherNDKernel);
  r.add("onnx.ScatterND", scatterNDKernel);
  r.add("onnx.Expand", expandKernel);
  r.add("onnx.Tile", tileKernel);
  r.add("onnx.Pad", padKernel);
  r.add("onnx.Resize", resizeKernel);
  r.add("onnx.Upsample", upsampleKernel);
  r.add("onnx.DepthToSpace", depthToSpaceKernel);
  r.add("onnx.SpaceToDepth", spaceToDepthKernel);
  r.add("onnx.Range", rangeKernel);
  r.add("onnx.Trilu", triluKernel);
  r.add("onnx.OneHot", oneHotKernel);
  r.add("onnx.NonZero", nonZeroKernel);
  r.add("onnx.CumSum", cumSumKernel);
  r.add("onnx.ReverseSequence", reverseSequenceKernel);
  r.add("onnx.EyeLike", eyeLikeKernel);
}
