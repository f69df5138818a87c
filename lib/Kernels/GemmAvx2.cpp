//===- GemmAvx2.cpp - u8 x s8 GEMM with 16-bit products (vpmaddwd) --------===//
//
// Built with -mavx2; called only where CPUID says the machine has it.
//
// AVX2 has no vpdpbusd, and vpmaddubsw saturates its 16-bit pair sums
// (255 * 127 * 2 > 32767), so both sides are 16-bit here: B was widened
// when packed, and A is widened into the caller's scratch first, 16 bytes
// per vpmovzxbw, each row zero-padded to whole k groups:
//
//   A (m x k u8) --widen--> A16 (m x stride s16, interleaved by register
//   tile: a tile's rows of group g are 4 x 6 adjacent values), then per k
//   group g:
//     x    = broadcast of A16[row][4g .. 4g+3]         (one vpbroadcastq)
//     acc += vpmaddwd(x, B[half][g][4 channels x 4 k]) (two products a lane)
//
// vpmaddwd adds two products into each 32-bit lane (channel c, k 0-1 |
// channel c, k 2-3); the pairs are added once per tile, at the end.
//
// Register tile: 6 rows x half a panel (8 channels: 2 ymm of B, held in
// registers for the whole group; the halves are stored whole, so a tile
// reads its 64 bytes a group from adjacent lines) = 12 ymm accumulators. Per k
// group: 2 B loads, 6 broadcast loads (48 adjacent bytes), 12 vpmaddwd and 12
// vpaddd.
//
//===----------------------------------------------------------------------===//

#include "Avx2Store.h"
#include "GemmKernels.h"

#include <immintrin.h>

using namespace qopt::kernels;
using namespace qopt::kernels::gemm;

namespace {

constexpr int kRows = 6;
/// ymm of B per tile: 2 = 8 channels (half a panel).
constexpr int kQuads = 2;

/// acc0 holds channels 0-3 as pairs, acc1 channels 4-7: 8 sums in order.
__attribute__((always_inline)) inline __m256i addPairs(__m256i acc0,
                                                       __m256i acc1) {
  __m256i sums = _mm256_hadd_epi32(acc0, acc1); // 0 1 4 5 | 2 3 6 7
  return _mm256_permute4x64_epi64(sums, 0xd8);  // 0 1 2 3 4 5 6 7
}

/// Calls f(first, rows) for the register tiles over rows [0, m): tiles of
/// kRows, except that 1 or 2 rows left at the bottom join the tile above
/// and the 7 or 8 are two tiles (4 + 3, 4 + 4). A 1-row tile does two
/// products per load of B: as slow as a full one, for a sixth of the work.
template <typename F> void eachRowTile(int64_t m, F &&f) {
  int64_t full = m / kRows, left = m % kRows;
  if (full > 0 && left > 0 && left < 3) {
    --full;
    left += kRows;
  }
  for (int64_t t = 0; t < full; ++t)
    f(t * kRows, int64_t(kRows));
  int64_t first = full * kRows;
  if (left > kRows) {
    f(first, (left + 1) / 2);
    f(first + (left + 1) / 2, left / 2);
  } else if (left > 0) {
    f(first, left);
  }
}

/// Rows [0, m) of A widened to 16 bits and interleaved by row tile: the
/// tile of `rows` rows starting at row t holds, from t * stride on, group
/// g of its row r at (g * rows + r) * 4. A tile reads its broadcasts in
/// order, 8 bytes apart, rather than from rows a stride apart (rows whose
/// addresses differ by a multiple of the L1 bank width collide).
void widenRows(const uint8_t *a, int64_t lda, int64_t m, int64_t k,
               int64_t stride, int16_t *out) {
  int64_t groups = stride / 4, fullGroups = k / 4;
  eachRowTile(m, [&](int64_t first, int64_t rows) {
    int16_t *tile = out + first * stride;
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t *src = a + (first + r) * lda;
      int16_t *dst = tile + r * 4;
      int64_t g = 0;
      for (; g + 4 <= fullGroups; g += 4) {
        // 16 bytes = 4 groups, each to its own slot.
        __m256i wide = _mm256_cvtepu8_epi16(
            _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + g * 4)));
        __m128i lo = _mm256_castsi256_si128(wide);
        __m128i hi = _mm256_extracti128_si256(wide, 1);
        _mm_storel_epi64(reinterpret_cast<__m128i *>(dst + g * rows * 4), lo);
        _mm_storeh_pd(reinterpret_cast<double *>(dst + (g + 1) * rows * 4),
                      _mm_castsi128_pd(lo));
        _mm_storel_epi64(reinterpret_cast<__m128i *>(dst + (g + 2) * rows * 4),
                         hi);
        _mm_storeh_pd(reinterpret_cast<double *>(dst + (g + 3) * rows * 4),
                      _mm_castsi128_pd(hi));
      }
      // The rest one group (4 bytes) at a time; past k, zeros.
      for (; g < groups; ++g) {
        uint32_t four = 0;
        if (g * 4 + 4 <= k)
          __builtin_memcpy(&four, src + g * 4, sizeof(four));
        else
          for (int64_t i = 0; g * 4 + i < k; ++i)
            four |= uint32_t(src[g * 4 + i]) << (8 * i);
        _mm_storel_epi64(reinterpret_cast<__m128i *>(dst + g * rows * 4),
                         _mm_cvtepu8_epi16(_mm_cvtsi32_si128(int(four))));
      }
    }
  });
}

