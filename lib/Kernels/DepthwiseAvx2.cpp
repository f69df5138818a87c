//===- DepthwiseAvx2.cpp - Depthwise conv sums, 8 channels a vector -------===//
//
// Built with -mavx2 and called only where CPUID finds AVX2.
//
//===----------------------------------------------------------------------===//

#include "DepthwiseBlock8.h"
#include "DepthwiseKernels.h"

namespace {
/// interiorOf's lanes: 8 channels.
struct Interior8 {
  static constexpr int64_t kLanes = 8;
  using W = __m256i;
  static W loadWeights(const int32_t *w) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w));
  }
  static __m256i zero() { return _mm256_setzero_si256(); }
  static __m256i mulAdd(__m256i sum, const uint8_t *x, W w) {
    __m256i v = _mm256_cvtepu8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i *>(x)));
    return _mm256_add_epi32(sum, _mm256_mullo_epi32(v, w));
  }
  static void store(int32_t *acc, __m256i sum) {
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(acc), sum);
  }
};
} // namespace

void qopt::kernels::depthwise::avx2(const Row &row, int32_t *acc) {
  rowWithInterior<Interior8, Block8>(row, acc);
}
