//===- IndexKernels.cpp - Reference kernels: gather, scatter, index ops ---===//
//
// Gather, GatherElements, GatherND and their Scatter twins, which move
// elements by index tensors, and the cheap index ops (Range, Trilu, OneHot,
// NonZero, CumSum, ReverseSequence, EyeLike).
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

void interp::registerIndexKernels(KernelRegistry &r) {
  r.add(ops::Gather, gatherKernel);
  r.add(ops::GatherElements, gatherElementsKernel);
  r.add(ops::ScatterElements, scatterElementsKernel);
  r.add(ops::Scatter, scatterElementsKernel);
  r.add(ops::GatherND, gatherNDKernel);
  r.add(ops::ScatterND, scatterNDKernel);
  r.add(ops::Range, rangeKernel);
  r.add(ops::Trilu, triluKernel);
  r.add(ops::OneHot, oneHotKernel);
  r.add(ops::NonZero, nonZeroKernel);
  r.add(ops::CumSum, cumSumKernel);
  r.add(ops::ReverseSequence, reverseSequenceKernel);
  r.add(ops::EyeLike, eyeLikeKernel);
}
