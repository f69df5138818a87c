//===- Int4GemmAvx512.cpp - Weight-only 4-bit GEMM, AVX-512F --------------===//
//
// Built with -mavx512f -ffp-contract=off; called only where CPUID finds it.
//
// A panel's 32 columns are two vectors. Each row pair of codes (32 bytes:
// k in the low nibbles, k + 1 in the high ones) becomes four vectors of
// weights, float(q - z) * s as the DequantizeLinear computes them (a
// nibble's float by vpermps from a table of the 16 codes, minus the zero
// point's where there are any, times the scale):
//  - one or two rows (decode) read the codes directly, one fma per weight
//    and row: the chain over k is the cost, so two rows share each
//    dequantized pair;
//  - more rows make 256 rows of the panel's weights f32 in the scratch (32
//    KiB, in L1) at a time and run tiles of six rows by 32 columns (twelve
//    accumulators) over them, the sums carried in y between the slices.
// Both are fma(x, w, acc) over k in order from 0: the scalar kernel's bits.
//
//===----------------------------------------------------------------------===//

#include "Int4GemmKernels.h"

#include <algorithm>
#include <immintrin.h>

using namespace qopt;
using namespace qopt::kernels;

namespace {

/// float(code) by a nibble's value: i4's -8..7 or u4's 0..15 (vpermps reads
/// the low four bits of each index, so a byte's low nibble needs no mask).
template <bool Signed> __m512 codeValues() {
  if (Signed)
    return _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2,
                          -1);
  return _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

/// One block's grid for the panel's 32 columns (zero points as floats:
/// float(q) - float(z) is float(q - z), both small integers).
struct PanelGrid {
  __m512 scale[2];
  __m512 zero[2];
  void load(const Int4Weights &w, int64_t panel, int64_t block) {
    int64_t at = block * w.paddedColumns() + panel * kInt4PanelColumns;
    for (int h = 0; h < 2; ++h) {
      scale[h] = _mm512_loadu_ps(w.scales.data() + at + 16 * h);
      zero[h] =
          _mm512_cvtepi32_ps(_mm512_loadu_si512(w.zeros.data() + at + 16 * h));
    }
  }
};

/// The weights of rows 2i (w[0], w[1]) and 2i + 1 (w[2], w[3]):
/// (float(q) - float(z)) * s, float(q - z) * s as the DequantizeLinear
/// makes it.
template <bool Signed, bool Zeros>
inline void weightPair(const uint8_t *row, const PanelGrid &g, __m512 w[4]) {
  const __m512 values = codeValues<Signed>();
  for (int h = 0; h < 2; ++h) {
    __m512i bytes = _mm512_cvtepu8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(row + 16 * h)));
    __m512 low = _mm512_permutexvar_ps(bytes, values);
    __m512 high = _mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), values);
    if (Zeros) {
      low = _mm512_sub_ps(low, g.zero[h]);
      high = _mm512_sub_ps(high, g.zero[h]);
    }
    w[h] = _mm512_mul_ps(low, g.scale[h]);
    w[2 + h] = _mm512_mul_ps(high, g.scale[h]);
  }
}

/// Stores a row's 32 results, the columns past n left out.
inline void storeRow(float *y, const __m512 acc[2], int64_t valid) {
  for (int h = 0; h < 2; ++h) {
    int64_t count = valid - 16 * h;
    if (count >= 16)
      _mm512_storeu_ps(y + 16 * h, acc[h]);
    else if (count > 0)
      _mm512_mask_storeu_ps(y + 16 * h, __mmask16((1u << count) - 1), acc[h]);
  }
}

