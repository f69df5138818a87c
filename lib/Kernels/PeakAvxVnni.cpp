//===- PeakAvxVnni.cpp - vpdpbusd (ymm, VEX) peak -------------------------===//
//
// Built with -mavx2 -mavxvnni (lib/CMakeLists.txt); run only where CPUID
// finds it.
//
//===----------------------------------------------------------------------===//

#include "PeakLoopBody.h"
#include "PeakLoops.h"

#include <immintrin.h>

int64_t qopt::kernels::peak::peakAvxVnni(int64_t iterations, int32_t *sink) {
  return runPeakLoop<__m256i, 12, 32>(
      iterations, sink, [](int v) { return _mm256_set1_epi32(v); },
      [](__m256i acc, __m256i a, __m256i b) {
        return _mm256_dpbusd_avx_epi32(acc, a, b);
      },
      [](__m256i x, __m256i y) { return _mm256_add_epi32(x, y); },
      [](__m256i x) { return _mm256_extract_epi32(x, 0); });
}
