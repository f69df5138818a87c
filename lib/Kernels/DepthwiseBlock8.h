//===- DepthwiseBlock8.h - Depthwise sums of 8 channels, AVX2 --*- C++ -*-===//
//
// Private to lib/Kernels: the 8-lane block of the AVX2 family, also the
// AVX-512 family's block for the channels a 16-lane one leaves (24, 40,
// 56, ... channels). Include only from files built with AVX2 or above.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_DEPTHWISEBLOCK8_H
#define QOPT_LIB_KERNELS_DEPTHWISEBLOCK8_H

#include <immintrin.h>

#include <cstdint>

namespace qopt {
namespace kernels {
namespace depthwise {
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
} // namespace depthwise
} // namespace kernels
} // namespace qopt

#endif // QOPT_LIB_KERNELS_DEPTHWISEBLOCK8_H