/// R (1 or 2) rows of one panel, reading the codes directly.
template <int R, bool Signed, bool Zeros>
void directRows(const float *x, const Int4Weights &w, int64_t panel, float *y) {
  const int64_t k = w.k;
  const uint8_t *codes =
      w.codes.data() + panel * w.rowPairs() * kInt4PanelColumns;
  __m512 acc[R][2];
  for (int r = 0; r < R; ++r)
    acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  PanelGrid g;
  int64_t nextBlock = 0, block = 0;
  for (int64_t p = 0; p < k; p += 2) {
    if (p >= nextBlock) {
      g.load(w, panel, block);
      nextBlock = ++block * w.block;
    }
    __m512 wt[4];
    weightPair<Signed, Zeros>(codes + (p / 2) * kInt4PanelColumns, g, wt);
    for (int r = 0; r < R; ++r) {
      __m512 a = _mm512_set1_ps(x[r * k + p]);
      acc[r][0] = _mm512_fmadd_ps(a, wt[0], acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, wt[1], acc[r][1]);
    }
    if (p + 1 < k)
      for (int r = 0; r < R; ++r) {
        __m512 a = _mm512_set1_ps(x[r * k + p + 1]);
        acc[r][0] = _mm512_fmadd_ps(a, wt[2], acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(a, wt[3], acc[r][1]);
      }
  }
  int64_t valid = w.n - panel * kInt4PanelColumns;
  for (int r = 0; r < R; ++r)
    storeRow(y + r * w.n + panel * kInt4PanelColumns, acc[r], valid);
}

/// Rows [p0, p1) of the panel's weights (p0 even) as f32 rows of 32 in
/// `panelWeights` (row p0 first).
template <bool Signed, bool Zeros>
void dequantizePanel(const Int4Weights &w, int64_t panel, int64_t p0,
                     int64_t p1, float *panelWeights) {
  const uint8_t *codes =
      w.codes.data() + panel * w.rowPairs() * kInt4PanelColumns;
  PanelGrid g;
  int64_t block = p0 / w.block, nextBlock = p0;
  for (int64_t p = p0; p < p1; p += 2) {
    if (p >= nextBlock) {
      g.load(w, panel, block);
      nextBlock = ++block * w.block;
    }
    __m512 wt[4];
    weightPair<Signed, Zeros>(codes + (p / 2) * kInt4PanelColumns, g, wt);
    float *row = panelWeights + (p - p0) * kInt4PanelColumns;
    _mm512_storeu_ps(row, wt[0]);
    _mm512_storeu_ps(row + 16, wt[1]);
    _mm512_storeu_ps(row + 32, wt[2]);
    _mm512_storeu_ps(row + 48, wt[3]);
  }
}

/// R rows by the panel's 32 columns over weight rows [p0, p1): the sums
/// start at 0 (p0 == 0) or at what y holds, and end in y. Splitting k so
/// keeps each output's chain of fma in k order.
template <int R>
void tileRows(const float *x, const Int4Weights &w, const float *panelWeights,
              int64_t panel, int64_t p0, int64_t p1, float *y) {
  const int64_t k = w.k;
  int64_t valid = w.n - panel * kInt4PanelColumns;
  float *yp = y + panel * kInt4PanelColumns;
  __m512 acc[R][2];
  for (int r = 0; r < R; ++r)
    for (int h = 0; h < 2; ++h) {
      int64_t count = valid - 16 * h;
      __mmask16 mask = count >= 16 ? __mmask16(0xFFFF)
                       : count > 0 ? __mmask16((1u << count) - 1)
                                   : __mmask16(0);
      acc[r][h] = p0 == 0 ? _mm512_setzero_ps()
                          : _mm512_maskz_loadu_ps(mask, yp + r * w.n + 16 * h);
    }
  for (int64_t p = p0; p < p1; ++p) {
    const float *row = panelWeights + (p - p0) * kInt4PanelColumns;
    __m512 w0 = _mm512_loadu_ps(row);
    __m512 w1 = _mm512_loadu_ps(row + 16);
    for (int r = 0; r < R; ++r) {
      __m512 a = _mm512_set1_ps(x[r * k + p]);
      acc[r][0] = _mm512_fmadd_ps(a, w0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, w1, acc[r][1]);
    }
  }
  for (int r = 0; r < R; ++r)
    storeRow(yp + r * w.n, acc[r], valid);
}

constexpr int kTileRows = 6;
/// Weight rows made f32 at a time: 256 x 32 floats, 32 KiB (L1).
constexpr int64_t kDepth = 256;

void tiledRows(const float *x, int64_t rows, const Int4Weights &w,
               const float *panelWeights, int64_t panel, int64_t p0, int64_t p1,
               float *y) {
  int64_t r = 0;
  for (; r + kTileRows <= rows; r += kTileRows)
    tileRows<kTileRows>(x + r * w.k, w, panelWeights, panel, p0, p1,
                        y + r * w.n);
  const float *xr = x + r * w.k;
  float *yr = y + r * w.n;
  switch (rows - r) {
  case 5:
    return tileRows<5>(xr, w, panelWeights, panel, p0, p1, yr);
  case 4:
    return tileRows<4>(xr, w, panelWeights, panel, p0, p1, yr);
  case 3:
    return tileRows<3>(xr, w, panelWeights, panel, p0, p1, yr);
  case 2:
    return tileRows<2>(xr, w, panelWeights, panel, p0, p1, yr);
  case 1:
    return tileRows<1>(xr, w, panelWeights, panel, p0, p1, yr);
  default:
    return;
  }
}

template <bool Signed, bool Zeros>
void run(const float *x, int64_t rows, const Int4Weights &w, int64_t panelBegin,
         int64_t panelEnd, float *y, float *scratch) {
  for (int64_t panel = panelBegin; panel < panelEnd; ++panel) {
    if (rows > kInt4DirectRows) {
      for (int64_t p0 = 0; p0 < w.k; p0 += kDepth) {
        int64_t p1 = std::min(w.k, p0 + kDepth);
        dequantizePanel<Signed, Zeros>(w, panel, p0, p1, scratch);
        tiledRows(x, rows, w, scratch, panel, p0, p1, y);
      }
      continue;
    }
    if (rows == 2)
      directRows<2, Signed, Zeros>(x, w, panel, y);
    else if (rows == 1)
      directRows<1, Signed, Zeros>(x, w, panel, y);
  }
}

} // namespace

void kernels::int4GemmAvx512(const float *x, int64_t rows, const Int4Weights &w,
                             int64_t panelBegin, int64_t panelEnd, float *y,
                             float *scratch) {
  if (w.isSigned && w.hasZeros)
    run<true, true>(x, rows, w, panelBegin, panelEnd, y, scratch);
  else if (w.isSigned)
    run<true, false>(x, rows, w, panelBegin, panelEnd, y, scratch);
  else if (w.hasZeros)
    run<false, true>(x, rows, w, panelBegin, panelEnd, y, scratch);
  else
    run<false, false>(x, rows, w, panelBegin, panelEnd, y, scratch);
}
