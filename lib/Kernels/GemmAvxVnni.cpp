//===- GemmAvxVnni.cpp - u8 x s8 GEMM with 256-bit vpdpbusd (AVX-VNNI) ----===//
//
// Built with -mavx2 -mavxvnni; called only where CPUID says the machine has
// AVX-VNNI (the VEX form, on CPUs with or without AVX-512).
//
// Register tile: up to 6 rows of A x 1 panel (16 channels, 2 ymm), 12 ymm
// accumulators. Per k group: 2 panel loads, one 4-byte broadcast per row,
// 12 vpdpbusd (each 8 channels x 4 products). Rows of A in memory or
// gathered from runs (GemmKernels.h), as the avx512vnni family's.
//
//===----------------------------------------------------------------------===//

#include "Avx2Store.h"
#include "GemmKernels.h"

#include "Intrinsics.h"

using namespace qopt::kernels;
using namespace qopt::kernels::gemm;

namespace {

constexpr int kRows = 6;

template <int Rows, typename Source>
__attribute__((always_inline)) inline void
tile(const Source &rows, const int8_t *panel, const Panels &b, int32_t *c,
     int64_t ldc, int64_t channels) {
  __m256i acc[Rows][2];
#pragma GCC unroll 32
  for (int r = 0; r < Rows; ++r)
    acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  // One k group: the panel's 64 bytes, and 4 bytes of each row.
  auto step = [&](int64_t g, auto rowGroup) {
    const __m256i *w = reinterpret_cast<const __m256i *>(panel + g * 64);
    __m256i w0 = _mm256_load_si256(w), w1 = _mm256_load_si256(w + 1);
#pragma GCC unroll 32
    for (int r = 0; r < Rows; ++r) {
      __m256i x = _mm256_set1_epi32(rowGroup(r));
      acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], x, w0);
      acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], x, w1);
    }
  };
  rows.template eachGroup<Rows>(b, step);
#pragma GCC unroll 32
  for (int r = 0; r < Rows; ++r) {
    store8(c + r * ldc, acc[r][0], channels);
    store8(c + r * ldc + 8, acc[r][1], channels - 8);
  }
}

template <typename Source>
void panelTiles(const Source &rows, int64_t m, const Panels &b, int32_t *c,
                int64_t ldc) {
  eachPanelTileOf<kRows>(rows, m, b, c, ldc,
                         [&](auto count, const Source &from, const char *panel,
                             int32_t *cr, int64_t channels) {
                           tile<decltype(count)::value>(
                               from, reinterpret_cast<const int8_t *>(panel), b,
                               cr, ldc, channels);
                         });
}

} // namespace

void gemm::avxVnni(const uint8_t *a, int64_t lda, int64_t m, const Panels &b,
                   int32_t *c, int64_t ldc) {
  panelTiles(DenseRows{a, lda}, m, b, c, ldc);
}

void gemm::avxVnniGathered(const uint8_t *const *runs, int64_t taps,
                           int64_t offset, int64_t m, const Panels &b,
                           int32_t *c, int64_t ldc) {
  panelTiles(GatheredRows{runs, taps, offset}, m, b, c, ldc);
}
