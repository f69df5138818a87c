//===- QuantizeAvx2.cpp - f32 -> int8 bytes, 8 at a time ------------------===//
//
// Built with -mavx2; called only where CPUID says the machine has it.
//
//   r = roundps(x / scale, nearest even)     the scalar nearbyintf(x / scale)
//   r = min(max(r, lowest - zero), highest - zero) + zero
//
// Clamping before adding the zero point keeps every sum an exact small
// integer, so the float sum equals the reference's double one wherever it
// does not saturate, and saturates where it does. NaN lanes become 0.
//
//===----------------------------------------------------------------------===//

#include "QuantizeKernels.h"

#include <immintrin.h>

using namespace qopt::rt;

void quantize::avx2(const float *x, int64_t count, const Grid &grid,
                    uint8_t *out) {
  const __m256 scale = _mm256_set1_ps(grid.scale);
  const __m256 zero = _mm256_set1_ps(float(grid.zero));
  const __m256 low = _mm256_set1_ps(float(grid.lowest - grid.zero));
  const __m256 high = _mm256_set1_ps(float(grid.highest - grid.zero));
  const __m128i flip = _mm_set1_epi8(char(grid.flip));
  bool isSigned = grid.lowest < 0;
  for (int64_t i = 0; i + 8 <= count; i += 8) {
    __m256 r = _mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(x + i), scale),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 isNan = _mm256_cmp_ps(r, r, _CMP_UNORD_Q);
    r = _mm256_add_ps(_mm256_min_ps(_mm256_max_ps(r, low), high), zero);
    __m256i q = _mm256_cvtps_epi32(_mm256_andnot_ps(isNan, r));
    __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(q),
                                    _mm256_extracti128_si256(q, 1));
    __m128i bytes = isSigned ? _mm_packs_epi16(words, words)
                             : _mm_packus_epi16(words, words);
    _mm_storel_epi64(reinterpret_cast<__m128i *>(out + i),
                     _mm_xor_si128(bytes, flip));
  }
}
