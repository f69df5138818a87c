//===- EpilogueAvx2.cpp - The conv epilogue, 8 channels at a time ---------===//
//
// Built with -mavx2 -ffp-contract=off; used by every ISA from AVX2 up (one
// vector width keeps one code path to check). Each activation, with or
// without a residual, onto u8 or float, is a loop of its own: with the
// choices made inside the loop, it took 2-3x as long (relu: 0.70 against
// 0.31 ns an element on a Zen 3 core), which a VNNI or AMX GEMM would no
// longer hide. The last channels of a row, fewer than 8, go through the same
// code on padded copies.
//
//===----------------------------------------------------------------------===//

#include "EpilogueKernels.h"
#include "SigmoidFloat.h"

#include <cstring>
#include <immintrin.h>
#include <type_traits>

using namespace qopt::rt::epilogue;

namespace {

/// sigmoid::scalar on 8 lanes, operation for operation.
__attribute__((always_inline)) inline __m256 sigmoid8(__m256 x) {
  using namespace qopt::rt::sigmoid;
  __m256 t = _mm256_min_ps(_mm256_max_ps(_mm256_sub_ps(_mm256_setzero_ps(), x),
                                         _mm256_set1_ps(kLowest)),
                           _mm256_set1_ps(kHighest));
  __m256 n = _mm256_round_ps(_mm256_mul_ps(t, _mm256_set1_ps(kLog2E)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_sub_ps(t, _mm256_mul_ps(n, _mm256_set1_ps(kLn2Hi)));
  r = _mm256_sub_ps(r, _mm256_mul_ps(n, _mm256_set1_ps(kLn2Lo)));
  auto pair = [&](int i) { // kPoly[i] * r + kPoly[i + 1]
    return _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(kPoly[i]), r),
                         _mm256_set1_ps(kPoly[i + 1]));
  };
  __m256 z = _mm256_mul_ps(r, r);
  __m256 r4 = _mm256_mul_ps(z, z);
  __m256 p = _mm256_add_ps(_mm256_mul_ps(pair(0), r4),
                           _mm256_add_ps(_mm256_mul_ps(pair(2), z), pair(4)));
  __m256 e = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(p, z), r),
                           _mm256_set1_ps(1.0f));
  __m256i bits = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  e = _mm256_mul_ps(e, _mm256_castsi256_ps(bits));
  __m256 s = _mm256_div_ps(_mm256_set1_ps(1.0f),
                           _mm256_add_ps(_mm256_set1_ps(1.0f), e));
  return _mm256_blendv_ps(s, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

struct Lanes {
  __m256 outputScale, outputZero, residualScale, alpha, beta, zero, top;
  __m256i residualZero;
};

/// Eight channels of one pixel: the sums, their per-channel constants, the
/// residual bytes; returns y before the output grid.
__attribute__((always_inline)) inline __m256
finish8(const Params &p, const Lanes &l, __m256i acc, __m256i zeroTerm,
        __m256 scale, __m256 bias, __m128i residual8) {
  __m256 y =
      _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(acc, zeroTerm)), scale);
  if (p.bias)
    y = _mm256_add_ps(y, bias);
  __m256 r = l.zero;
  if (p.hasResidual)
    r = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(
                          _mm256_cvtepu8_epi32(residual8), l.residualZero)),
                      l.residualScale);
  if (p.hasResidual && !p.residualAfterActivation)
    y = _mm256_add_ps(y, r);
  switch (p.activation) {
  case VectorActivation::None:
    break;
  case VectorActivation::Relu: // v < 0 ? 0 : v
    y = _mm256_andnot_ps(_mm256_cmp_ps(y, l.zero, _CMP_LT_OQ), y);
    break;
  case VectorActivation::LeakyRelu: // v < 0 ? alpha * v : v
    y = _mm256_blendv_ps(y, _mm256_mul_ps(y, l.alpha),
                         _mm256_cmp_ps(y, l.zero, _CMP_LT_OQ));
    break;
  case VectorActivation::Clip: // min(max(v, lo), hi) as std:: does them
    y = _mm256_blendv_ps(y, l.alpha, _mm256_cmp_ps(y, l.alpha, _CMP_LT_OQ));
    y = _mm256_blendv_ps(y, l.beta, _mm256_cmp_ps(l.beta, y, _CMP_LT_OQ));
    break;
  case VectorActivation::Sigmoid:
    y = sigmoid8(y);
    break;
  case VectorActivation::Silu: // x * sigmoid(x), one rounding
    y = _mm256_mul_ps(y, sigmoid8(y));
    break;
  }
  if (p.hasResidual && p.residualAfterActivation)
    y = _mm256_add_ps(y, r);
  return y;
}

