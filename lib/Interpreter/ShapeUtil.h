//===- ShapeUtil.h - Helpers of the data movement kernels -------*- C++ -*-===//
//
// Private to lib/Interpreter: what ShapeKernels.cpp, IndexKernels.cpp and
// ResizePadKernels.cpp share. Most movements are expressed as an "axis map":
// for every output dimension d and coordinate i, the flat source offset
// contributed by i (or kOutside when the coordinate has no source element,
// e.g. constant padding). The source of an output element is the sum of its
// coordinates' contributions.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_INTERPRETER_SHAPEUTIL_H
#define QOPT_LIB_INTERPRETER_SHAPEUTIL_H

#include "qopt/Interpreter/Kernel.h"

#include <algorithm>
#include <cstring>

namespace qopt {
namespace interp {
namespace shapeutil {

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
inline int64_t product(llvm::ArrayRef<int64_t> dims) {
  uint64_t n = 1;
  for (int64_t d : dims)
    n *= static_cast<uint64_t>(d);
  return static_cast<int64_t>(n);
}

inline llvm::Error requireInputs(const KernelContext &ctx, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!ctx.input(i))
      return ctx.error("missing required input #" + Twine(i));
  return llvm::Error::success();
}

/// Reads a scalar or 1-D integer tensor as int64 values.
inline llvm::Expected<std::vector<int64_t>>
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
inline llvm::Expected<std::vector<int64_t>>
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
inline llvm::Expected<int64_t>
readScalarInt(const KernelContext &ctx, const Tensor &t, const Twine &what) {
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
inline llvm::Expected<std::vector<int64_t>>
normalizeAxes(const KernelContext &ctx, llvm::ArrayRef<int64_t> axes,
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
inline void copyMapped(const Tensor &src, Tensor &out, const AxisMap &map,
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
inline llvm::Error emitMapped(KernelContext &ctx, const Tensor &src,
                              Shape outShape,
                              llvm::function_ref<AxisMap()> buildMap,
                              const Tensor *fill = nullptr) {
  if (auto err = ctx.allocateOutput(0, src.kind(), std::move(outShape)))
    return err;
  if (ctx.outputs[0].numElements() > 0)
    copyMapped(src, ctx.outputs[0], buildMap(), fill);
  return llvm::Error::success();
}

/// Output 0 = `src` with another shape of the same element count.
inline llvm::Error emitReshaped(KernelContext &ctx, const Tensor &src,
                                Shape shape) {
  auto n = shapeNumElements(shape);
  if (!n || *n != src.numElements())
    return ctx.error("cannot reshape " + shapeToString(src.shape()) + " to " +
                     shapeToString(shape));
  ctx.outputs[0] = src.reshaped(std::move(shape));
  return llvm::Error::success();
}

} // namespace shapeutil
} // namespace interp
} // namespace qopt

#endif // QOPT_LIB_INTERPRETER_SHAPEUTIL_H
