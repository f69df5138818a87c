//===- PeakAvx2.cpp - vpmaddwd + vpaddd (ymm) peak ------------------------===//
//
// Built with -mavx2 (lib/CMakeLists.txt); run only where CPUID finds it.
//
// vpmaddwd does not read its accumulator, so one product added to every
// chain would be computed once (the compiler shares it): each chain gets
// its own pair of operands here, 3 x 2 products a round. 6 chains cover
// vpaddd's latency, and 6 + 5 ymm leave the loop free of spills.
//
//===----------------------------------------------------------------------===//

#include "PeakLoops.h"

#include <immintrin.h>

int64_t qopt::kernels::peak::peakAvx2(int64_t iterations, int32_t *sink) {
  constexpr int kRows = 3, kCols = 2;
  __m256i acc[kRows][kCols], a[kRows], b[kCols];
  for (int r = 0; r < kRows; ++r) {
    a[r] = _mm256_set1_epi32(0x01020304 + r);
    for (int c = 0; c < kCols; ++c)
      acc[r][c] = _mm256_set1_epi32(r * kCols + c);
  }
  for (int c = 0; c < kCols; ++c)
    b[c] = _mm256_set1_epi32(0x05060708 + c);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 8
      for (int c = 0; c < kCols; ++c)
        acc[r][c] = _mm256_add_epi32(acc[r][c], _mm256_madd_epi16(a[r], b[c]));
    }
    // The operands must not be provably constant: the products would be
    // hoisted out of the loop.
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r)
      __asm__ volatile("" : "+v"(a[r]));
#pragma GCC unroll 8
    for (int c = 0; c < kCols; ++c)
      __asm__ volatile("" : "+v"(b[c]));
  }
  __m256i total = _mm256_setzero_si256();
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c)
      total = _mm256_add_epi32(total, acc[r][c]);
  *sink = _mm256_extract_epi32(total, 0);
  return iterations * kRows * kCols * 16;
}
