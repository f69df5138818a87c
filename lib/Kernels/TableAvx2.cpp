//===- TableAvx2.cpp - 256-entry byte lookup, 32 bytes at a time ----------===//
//
// Built with -mavx2; called only where CPUID says the machine has it.
//
// vpshufb looks up 16-entry tables (one per 128-bit lane) with the low 4
// bits of each index. The 256 entries are sixteen such rows; row r answers
// the bytes whose high nibble is r:
//
//   out = OR over r of (vpshufb(row r, in & 15) AND (in >> 4 == r))
//
//===----------------------------------------------------------------------===//

#include "TableKernels.h"

#include <immintrin.h>

void qopt::kernels::table::avx2(const uint8_t *table, const uint8_t *in,
                                int64_t count, uint8_t *out) {
  __m256i rows[16];
  for (int r = 0; r < 16; ++r)
    rows[r] = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(table + 16 * r)));
  const __m256i lowNibble = _mm256_set1_epi8(0x0f);
  for (int64_t i = 0; i + 32 <= count; i += 32) {
    __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(in + i));
    __m256i low = _mm256_and_si256(x, lowNibble);
    __m256i high = _mm256_and_si256(_mm256_srli_epi16(x, 4), lowNibble);
    __m256i result = _mm256_setzero_si256();
#pragma GCC unroll 16
    for (int r = 0; r < 16; ++r) {
      __m256i hit = _mm256_cmpeq_epi8(high, _mm256_set1_epi8(char(r)));
      result = _mm256_or_si256(
          result, _mm256_and_si256(hit, _mm256_shuffle_epi8(rows[r], low)));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i), result);
  }
}
