//===- GemmAvx512Vnni.cpp - u8 x s8 GEMM with 512-bit vpdpbusd ------------===//
//
// Built with -mavx512f -mavx512bw -mavx512vnni; called only where CPUID says
// the machine has them.
//
// Register tile: up to 8 rows of A x 3 panels (48 output channels), 24 zmm
// accumulators. Per k group (4 values of k): 3 panel loads, one 4-byte
// broadcast per row, 24 vpdpbusd (each 16 channels x 4 products).
//
//===----------------------------------------------------------------------===//

#include "GemmKernels.h"

#include "Intrinsics.h"

using namespace qopt::rt;
using namespace qopt::rt::gemm;

namespace {

constexpr int kRows = 8;
constexpr int kPanels = 3;

template <int Rows, int NumPanels>
__attribute__((always_inline)) inline void
tile(const uint8_t *a, int64_t lda, const int8_t *panel, const Panels &b,
     int32_t *c, int64_t ldc, int64_t channels) {
  __m512i acc[Rows][NumPanels];
#pragma GCC unroll 32
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 32
    for (int p = 0; p < NumPanels; ++p)
      acc[r][p] = _mm512_setzero_si512();
  // One k group: the panels' 64 bytes each, and 4 bytes of each row.
  auto step = [&](int64_t g, auto rowGroup) {
    __m512i w[NumPanels];
#pragma GCC unroll 32
    for (int p = 0; p < NumPanels; ++p)
      w[p] = _mm512_load_si512(panel + p * b.panelBytes + g * 64);
#pragma GCC unroll 32
    for (int r = 0; r < Rows; ++r) {
      __m512i x = _mm512_set1_epi32(rowGroup(a + r * lda, g));
#pragma GCC unroll 32
      for (int p = 0; p < NumPanels; ++p)
        acc[r][p] = _mm512_dpbusd_epi32(acc[r][p], x, w[p]);
    }
  };
  forEachGroup(b, step);
#pragma GCC unroll 32
  for (int p = 0; p < NumPanels; ++p) {
    int64_t left = channels - p * 16;
    __mmask16 mask =
        left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1);
#pragma GCC unroll 32
    for (int r = 0; r < Rows; ++r)
      _mm512_mask_storeu_epi32(c + r * ldc + p * 16, mask, acc[r][p]);
  }
}

template <int Rows>
void tileRows(int numPanels, const uint8_t *a, int64_t lda, const int8_t *panel,
              const Panels &b, int32_t *c, int64_t ldc, int64_t channels) {
  switch (numPanels) {
  case 1:
    return tile<Rows, 1>(a, lda, panel, b, c, ldc, channels);
  case 2:
    return tile<Rows, 2>(a, lda, panel, b, c, ldc, channels);
  default:
    return tile<Rows, 3>(a, lda, panel, b, c, ldc, channels);
  }
}

} // namespace

void gemm::avx512Vnni(const uint8_t *a, int64_t lda, int64_t m, const Panels &b,
                      int32_t *c, int64_t ldc) {
  const int8_t *data = static_cast<const int8_t *>(b.data);
  for (int64_t p0 = 0; p0 < b.numPanels; p0 += kPanels) {
    int numPanels =
        int(b.numPanels - p0 < kPanels ? b.numPanels - p0 : kPanels);
    int64_t channels = b.n - p0 * 16;
    const int8_t *panel = data + p0 * b.panelBytes;
    int32_t *cp = c + p0 * 16;
    int64_t row = 0;
    for (; row + kRows <= m; row += kRows)
      tileRows<kRows>(numPanels, a + row * lda, lda, panel, b, cp + row * ldc,
                      ldc, channels);
    withRowCount<kRows - 1>(m - row, [&](auto rows) {
      tileRows<decltype(rows)::value>(numPanels, a + row * lda, lda, panel, b,
                                      cp + row * ldc, ldc, channels);
    });
  }
}
