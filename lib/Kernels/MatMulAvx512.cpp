//===- MatMulAvx512.cpp - Int8 activation product rows, 16 columns a vector
//===//
//
// Built with -mavx512f -mavx512bw and called only where CPUID finds them
// (the avx512vnni and amx families).
//
//===----------------------------------------------------------------------===//

#include "MatMulKernels.h"

#include <immintrin.h>

void qopt::kernels::matmul::avx512Row(const int32_t *pairs, int64_t kPairs,
                                      const int16_t *packed, int64_t paddedN,
                                      int32_t *acc) {
  int64_t stride = paddedN * 2; // s16 elements from one pair row to the next
  int64_t col = 0;
  for (; col + 64 <= paddedN; col += 64) {
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
    const int16_t *b = packed + col * 2;
    for (int64_t p = 0; p < kPairs; ++p, b += stride) {
      __m512i a = _mm512_set1_epi32(pairs[p]);
      s0 = _mm512_add_epi32(s0, _mm512_madd_epi16(a, _mm512_loadu_si512(b)));
      s1 = _mm512_add_epi32(s1,
                            _mm512_madd_epi16(a, _mm512_loadu_si512(b + 32)));
      s2 = _mm512_add_epi32(s2,
                            _mm512_madd_epi16(a, _mm512_loadu_si512(b + 64)));
      s3 = _mm512_add_epi32(s3,
                            _mm512_madd_epi16(a, _mm512_loadu_si512(b + 96)));
    }
    _mm512_storeu_si512(acc + col, s0);
    _mm512_storeu_si512(acc + col + 16, s1);
    _mm512_storeu_si512(acc + col + 32, s2);
    _mm512_storeu_si512(acc + col + 48, s3);
  }
  for (; col < paddedN; col += 16) {
    __m512i s = _mm512_setzero_si512();
    const int16_t *b = packed + col * 2;
    for (int64_t p = 0; p < kPairs; ++p, b += stride)
      s = _mm512_add_epi32(s, _mm512_madd_epi16(_mm512_set1_epi32(pairs[p]),
                                                _mm512_loadu_si512(b)));
    _mm512_storeu_si512(acc + col, s);
  }
}
