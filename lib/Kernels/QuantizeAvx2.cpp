//===- QuantizeAvx2.cpp - f32 -> int8 bytes, 8 at a time ------------------===//
//
// Built with -mavx2; called only where CPUID says the machine has it.
//
//   r = roundps(x / scale, nearest even)     the scalar nearbyintf(x / scale)
//   r = min(max(r, lowest - zero), highest - zero) + zero
//
// Clamping before adding the zero point keeps every sum an exact small
// integer, so the float sum equals the reference's double one wherever it
// does not saturate, and saturates where it does. NaN lanes become 0.
//
//===----------------------------------------------------------------------===//

#include "QuantizeKernels.h"

#include <immintrin.h>

using namespace qopt::kernels;

namespace {

/// The grid's constants, splat once.
struct GridLanes {
  explicit GridLanes(const quantize::Grid &grid)
      : scale(_mm256_set1_ps(grid.scale)),
        zero(_mm256_set1_ps(float(grid.zero))),
        low(_mm256_set1_ps(float(grid.lowest - grid.zero))),
        high(_mm256_set1_ps(float(grid.highest - grid.zero))),
        flip(_mm_set1_epi8(char(grid.flip))), isSigned(grid.lowest < 0) {}
  __m256 scale, zero, low, high;
  __m128i flip;
  bool isSigned;
};

/// Eight floats onto the grid: their bytes in the low half.
inline __m128i quantize8(const GridLanes &g, __m256 x) {
  __m256 r = _mm256_round_ps(_mm256_div_ps(x, g.scale),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 isNan = _mm256_cmp_ps(r, r, _CMP_UNORD_Q);
  r = _mm256_add_ps(_mm256_min_ps(_mm256_max_ps(r, g.low), g.high), g.zero);
  __m256i q = _mm256_cvtps_epi32(_mm256_andnot_ps(isNan, r));
  __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(q),
                                  _mm256_extracti128_si256(q, 1));
  __m128i bytes = g.isSigned ? _mm_packs_epi16(words, words)
                             : _mm_packus_epi16(words, words);
  return _mm_xor_si128(bytes, g.flip);
}

} // namespace

void quantize::avx2(const float *x, int64_t xStride, int64_t count,
                    int64_t runs, const Grid &grid, uint8_t *out,
                    int64_t outStride) {
  GridLanes g(grid);
  int64_t tail = count % 8;
  // The last 1-7 elements of a run: a masked load, the same arithmetic,
  // their bytes stored alone.
  __m256i tailMask =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(tail)),
                         _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (int64_t run = 0; run < runs; ++run, x += xStride, out += outStride) {
    int64_t i = 0;
    for (; i + 8 <= count; i += 8)
      _mm_storel_epi64(reinterpret_cast<__m128i *>(out + i),
                       quantize8(g, _mm256_loadu_ps(x + i)));
    if (tail) {
      alignas(16) uint8_t bytes[16];
      _mm_store_si128(reinterpret_cast<__m128i *>(bytes),
                      quantize8(g, _mm256_maskload_ps(x + i, tailMask)));
      for (int64_t k = 0; k < tail; ++k)
        out[i + k] = bytes[k];
    }
  }
}

namespace {

/// Sixteen elements of x onto the grid, their bytes in order; the lanes
/// past `count` (at most 16) are zeros' bytes, read through masked loads.
inline __m128i quantize16(const GridLanes &g, const float *x, int64_t count) {
  if (count >= 16)
    return _mm_unpacklo_epi64(quantize8(g, _mm256_loadu_ps(x)),
                              quantize8(g, _mm256_loadu_ps(x + 8)));
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256i low = _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(count)), lane);
  __m256i high =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(count) - 8), lane);
  return _mm_unpacklo_epi64(quantize8(g, _mm256_maskload_ps(x, low)),
                            quantize8(g, _mm256_maskload_ps(x + 8, high)));
}

/// pshufb masks that interleave three planes' 16 bytes into 48: byte k of
/// output block b takes byte (16b + k) / 3 of plane (16b + k) % 3.
struct ThreePlaneMasks {
  ThreePlaneMasks() {
    for (int b = 0; b < 3; ++b)
      for (int p = 0; p < 3; ++p) {
        alignas(16) int8_t bytes[16];
        for (int k = 0; k < 16; ++k)
          bytes[k] =
              (16 * b + k) % 3 == p ? int8_t((16 * b + k) / 3) : int8_t(-128);
        masks[b][p] = _mm_load_si128(reinterpret_cast<const __m128i *>(bytes));
      }
  }
  __m128i masks[3][3];
};

} // namespace

void quantize::avx2Planes(const float *x, int64_t planeStride, int64_t planes,
                          int64_t count, const Grid &grid, uint8_t *out) {
  GridLanes g(grid);
  static const ThreePlaneMasks three;
  for (int64_t i = 0; i < count; i += 16) {
    int64_t n = count - i < 16 ? count - i : 16;
    uint8_t *to = out + i * planes;
    if (planes == 3) {
      __m128i q[3];
      for (int p = 0; p < 3; ++p)
        q[p] = quantize16(g, x + p * planeStride + i, n);
      alignas(16) uint8_t block[48];
      for (int b = 0; b < 3; ++b) {
        __m128i v = _mm_or_si128(
            _mm_or_si128(_mm_shuffle_epi8(q[0], three.masks[b][0]),
                         _mm_shuffle_epi8(q[1], three.masks[b][1])),
            _mm_shuffle_epi8(q[2], three.masks[b][2]));
        if (n == 16)
          _mm_storeu_si128(reinterpret_cast<__m128i *>(to + 16 * b), v);
        else
          _mm_store_si128(reinterpret_cast<__m128i *>(block + 16 * b), v);
      }
      for (int64_t k = 0; n < 16 && k < 3 * n; ++k)
        to[k] = block[k];
      continue;
    }
    for (int64_t p = 0; p < planes; ++p) {
      alignas(16) uint8_t bytes[16];
      _mm_store_si128(reinterpret_cast<__m128i *>(bytes),
                      quantize16(g, x + p * planeStride + i, n));
      for (int64_t k = 0; k < n; ++k)
        to[k * planes + p] = bytes[k];
    }
  }
}

void quantize::avx2Range(const float *x, int64_t count, float &lo, float &hi) {
  // min_ps/max_ps return their second operand when either is NaN or both
  // are zeros, as the scalar v < lo ? v : lo keeps lo: the bounds are the
  // scalar loop's, lane by lane and then across lanes.
  __m256 low = _mm256_setzero_ps(), high = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    low = _mm256_min_ps(v, low);
    high = _mm256_max_ps(v, high);
  }
  alignas(32) float lanes[16];
  _mm256_store_ps(lanes, low);
  _mm256_store_ps(lanes + 8, high);
  float l = 0.0f, h = 0.0f;
  for (int lane = 0; lane < 8; ++lane) {
    l = lanes[lane] < l ? lanes[lane] : l;
    h = lanes[8 + lane] > h ? lanes[8 + lane] : h;
  }
  for (; i < count; ++i) {
    l = x[i] < l ? x[i] : l;
    h = x[i] > h ? x[i] : h;
  }
  lo = l;
  hi = h;
}
