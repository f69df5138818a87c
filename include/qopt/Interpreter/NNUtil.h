//===- NNUtil.h - Convolution and matrix helpers for the kernels -*- C++
//-*-===//
//
// Private to lib/Interpreter. The float kernels (Conv, Gemm, MatMul) and the
// integer ones (QLinearConv, ConvInteger, QLinearMatMul, MatMulInteger)
// share these routines; everything is computed in double, which holds the
// products of two floats exactly and keeps integer accumulations exact.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_INTERPRETER_NNUTIL_H
#define QOPT_INTERPRETER_NNUTIL_H

#include "qopt/Interpreter/Kernel.h"

namespace qopt {
namespace interp {

/// Sizes of an N-D convolution (x: [N, C, D1..Dk], w: [M, C/group, K1..Kk]).
struct ConvGeometry {
  int64_t batch = 0, inChannels = 0, outChannels = 0, group = 1;
  Shape inSpatial, kernel, outSpatial, strides, dilations, padBegin, padEnd;
  Shape outputShape() const;
};

/// Reads kernel_shape, strides, dilations, pads, auto_pad and group.
llvm::Expected<ConvGeometry> convGeometry(const KernelContext &ctx,
                                          const Shape &x, const Shape &w);

/// Output sizes and pads for a sliding window over `in` (Conv and pooling):
/// handles auto_pad (NOTSET, SAME_UPPER, SAME_LOWER, VALID) and ceil_mode.
llvm::Error windowGeometry(const KernelContext &ctx, const Shape &in,
                           const Shape &kernel, const Shape &strides,
                           const Shape &dilations, bool ceilMode,
                           Shape &padBegin, Shape &padEnd, Shape &out);

/// The taps t in [0, kernel) of one window dim that land inside an input of
/// `size`: base + t * dilation in [0, size), as [first, end) (empty when
/// first >= end). `base` is the window's first position (out * stride -
/// pad). Loops over these cost what the input holds, however large the
/// kernel and padding.
inline std::pair<int64_t, int64_t> tapsInside(int64_t base, int64_t dilation,
                                              int64_t size, int64_t kernel) {
  // A window wholly inside (most of a layer's): no division. Pooling steps
  // call this per output pixel; the 128-bit divisions below were most of
  // ResNet-18's max pool.
  int64_t span, last;
  if (base >= 0 && !__builtin_mul_overflow(kernel - 1, dilation, &span) &&
      !__builtin_add_overflow(base, span, &last) && last < size)
    return {0, kernel};
  // In 128 bits: base, dilation and size may each be near 2^63.
  __int128 b = base, d = dilation, n = size;
  __int128 first = b >= 0 ? 0 : (-b + d - 1) / d;
  __int128 end = b >= n ? 0 : (n - 1 - b) / d + 1;
  first = std::min<__int128>(first, kernel);
  end = std::min<__int128>(end, kernel);
  return {static_cast<int64_t>(first), static_cast<int64_t>(end)};
}

/// y[N, M, out...] = conv(x, w) + bias[M] (bias may be null).
void convolve(const ConvGeometry &g, const double *x, const double *w,
              const double *bias, double *y);

/// Batched matrix product with numpy semantics (1-D operands promoted and
/// the promoted dims removed, batch dims broadcast). Fills `outShape`.
llvm::Error matmul(const KernelContext &ctx, const Shape &aShape,
                   const std::vector<double> &a, const Shape &bShape,
                   const std::vector<double> &b, Shape &outShape,
                   std::vector<double> &out);

/// The q.quantize / q.dequantize kernels' arithmetic on a whole tensor
/// (QuantKernels.cpp): `y` = Q(x) onto `q`, or DQ(x) from `q` into its
/// expressed kind.
llvm::Error quantizeTensor(const KernelContext &ctx, const Tensor &x,
                           const QuantType *q, Tensor &y);
llvm::Error dequantizeTensor(const KernelContext &ctx, const Tensor &x,
                             const QuantType *q, Tensor &y);

} // namespace interp
} // namespace qopt

#endif // QOPT_INTERPRETER_NNUTIL_H