/// Rows x 8 channels: `a` at the tile's interleaved rows, `half` at the
/// first of the 2 ymm of B of group 0, groups 32 values apart.
template <int Rows>
__attribute__((always_inline)) inline void
tile(const int16_t *a, const int16_t *half, int64_t groups, int32_t *c,
     int64_t ldc, int64_t channels) {
  __m256i acc[Rows][kQuads];
#pragma GCC unroll 32
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 32
    for (int q = 0; q < kQuads; ++q)
      acc[r][q] = _mm256_setzero_si256();
  for (int64_t g = 0; g < groups; ++g) {
    __m256i w[kQuads];
#pragma GCC unroll 32
    for (int q = 0; q < kQuads; ++q)
      w[q] = _mm256_load_si256(
          reinterpret_cast<const __m256i *>(half + g * 32 + q * 16));
#pragma GCC unroll 32
    for (int r = 0; r < Rows; ++r) {
      int64_t four;
      __builtin_memcpy(&four, a + (g * Rows + r) * 4, sizeof(four));
      __m256i x = _mm256_set1_epi64x(four);
#pragma GCC unroll 32
      for (int q = 0; q < kQuads; ++q)
        acc[r][q] = _mm256_add_epi32(acc[r][q], _mm256_madd_epi16(x, w[q]));
    }
  }
#pragma GCC unroll 32
  for (int r = 0; r < Rows; ++r)
    store8(c + r * ldc, addPairs(acc[r][0], acc[r][1]), channels);
}

} // namespace

void gemm::avx2(const uint8_t *a, int64_t lda, int64_t m, const Panels &b,
                int32_t *c, int64_t ldc, void *scratch) {
  int64_t stride = avx2WidenedStride(b.numGroups);
  int16_t *wide = static_cast<int16_t *>(scratch);
  widenRows(a, lda, m, b.k, stride, wide);
  const int16_t *data = static_cast<const int16_t *>(b.data);
  int64_t panelValues = b.panelBytes / int64_t(sizeof(int16_t));
  for (int64_t p = 0; p < b.numPanels; ++p) {
    for (int64_t h = 0; h < 2; ++h) {
      int64_t channels = b.n - p * 16 - h * 8;
      if (channels <= 0)
        break;
      const int16_t *half = data + p * panelValues + h * b.numGroups * 32;
      int32_t *ch = c + p * 16 + h * 8;
      eachRowTile(m, [&](int64_t row, int64_t rows) {
        withRowCount<kRows>(rows, [&](auto count) {
          tile<decltype(count)::value>(wide + row * stride, half, b.numGroups,
                                       ch + row * ldc, ldc, channels);
        });
      });
    }
  }
}
