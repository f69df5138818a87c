//===- PeakAvx512Vnni.cpp - vpdpbusd (zmm) peak ---------------------------===//
//
// Built with -mavx512f -mavx512vnni (lib/CMakeLists.txt); run only where
// CPUID finds it.
//
//===----------------------------------------------------------------------===//

#include "PeakLoopBody.h"
#include "PeakLoops.h"

#include <immintrin.h>

int64_t qopt::kernels::peak::peakAvx512Vnni(int64_t iterations, int32_t *sink) {
  return runPeakLoop<__m512i, 24, 64>(
      iterations, sink, [](int v) { return _mm512_set1_epi32(v); },
      [](__m512i acc, __m512i a, __m512i b) {
        return _mm512_dpbusd_epi32(acc, a, b);
      },
      [](__m512i x, __m512i y) { return _mm512_add_epi32(x, y); },
      [](__m512i x) {
        alignas(64) int32_t lanes[16];
        _mm512_store_si512(lanes, x);
        return lanes[0];
      });
}
