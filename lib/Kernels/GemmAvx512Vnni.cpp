//===- GemmAvx512Vnni.cpp - u8 x s8 GEMM with 512-bit vpdpbusd ------------===//
//
// Built with -mavx512f -mavx512bw -mavx512vnni; called only where CPUID says
// the machine has them.
//
// Register tile: up to 8 rows of A x 3 panels (48 output channels), 24 zmm
// accumulators. Per k group (4 values of k): 3 panel loads, one 4-byte
// broadcast per row, 24 vpdpbusd (each 16 channels x 4 products). Where
// four panels are left, one tile of 6 rows x 4 panels (24 accumulators)
// instead of a 3-panel and a 1-panel one.
//
// Rows of A are either rows in memory (lda apart) or gathered: each row
// a few runs of bytes anywhere, one pointer a run (avx512VnniGathered, an
// indirect GEMM). A conv then reads its input where it lies, a kernel row
// or a tap a run, without an im2col copy: ResNet-18's 3x3 convs in
// qopt-bench-kernels 2-8% faster (56x56x64 257 -> 237 us, 7x7x512 249 ->
// 236 us), the network 4% (AMD EPYC, 1 thread).
//
// A network reads each layer's weights once: they come from memory, not
// from cache. Each panel column's row tiles prefetch the next column's
// panels into L2, spread over the column's row tiles, so that only the
// first column of a call waits for memory (qopt-bench-kernels' conv_cold
// cases, AMD EPYC: ResNet-18's 3x3 convs of 14x14x256 374 -> 319 us and
// 3x3s2 to 512 channels 224 -> 189 us).
//
//===----------------------------------------------------------------------===//

#include "GemmKernels.h"

#include "Intrinsics.h"

using namespace qopt::kernels;
using namespace qopt::kernels::gemm;

namespace {

/// Rows of A per tile for a tile of 1-4 panels. Four panels (a 64-channel
/// layer, which was a 3-panel tile and a 1-panel one) go as one tile of 6
/// rows: 24 accumulators again. llvm-mca's icelake-server model
/// (bench/mca_kernels.py) puts the 8 x 3 and 6 x 4 tiles at 99% of the
/// vpdpbusd bound, 8 x 2 at 88%, 8 x 1 at 58% (a broadcast per
/// vpdpbusd; taller one-panel tiles did no better there).
constexpr int kRowsFor[] = {0, 8, 8, 8, 6};

/// The next panel column's prefetch, spread evenly over a column's row
/// tiles: one k group's lines (one per panel) every `period` k groups of
/// the tiles, `period` being the column's row tile count, so that the
/// column's whole compute time covers the next one's memory reads.
struct NextColumn {
  const int8_t *panel = nullptr;
  int64_t numPanels = 0;
  int64_t period = 1;
  int64_t countdown = 1;
  int64_t group = 0;

  void step(const Panels &b) {
    if (--countdown)
      return;
    countdown = period;
    if (group >= b.numGroups)
      return;
    for (int64_t p = 0; p < numPanels; ++p)
      __builtin_prefetch(panel + p * b.panelBytes + group * 64, 0, 2);
    ++group;
  }
};

template <int Rows, int NumPanels, typename Source>
__attribute__((always_inline)) inline void
tile(const Source &rows, const int8_t *panel, const Panels &b, int32_t *c,
     int64_t ldc, int64_t channels, NextColumn &next) {
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
    next.step(b);
#pragma GCC unroll 32
    for (int r = 0; r < Rows; ++r) {
      __m512i x = _mm512_set1_epi32(rowGroup(r));
#pragma GCC unroll 32
      for (int p = 0; p < NumPanels; ++p)
        acc[r][p] = _mm512_dpbusd_epi32(acc[r][p], x, w[p]);
    }
  };
  rows.template eachGroup<Rows>(b, step);
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

/// Tiles of NumPanels down rows [0, m) of A: as few as kRows rows a tile
/// allow, their heights differing by one at most. A short tile left at the
/// bottom waits on its accumulators' latency: with 8-row tiles, a 7x7
/// layer's 49 rows ended in a one-row tile, about 5% of the layer.
template <int NumPanels, typename Source>
void panelColumn(const Source &rows, int64_t m, const int8_t *panel,
                 const Panels &b, int32_t *c, int64_t ldc, int64_t channels,
                 NextColumn next) {
  constexpr int kRows = kRowsFor[NumPanels];
  int64_t tiles = (m + kRows - 1) / kRows;
  int64_t base = m / tiles, taller = m % tiles; // tiles of base + 1 rows
  next.period = tiles;
  next.countdown = 1;
  int64_t row = 0;
  for (int64_t t = 0; t < tiles; ++t) {
    int64_t height = t < taller ? base + 1 : base;
    if (height == kRows)
      tile<kRows, NumPanels>(rows.from(row), panel, b, c + row * ldc, ldc,
                             channels, next);
    else
      withRowCount<kRows - 1>(height, [&](auto count) {
        tile<decltype(count)::value, NumPanels>(
            rows.from(row), panel, b, c + row * ldc, ldc, channels, next);
      });
    row += height;
  }
}

/// C = A * B^T, panel column by panel column.
template <typename Source>
void columns(const Source &rows, int64_t m, const Panels &b, int32_t *c,
             int64_t ldc) {
  const int8_t *data = static_cast<const int8_t *>(b.data);
  // Three panels at a time, or four, so that no column of one or two
  // panels is left over unless there are only one, two or five: four when
  // four are left, and first when the count leaves two past a multiple of
  // three (8 = 4 + 4, 32 = 4 + 3 * 8 + 4; 8 x 2 tiles run at 88% of the
  // vpdpbusd bound, bench/mca_kernels.py).
  auto columnWidth = [&](int64_t p0) -> int64_t {
    int64_t left = b.numPanels - p0;
    if (left <= 3)
      return left;
    return left == 4 || (left % 3 == 2 && left >= 8) ? 4 : 3;
  };
  for (int64_t p0 = 0; p0 < b.numPanels;) {
    int64_t numPanels = columnWidth(p0);
    int64_t channels = b.n - p0 * 16;
    const int8_t *panel = data + p0 * b.panelBytes;
    int32_t *cp = c + p0 * 16;
    NextColumn next;
    if (p0 + numPanels < b.numPanels) {
      next.panel = panel + numPanels * b.panelBytes;
      next.numPanels = columnWidth(p0 + numPanels);
    }
    switch (numPanels) {
    case 1:
      panelColumn<1>(rows, m, panel, b, cp, ldc, channels, next);
      break;
    case 2:
      panelColumn<2>(rows, m, panel, b, cp, ldc, channels, next);
      break;
    case 3:
      panelColumn<3>(rows, m, panel, b, cp, ldc, channels, next);
      break;
    default:
      panelColumn<4>(rows, m, panel, b, cp, ldc, channels, next);
      break;
    }
    p0 += numPanels;
  }
}

} // namespace

void gemm::avx512Vnni(const uint8_t *a, int64_t lda, int64_t m, const Panels &b,
                      int32_t *c, int64_t ldc) {
  columns(DenseRows{a, lda}, m, b, c, ldc);
}

void gemm::avx512VnniGathered(const uint8_t *const *runs, int64_t taps,
                              int64_t offset, int64_t m, const Panels &b,
                              int32_t *c, int64_t ldc) {
  columns(GatheredRows{runs, taps, offset}, m, b, c, ldc);
}
