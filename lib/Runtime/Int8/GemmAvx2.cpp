//===- GemmAvx2.cpp - u8 x s8 GEMM with 16-bit products (vpmaddwd) --------===//
//
// Built with -mavx2; called only where CPUID says the machine has it.
//
// AVX2 has no vpdpbusd, and vpmaddubsw saturates its 16-bit pair sums
// (255 * 127 * 2 > 32767), so both sides are 16-bit here: B was widened
// when packed, A is widened 4 bytes at a time. vpmaddwd adds two products
// into each 32-bit lane (channel c, k 0-1 | channel c, k 2-3); the pairs are
// added once per tile, at the end.
//
// Register tile: 3 rows x 1 panel (16 channels) = 12 ymm accumulators; the
// panel is read straight from memory by vpmaddwd.
//
//===----------------------------------------------------------------------===//

#include "Avx2Store.h"
#include "GemmKernels.h"

#include <immintrin.h>

using namespace qopt::rt;
using namespace qopt::rt::gemm;

namespace {

constexpr int kRows = 3;

/// The 4 bytes of a group, each widened to 16 bits, repeated 4 times.
__attribute__((always_inline)) inline __m256i widenGroup(uint32_t group) {
  uint64_t wide = (group & 0xffu) | (uint64_t(group & 0xff00u) << 8) |
                  (uint64_t(group & 0xff0000u) << 16) |
                  (uint64_t(group & 0xff000000u) << 24);
  return _mm256_set1_epi64x(int64_t(wide));
}

/// acc0 holds channels 0-3 as pairs, acc1 channels 4-7: 8 sums in order.
__attribute__((always_inline)) inline __m256i addPairs(__m256i acc0,
                                                       __m256i acc1) {
  __m256i sums = _mm256_hadd_epi32(acc0, acc1); // 0 1 4 5 | 2 3 6 7
  return _mm256_permute4x64_epi64(sums, 0xd8);  // 0 1 2 3 4 5 6 7
}

template <int Rows>
__attribute__((always_inline)) inline void
tile(const uint8_t *a, int64_t lda, const int16_t *panel, const Panels &b,
     int32_t *c, int64_t ldc, int64_t channels) {
  __m256i acc[Rows][4];
#pragma GCC unroll 32
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 32
    for (int q = 0; q < 4; ++q)
      acc[r][q] = _mm256_setzero_si256();
  for (int64_t g = 0; g < b.numGroups; ++g) {
    const __m256i *w = reinterpret_cast<const __m256i *>(panel + g * 64);
#pragma GCC unroll 32
    for (int r = 0; r < Rows; ++r) {
      __m256i x = widenGroup(loadGroup(a + r * lda, g, b.k));
#pragma GCC unroll 32
      for (int q = 0; q < 4; ++q)
        acc[r][q] = _mm256_add_epi32(
            acc[r][q], _mm256_madd_epi16(x, _mm256_load_si256(w + q)));
    }
  }
#pragma GCC unroll 32
  for (int r = 0; r < Rows; ++r) {
    store8(c + r * ldc, addPairs(acc[r][0], acc[r][1]), channels);
    store8(c + r * ldc + 8, addPairs(acc[r][2], acc[r][3]), channels - 8);
  }
}

} // namespace

void gemm::avx2(const uint8_t *a, int64_t lda, int64_t m, const Panels &b,
                int32_t *c, int64_t ldc) {
  eachPanelTile<kRows>(a, lda, m, b, c, ldc,
                       [&](auto rows, const uint8_t *ar, const char *panel,
                           int32_t *cr, int64_t channels) {
                         tile<decltype(rows)::value>(
                             ar, lda, reinterpret_cast<const int16_t *>(panel),
                             b, cr, ldc, channels);
                       });
}