/// u8 = clamp(nearbyint(y / scale) + zero, 0, 255), NaN -> 0, in the low
/// 8 bytes.
__attribute__((always_inline)) inline __m128i quantize8(const Lanes &l,
                                                        __m256 y) {
  __m256 q = _mm256_round_ps(_mm256_div_ps(y, l.outputScale),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  q = _mm256_add_ps(q, l.outputZero);
  q = _mm256_min_ps(_mm256_max_ps(q, l.zero), l.top); // max: NaN -> 0
  __m256i i = _mm256_cvtps_epi32(q);
  __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(i),
                                   _mm256_extracti128_si256(i, 1));
  return _mm_packus_epi16(words, words);
}

/// Loads the 8 lanes at `at`: all of them, or the first `count` with the
/// rest zero.
__attribute__((always_inline)) inline __m256i load8(const int32_t *at,
                                                    int64_t count) {
  if (count == 8)
    return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(at));
  alignas(32) int32_t pad[8] = {};
  std::memcpy(pad, at, size_t(count) * 4);
  return _mm256_load_si256(reinterpret_cast<const __m256i *>(pad));
}

__attribute__((always_inline)) inline __m256 load8(const float *at,
                                                   int64_t count) {
  return _mm256_castsi256_ps(
      load8(reinterpret_cast<const int32_t *>(at), count));
}

__attribute__((always_inline)) inline __m128i loadBytes8(const uint8_t *at,
                                                         int64_t count) {
  if (count == 8)
    return _mm_loadl_epi64(reinterpret_cast<const __m128i *>(at));
  uint8_t pad[16] = {};
  std::memcpy(pad, at, size_t(count));
  return _mm_loadu_si128(reinterpret_cast<const __m128i *>(pad));
}

/// Stores the result of 8 lanes (or the first `count`) at `out`.
template <bool Quantized>
__attribute__((always_inline)) inline void store8(const Lanes &l, __m256 y,
                                                  void *out, int64_t count) {
  if constexpr (Quantized) {
    uint8_t *bytesOut = static_cast<uint8_t *>(out);
    __m128i bytes = quantize8(l, y);
    if (count == 8) {
      _mm_storel_epi64(reinterpret_cast<__m128i *>(bytesOut), bytes);
    } else {
      uint8_t tmp[16];
      _mm_storeu_si128(reinterpret_cast<__m128i *>(tmp), bytes);
      std::memcpy(bytesOut, tmp, size_t(count));
    }
  } else {
    float *floatsOut = static_cast<float *>(out);
    if (count == 8) {
      _mm256_storeu_ps(floatsOut, y);
    } else {
      alignas(32) float tmp[8];
      _mm256_store_ps(tmp, y);
      std::memcpy(floatsOut, tmp, size_t(count) * 4);
    }
  }
}

/// Eight channels from c on (or the last `count` < 8 of a row) of
/// `Pixels` adjacent pixels, from the sums to the stored results. The
/// pixels' chains are independent: a long activation (SiLU: some 40
/// dependent operations) runs several at once instead of one after the
/// other, and the channels' constants are loaded once.
template <VectorActivation Act, bool Residual, bool Quantized, int Pixels>
__attribute__((always_inline)) inline void
finishChannels(const Params &p, const Lanes &l, const int32_t *acc,
               int64_t channels, const uint8_t *residual, void *output,
               int64_t stride, int64_t c, int64_t count) {
  Params fixed = p;
  fixed.activation = Act;
  fixed.hasResidual = Residual;
  size_t elementBytes = Quantized ? 1 : sizeof(float);
  __m256i zeroTerm = load8(p.zeroTerm + c, count);
  __m256 scale = load8(p.scale + c, count);
  __m256 bias = p.bias ? load8(p.bias + c, count) : l.zero;
  __m256 y[Pixels];
#pragma GCC unroll 8
  for (int i = 0; i < Pixels; ++i)
    y[i] = finish8(fixed, l, load8(acc + i * channels + c, count), zeroTerm,
                   scale, bias,
                   Residual ? loadBytes8(residual + i * stride + c, count)
                            : _mm_setzero_si128());
#pragma GCC unroll 8
  for (int i = 0; i < Pixels; ++i)
    store8<Quantized>(
        l, y[i], static_cast<char *>(output) + (i * stride + c) * elementBytes,
        count);
}

