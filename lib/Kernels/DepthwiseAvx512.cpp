//===- DepthwiseAvx512.cpp - Depthwise conv sums, 16 channels a vector ----===//
//
// Built with -mavx512f and called only where CPUID finds it (the
// avx512vnni and amx families); 8 channels left after the 16-lane blocks
// take the AVX2 block.
//
//===----------------------------------------------------------------------===//

#include "DepthwiseBlock8.h"
#include "DepthwiseKernels.h"

#include <immintrin.h>

namespace {
struct Block16 {
  static constexpr int64_t kLanes = 16;
  __m512i sum;
  explicit Block16(const int32_t *base) : sum(_mm512_loadu_si512(base)) {}
  void add(const uint8_t *x, const int32_t *w, int32_t zero) {
    __m512i v = _mm512_cvtepu8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(x)));
    v = _mm512_sub_epi32(v, _mm512_set1_epi32(zero));
    sum = _mm512_add_epi32(sum, _mm512_mullo_epi32(v, _mm512_loadu_si512(w)));
  }
  void store(int32_t *acc) const { _mm512_storeu_si512(acc, sum); }
};

/// interiorOf's lanes: 16 channels.
struct Interior16 {
  static constexpr int64_t kLanes = 16;
  using W = __m512i;
  static W loadWeights(const int32_t *w) { return _mm512_loadu_si512(w); }
  static __m512i zero() { return _mm512_setzero_si512(); }
  static __m512i mulAdd(__m512i sum, const uint8_t *x, W w) {
    __m512i v = _mm512_cvtepu8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(x)));
    return _mm512_add_epi32(sum, _mm512_mullo_epi32(v, w));
  }
  static void store(int32_t *acc, __m512i sum) {
    _mm512_storeu_si512(acc, sum);
  }
};
} // namespace

void qopt::kernels::depthwise::avx512(const Row &row, int32_t *acc) {
  rowWithInterior<Interior16, Block16, Block8>(row, acc);
}
