//===- TableAvx512.cpp - 256-entry byte lookup, 64 bytes at a time --------===//
//
// Built with -mavx512f -mavx512bw -mavx512vbmi; called only where CPUID
// says the machine has AVX512-VBMI (ByteTable.cpp). The unit tests build it
// a second time over SIMDe (Intrinsics.h).
//
// vpermi2b picks each byte from 128 (two registers) with the low 7 bits of
// its index. The table's halves are two such pairs; the index's top bit
// chooses between their picks:
//
//   out = in < 128 ? pick(table[0..127], in) : pick(table[128..255], in)
//
// Three instructions a 64 bytes, against the AVX2 path's 64 a 32. The
// last bytes (fewer than 64) go through a copy.
//
//===----------------------------------------------------------------------===//

#include "Intrinsics.h"
#include "TableKernels.h"

#include <cstring>

namespace {

inline __m512i lookUp64(__m512i x, __m512i t0, __m512i t1, __m512i t2,
                        __m512i t3) {
  __m512i low = _mm512_permutex2var_epi8(t0, x, t1);
  __m512i high = _mm512_permutex2var_epi8(t2, x, t3);
  return _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), low, high);
}

} // namespace

void qopt::kernels::table::avx512Vbmi(const uint8_t *table, const uint8_t *in,
                                      int64_t count, uint8_t *out) {
  __m512i t[4];
  for (int i = 0; i < 4; ++i)
    t[i] = _mm512_loadu_si512(table + 64 * i);
  int64_t i = 0;
  for (; i + 64 <= count; i += 64)
    _mm512_storeu_si512(
        out + i, lookUp64(_mm512_loadu_si512(in + i), t[0], t[1], t[2], t[3]));
  if (i < count) {
    alignas(64) uint8_t rest[64] = {};
    std::memcpy(rest, in + i, size_t(count - i));
    _mm512_store_si512(
        rest, lookUp64(_mm512_load_si512(rest), t[0], t[1], t[2], t[3]));
    std::memcpy(out + i, rest, size_t(count - i));
  }
}
