//===- PeakAvx2.cpp - vpmaddwd + vpaddd (ymm) peak ------------------------===//
//
// Built with -mavx2 (bench/CMakeLists.txt); run only where CPUID finds it.
//
//===----------------------------------------------------------------------===//

#include "PeakLoopBody.h"
#include "PeakLoops.h"

#include <immintrin.h>

int64_t qopt::bench::peakAvx2(int64_t iterations, int32_t *sink) {
  return runPeakLoop<__m256i, 12, 16>(
      iterations, sink, [](int v) { return _mm256_set1_epi32(v); },
      [](__m256i acc, __m256i a, __m256i b) {
        return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
      },
      [](__m256i x, __m256i y) { return _mm256_add_epi32(x, y); },
      [](__m256i x) { return _mm256_extract_epi32(x, 0); });
}