/// The rows, with the activation, the residual and the kind of result
/// fixed: kPixelBatch pixels at a time, full vectors then the last
/// channels; the pixels left one at a time.
template <VectorActivation Act, bool Residual, bool Quantized>
void finishRows(const Params &p, const Lanes &l, const int32_t *acc,
                int64_t pixels, int64_t channels, const uint8_t *residual,
                void *output, int64_t stride) {
  constexpr int kPixelBatch = 4;
  size_t elementBytes = Quantized ? 1 : sizeof(float);
  int64_t full = channels / 8 * 8;
  auto pixelsFrom = [&](int64_t px, auto batch) {
    constexpr int B = decltype(batch)::value;
    const int32_t *a = acc + px * channels;
    const uint8_t *res = Residual ? residual + px * stride : nullptr;
    void *out = static_cast<char *>(output) + px * stride * elementBytes;
    for (int64_t c = 0; c < full; c += 8)
      finishChannels<Act, Residual, Quantized, B>(p, l, a, channels, res, out,
                                                  stride, c, 8);
    if (full < channels)
      finishChannels<Act, Residual, Quantized, B>(
          p, l, a, channels, res, out, stride, full, channels - full);
  };
  int64_t px = 0;
  for (; px + kPixelBatch <= pixels; px += kPixelBatch)
    pixelsFrom(px, std::integral_constant<int, kPixelBatch>());
  for (; px < pixels; ++px)
    pixelsFrom(px, std::integral_constant<int, 1>());
}

template <VectorActivation Act>
void finishRowsWith(const Params &p, const Lanes &l, const int32_t *acc,
                    int64_t pixels, int64_t channels, const uint8_t *residual,
                    void *output, int64_t stride) {
  bool quantized = p.outputScale != 0;
  if (p.hasResidual) {
    if (quantized)
      return finishRows<Act, true, true>(p, l, acc, pixels, channels, residual,
                                         output, stride);
    return finishRows<Act, true, false>(p, l, acc, pixels, channels, residual,
                                        output, stride);
  }
  if (quantized)
    return finishRows<Act, false, true>(p, l, acc, pixels, channels, residual,
                                        output, stride);
  return finishRows<Act, false, false>(p, l, acc, pixels, channels, residual,
                                       output, stride);
}

} // namespace

void qopt::rt::epilogue::avx2(const Params &p, const int32_t *acc,
                              int64_t pixels, int64_t channels,
                              const uint8_t *residual, void *output,
                              int64_t stride) {
  Lanes l;
  l.outputScale = _mm256_set1_ps(p.outputScale);
  l.outputZero = _mm256_set1_ps(p.outputZero);
  l.residualScale = _mm256_set1_ps(p.residualScale);
  l.residualZero = _mm256_set1_epi32(p.residualZero);
  l.alpha = _mm256_set1_ps(p.alpha);
  l.beta = _mm256_set1_ps(p.beta);
  l.zero = _mm256_setzero_ps();
  l.top = _mm256_set1_ps(255.0f);
  using Rows = void (*)(const Params &, const Lanes &, const int32_t *, int64_t,
                        int64_t, const uint8_t *, void *, int64_t);
  // In VectorActivation's order.
  static constexpr Rows kRowsByActivation[] = {
      finishRowsWith<VectorActivation::None>,
      finishRowsWith<VectorActivation::Relu>,
      finishRowsWith<VectorActivation::LeakyRelu>,
      finishRowsWith<VectorActivation::Clip>,
      finishRowsWith<VectorActivation::Sigmoid>,
      finishRowsWith<VectorActivation::Silu>};
  static_assert(uint8_t(VectorActivation::Silu) == 5, "one entry each");
  kRowsByActivation[uint8_t(p.activation)](p, l, acc, pixels, channels,
                                           residual, output, stride);
}
