//===- DepthwiseKernels.h - Depthwise conv sums, one output row -*- C++ -*-===//
//
// Private to lib/Kernels (GemmKernels.h says why the ISA files include
// nothing else). A depthwise convolution (one input channel per group, one
// output channel per group) has no reduction across channels: a GEMM per
// channel would multiply a 1 x taps row by a taps x 1 column. Here the
// channels are the vector lanes, NHWC's innermost dimension: for output
// pixel p of one output row and channel c,
//
//   acc[p][c] = base[c] + sum over the taps t inside the input of
//               (x[tap t of p][c] - zx) * w[t][c]
//
// in exact s32 (|x - zx| <= 255, |w| <= 128). With base[c] = zx * the
// weights' sum of channel c this is the sum over every tap with padding
// reading the zero point, the conv epilogue's acc (Int8Conv.h).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_DEPTHWISEKERNELS_H
#define QOPT_LIB_KERNELS_DEPTHWISEKERNELS_H

#include <cstdint>

namespace qopt {
namespace kernels {
namespace depthwise {

/// One output row's geometry and constants.
struct Row {
  /// The image's first pixel (NHWC u8), from the row's first channel on;
  /// pixels `stride` bytes apart (the conv's channel count).
  const uint8_t *input;
  int64_t inH, inW;
  int64_t channels; ///< summed, from the pointers' first on: acc's row
  int64_t stride;   ///< channels of the input's pixels and the weights' taps
  int64_t kernelH, kernelW, strideH, strideW, dilationH, dilationW;
  int64_t padTop, padLeft;
  int64_t oh, outW;
  const int32_t *weights; ///< [kernelH * kernelW][stride], from the first
  const int32_t *base;    ///< zx * each channel's weight sum, from the first
  int32_t inputZero;
};

/// acc[ow][c] for the row's outW pixels.
using Kernel = void (*)(const Row &row, int32_t *acc);

void scalar(const Row &row, int32_t *acc);
void avx2(const Row &row, int32_t *acc);
void avx512(const Row &row, int32_t *acc);

/// The taps t in [0, kernel) of one window dim that land inside an input of
/// `size`, from the window's first position `base` (as NNUtil.h's
/// tapsInside, for the ISA files).
inline void tapsInside(int64_t base, int64_t dilation, int64_t size,
                       int64_t kernel, int64_t &first, int64_t &end) {
  first = base >= 0 ? 0 : (-base + dilation - 1) / dilation;
  end = base >= size ? 0 : (size - 1 - base) / dilation + 1;
  first = first < kernel ? first : kernel;
  end = end < kernel ? end : kernel;
}

/// `Block::kLanes` channels at a time from `ch` on, while they fit, for
/// output pixel `ow` of the row; returns the first channel left.
template <typename Block>
int64_t addBlocks(const Row &r, int64_t ow, int64_t kyBegin, int64_t kyEnd,
                  int64_t ch, int32_t *acc) {
  int64_t c = r.channels, stride = r.stride;
  int64_t baseH = r.oh * r.strideH - r.padTop;
  int64_t baseW = ow * r.strideW - r.padLeft;
  int64_t kxBegin, kxEnd;
  tapsInside(baseW, r.dilationW, r.inW, r.kernelW, kxBegin, kxEnd);
  for (; ch + Block::kLanes <= c; ch += Block::kLanes) {
    Block sum(r.base + ch);
    for (int64_t ky = kyBegin; ky < kyEnd; ++ky) {
      const uint8_t *line =
          r.input + (baseH + ky * r.dilationH) * r.inW * stride + ch;
      const int32_t *w = r.weights + ky * r.kernelW * stride + ch;
      for (int64_t kx = kxBegin; kx < kxEnd; ++kx)
        sum.add(line + (baseW + kx * r.dilationW) * stride, w + kx * stride,
                r.inputZero);
    }
    sum.store(acc + ch);
  }
  return ch;
}

/// One output pixel's sums (channels from `ch` on): `Block::kLanes`
/// channels at a time, then `Tail` (narrower) while they fit, the rest one
/// at a time.
template <typename Block, typename Tail = Block>
void pixelOf(const Row &r, int64_t ow, int64_t kyBegin, int64_t kyEnd,
             int64_t ch, int32_t *acc) {
  int64_t c = r.channels, stride = r.stride;
  int64_t baseH = r.oh * r.strideH - r.padTop;
  ch = addBlocks<Block>(r, ow, kyBegin, kyEnd, ch, acc);
  if (Tail::kLanes < Block::kLanes)
    ch = addBlocks<Tail>(r, ow, kyBegin, kyEnd, ch, acc);
  int64_t baseW = ow * r.strideW - r.padLeft;
  int64_t kxBegin, kxEnd;
  tapsInside(baseW, r.dilationW, r.inW, r.kernelW, kxBegin, kxEnd);
  for (; ch < c; ++ch) {
    int32_t s = r.base[ch];
    for (int64_t ky = kyBegin; ky < kyEnd; ++ky)
      for (int64_t kx = kxBegin; kx < kxEnd; ++kx)
        s += (int32_t(r.input[((baseH + ky * r.dilationH) * r.inW + baseW +
                               kx * r.dilationW) *
                                  stride +
                              ch]) -
              r.inputZero) *
             r.weights[(ky * r.kernelW + kx) * stride + ch];
    acc[ch] = s;
  }
}

/// The loop every family shares: each pixel through pixelOf.
template <typename Block, typename Tail = Block>
void rowOf(const Row &r, int32_t *acc) {
  int64_t baseH = r.oh * r.strideH - r.padTop;
  int64_t kyBegin, kyEnd;
  tapsInside(baseH, r.dilationH, r.inH, r.kernelH, kyBegin, kyEnd);
  for (int64_t ow = 0; ow < r.outW; ++ow)
    pixelOf<Block, Tail>(r, ow, kyBegin, kyEnd, 0, acc + ow * r.channels);
}

/// Taps a window may have for interiorOf.
constexpr int64_t kMaxInteriorTaps = 49;

/// The pixels [first, end) of row r whose whole window lies inside the
/// input (along W; the caller checks H), or first == end.
inline void interiorPixels(const Row &r, int64_t &first, int64_t &end) {
  first = (r.padLeft + r.strideW - 1) / r.strideW;
  int64_t lastTap = (r.kernelW - 1) * r.dilationW;
  int64_t room = r.inW - 1 - lastTap + r.padLeft; // the last start inside
  end = room < 0 ? 0 : room / r.strideW + 1;
  end = end < r.outW ? end : r.outW;
  first = first < end ? first : end;
}

/// The sums of pixels [first, end) of row r, every tap inside the input
/// (so base cancels the zero point's terms: acc = sum of x * w), for the
/// channels in whole vectors of `Vec::kLanes`; returns the first channel
/// left. Each vector of channels keeps its Taps weight vectors (Taps 0:
/// the row's tap count, at most kMaxInteriorTaps) while it runs the
/// pixels. Vec: W (a vector of weights), loadWeights(w), zero(),
/// mulAdd(sum, x bytes, W), store(acc, sum).
template <typename Vec, int Taps>
int64_t interiorOf(const Row &r, int64_t first, int64_t end, int32_t *acc) {
  int64_t c = r.channels, stride = r.stride;
  int64_t taps = Taps ? Taps : r.kernelH * r.kernelW;
  int64_t offsets[kMaxInteriorTaps];
  for (int64_t ky = 0, t = 0; ky < r.kernelH; ++ky)
    for (int64_t kx = 0; kx < r.kernelW; ++kx, ++t)
      offsets[t] = (ky * r.dilationH * r.inW + kx * r.dilationW) * stride;
  int64_t baseH = r.oh * r.strideH - r.padTop;
  int64_t ch = 0;
  for (; ch + Vec::kLanes <= c; ch += Vec::kLanes) {
    typename Vec::W w[Taps ? Taps : kMaxInteriorTaps];
#pragma GCC unroll 49
    for (int64_t t = 0; t < taps; ++t)
      w[t] = Vec::loadWeights(r.weights + t * stride + ch);
    const uint8_t *x =
        r.input + (baseH * r.inW + first * r.strideW - r.padLeft) * stride + ch;
    int32_t *out = acc + first * c + ch;
    for (int64_t ow = first; ow < end;
         ++ow, x += r.strideW * stride, out += c) {
      auto sum = Vec::zero();
#pragma GCC unroll 49
      for (int64_t t = 0; t < taps; ++t)
        sum = Vec::mulAdd(sum, x + offsets[t], w[t]);
      Vec::store(out, sum);
    }
  }
  return ch;
}

/// A family's row: the interior pixels of rows whose kernel rows all lie
/// inside the input through interiorOf (3x3 and 5x5 windows unrolled),
/// their channels left and the other pixels through pixelOf.
template <typename Vec, typename Block, typename Tail = Block>
void rowWithInterior(const Row &r, int32_t *acc) {
  int64_t baseH = r.oh * r.strideH - r.padTop;
  int64_t kyBegin, kyEnd;
  tapsInside(baseH, r.dilationH, r.inH, r.kernelH, kyBegin, kyEnd);
  int64_t taps = r.kernelH * r.kernelW;
  int64_t first = 0, end = 0;
  if (kyBegin == 0 && kyEnd == r.kernelH && taps <= kMaxInteriorTaps)
    interiorPixels(r, first, end);
  int64_t c = r.channels, left = 0;
  if (first < end)
    left = taps == 9    ? interiorOf<Vec, 9>(r, first, end, acc)
           : taps == 25 ? interiorOf<Vec, 25>(r, first, end, acc)
                        : interiorOf<Vec, 0>(r, first, end, acc);
  for (int64_t ow = 0; ow < r.outW; ++ow) {
    bool inside = ow >= first && ow < end;
    if (!inside || left < c)
      pixelOf<Block, Tail>(r, ow, kyBegin, kyEnd, inside ? left : 0,
                           acc + ow * c);
  }
}

} // namespace depthwise
} // namespace kernels
} // namespace qopt

#endif // QOPT_LIB_KERNELS_DEPTHWISEKERNELS_H
