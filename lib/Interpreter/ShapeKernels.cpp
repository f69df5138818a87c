//===- ShapeKernels.cpp - Reference kernels: shape ops --------------------===//
//
// Data movement ops that keep or rearrange elements (Identity, Shape,
// Constant, Concat, Split, Slice, Reshape, Squeeze, Transpose,
// DepthToSpace, ...). Everything that only moves elements works on every
// element kind: elements are copied as bytes of getElementByteSize(kind),
// strings through Tensor::strings(). Slice, Transpose, DepthToSpace and
// SpaceToDepth are axis maps (ShapeUtil.h). Gather/Scatter and the index
// ops are in IndexKernels.cpp; Expand, Tile, Pad and Resize in
// ResizePadKernels.cpp.
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

} // namespace

void interp::registerShapeKernels(KernelRegistry &r) {
  r.add(ops::Identity, identityKernel);
  r.add(ops::Shape, shapeKernel);
  r.add(ops::Size, sizeKernel);
  r.add(ops::Constant, constantKernel);
  r.add(ops::ConstantOfShape, constantOfShapeKernel);
  r.add(ops::Concat, concatKernel);
  r.add(ops::Split, splitKernel);
  r.add(ops::Slice, sliceKernel);
  r.add(ops::Reshape, reshapeKernel);
  r.add(ops::Flatten, flattenKernel);
  r.add(ops::Squeeze, squeezeKernel);
  r.add(ops::Unsqueeze, unsqueezeKernel);
  r.add(ops::Transpose, transposeKernel);
  r.add(ops::DepthToSpace, depthToSpaceKernel);
  r.add(ops::SpaceToDepth, spaceToDepthKernel);
}
