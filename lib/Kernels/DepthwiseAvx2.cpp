//===- DepthwiseAvx2.cpp - Depthwise conv sums, 8 channels a vector -------===//
//
// Built with -mavx2 and called only where CPUID finds AVX2.
//
//===----------------------------------------------------------------------===//

#include "DepthwiseKernels.h"

#include <immintrin.h>

namespace {
struct Block8 {
  static constexpr int64_t kLanes = 8;
  __m256i sum;
  explicit Block8(const int32_t *base)
      : sum(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(base))) {}
  void add(const uint8_t *x, const int32_t *w, int32_t zero) {
    __m256i v = _mm256_cvtepu8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i *>(x)));
    v = _mm256_sub_epi32(v, _mm256_set1_epi32(zero));
    sum = _mm256_add_epi32(
        sum, _mm256_mullo_epi32(
                 v, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w))));
  }
  void store(int32_t *acc) const {
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(acc), sum);
  }
};
} // namespace

void qopt::rt::depthwise::avx2(const Row &row, int32_t *acc) {
  rowOf<Block8>(row, acc);
}
