//===- MatMulAvx2.cpp - Int8 activation product rows, 8 columns a vector --===//
//
// Built with -mavx2 and called only where CPUID finds it.
//
//===----------------------------------------------------------------------===//

#include "MatMulKernels.h"

#include <immintrin.h>

static __m256i load(const int16_t *p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
}

void qopt::kernels::matmul::avx2Row(const int32_t *pairs, int64_t kPairs,
                                    const int16_t *packed, int64_t paddedN,
                                    int32_t *acc) {
  int64_t stride = paddedN * 2;
  int64_t col = 0;
  for (; col + 32 <= paddedN; col += 32) {
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    const int16_t *b = packed + col * 2;
    for (int64_t p = 0; p < kPairs; ++p, b += stride) {
      __m256i a = _mm256_set1_epi32(pairs[p]);
      s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(a, load(b)));
      s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(a, load(b + 16)));
      s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(a, load(b + 32)));
      s3 = _mm256_add_epi32(s3, _mm256_madd_epi16(a, load(b + 48)));
    }
    auto *out = reinterpret_cast<__m256i *>(acc + col);
    _mm256_storeu_si256(out, s0);
    _mm256_storeu_si256(out + 1, s1);
    _mm256_storeu_si256(out + 2, s2);
    _mm256_storeu_si256(out + 3, s3);
  }
  for (; col < paddedN; col += 8) {
    __m256i s = _mm256_setzero_si256();
    const int16_t *b = packed + col * 2;
    for (int64_t p = 0; p < kPairs; ++p, b += stride)
      s = _mm256_add_epi32(
          s, _mm256_madd_epi16(_mm256_set1_epi32(pairs[p]), load(b)));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(acc + col), s);
  }
}
