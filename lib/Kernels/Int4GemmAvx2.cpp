//===- Int4GemmAvx2.cpp - Weight-only 4-bit GEMM, AVX2 and FMA ------------===//
//
// Built with -mavx2 -mfma -ffp-contract=off; called only where CPUID finds
// them. Int4GemmAvx512.cpp's structure at eight lanes: a panel's 32 columns
// are four vectors; one or two rows read the codes directly, more make 256
// rows of the panel's weights f32 in the scratch at a time and run tiles
// of two rows by 32 columns over them. The weights are float(q) - float(z)
// times the scale and each output the fma chain over k in order: the
// scalar kernel's bits.
//
//===----------------------------------------------------------------------===//

#include "Int4GemmKernels.h"

#include <algorithm>
#include <immintrin.h>

using namespace qopt;
using namespace qopt::kernels;

namespace {

template <bool Signed> __m256i lowCodes(__m256i bytes) {
  if (Signed)
    return _mm256_srai_epi32(_mm256_slli_epi32(bytes, 28), 28);
  return _mm256_and_si256(bytes, _mm256_set1_epi32(0x0F));
}
template <bool Signed> __m256i highCodes(__m256i bytes) {
  if (Signed)
    return _mm256_srai_epi32(_mm256_slli_epi32(bytes, 24), 28);
  return _mm256_srli_epi32(bytes, 4);
}

struct PanelGrid {
  __m256 scale[4];
  __m256 zero[4];
  void load(const Int4Weights &w, int64_t panel, int64_t block) {
    int64_t at = block * w.paddedColumns() + panel * kInt4PanelColumns;
    for (int h = 0; h < 4; ++h) {
      scale[h] = _mm256_loadu_ps(w.scales.data() + at + 8 * h);
      zero[h] = _mm256_cvtepi32_ps(_mm256_loadu_si256(
          reinterpret_cast<const __m256i *>(w.zeros.data() + at + 8 * h)));
    }
  }
};

/// Rows 2i (w[0..3]) and 2i + 1 (w[4..7]) of the panel's weights.
template <bool Signed, bool Zeros>
inline void weightPair(const uint8_t *row, const PanelGrid &g, __m256 w[8]) {
  for (int h = 0; h < 4; ++h) {
    __m256i bytes = _mm256_cvtepu8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i *>(row + 8 * h)));
    __m256 low = _mm256_cvtepi32_ps(lowCodes<Signed>(bytes));
    __m256 high = _mm256_cvtepi32_ps(highCodes<Signed>(bytes));
    if (Zeros) {
      low = _mm256_sub_ps(low, g.zero[h]);
      high = _mm256_sub_ps(high, g.zero[h]);
    }
    w[h] = _mm256_mul_ps(low, g.scale[h]);
    w[4 + h] = _mm256_mul_ps(high, g.scale[h]);
  }
}

inline void storeRow(float *y, const __m256 acc[4], int64_t valid) {
  for (int h = 0; h < 4; ++h) {
    int64_t count = valid - 8 * h;
    if (count >= 8) {
      _mm256_storeu_ps(y + 8 * h, acc[h]);
    } else if (count > 0) {
      __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
      __m256i mask =
          _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(count)), lanes);
      _mm256_maskstore_ps(y + 8 * h, mask, acc[h]);
    }
  }
}

template <int R, bool Signed, bool Zeros>
void directRows(const float *x, const Int4Weights &w, int64_t panel, float *y) {
  const int64_t k = w.k;
  const uint8_t *codes =
      w.codes.data() + panel * w.rowPairs() * kInt4PanelColumns;
  __m256 acc[R][4];
  for (int r = 0; r < R; ++r)
    for (int h = 0; h < 4; ++h)
      acc[r][h] = _mm256_setzero_ps();
  PanelGrid g;
  int64_t nextBlock = 0, block = 0;
  for (int64_t p = 0; p < k; p += 2) {
    if (p >= nextBlock) {
      g.load(w, panel, block);
      nextBlock = ++block * w.block;
    }
    __m256 wt[8];
    weightPair<Signed, Zeros>(codes + (p / 2) * kInt4PanelColumns, g, wt);
    for (int r = 0; r < R; ++r) {
      __m256 a = _mm256_set1_ps(x[r * k + p]);
      for (int h = 0; h < 4; ++h)
        acc[r][h] = _mm256_fmadd_ps(a, wt[h], acc[r][h]);
    }
    if (p + 1 < k)
      for (int r = 0; r < R; ++r) {
        __m256 a = _mm256_set1_ps(x[r * k + p + 1]);
        for (int h = 0; h < 4; ++h)
          acc[r][h] = _mm256_fmadd_ps(a, wt[4 + h], acc[r][h]);
      }
  }
  int64_t valid = w.n - panel * kInt4PanelColumns;
  for (int r = 0; r < R; ++r)
    storeRow(y + r * w.n + panel * kInt4PanelColumns, acc[r], valid);
}

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
    __m256 wt[8];
    weightPair<Signed, Zeros>(codes + (p / 2) * kInt4PanelColumns, g, wt);
    float *row = panelWeights + (p - p0) * kInt4PanelColumns;
    for (int h = 0; h < 8; ++h)
      _mm256_storeu_ps(row + 8 * h, wt[h]);
  }
}

/// R (1 or 2) rows by the panel's 32 columns over weight rows [p0, p1),
/// the sums carried in y between slices.
template <int R>
void tileRows(const float *x, const Int4Weights &w, const float *panelWeights,
              int64_t panel, int64_t p0, int64_t p1, float *y) {
  const int64_t k = w.k;
  int64_t valid = w.n - panel * kInt4PanelColumns;
  float *yp = y + panel * kInt4PanelColumns;
  __m256 acc[R][4];
  for (int r = 0; r < R; ++r)
    for (int h = 0; h < 4; ++h) {
      acc[r][h] = _mm256_setzero_ps();
      if (p0 == 0)
        continue;
      int64_t count = valid - 8 * h;
      __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
      __m256i mask = _mm256_cmpgt_epi32(
          _mm256_set1_epi32(
              int32_t(std::max<int64_t>(0, std::min<int64_t>(count, 8)))),
          lanes);
      acc[r][h] = _mm256_maskload_ps(yp + r * w.n + 8 * h, mask);
    }
  for (int64_t p = p0; p < p1; ++p) {
    const float *row = panelWeights + (p - p0) * kInt4PanelColumns;
    __m256 wt[4];
    for (int h = 0; h < 4; ++h)
      wt[h] = _mm256_loadu_ps(row + 8 * h);
    for (int r = 0; r < R; ++r) {
      __m256 a = _mm256_set1_ps(x[r * k + p]);
      for (int h = 0; h < 4; ++h)
        acc[r][h] = _mm256_fmadd_ps(a, wt[h], acc[r][h]);
    }
  }
  for (int r = 0; r < R; ++r)
    storeRow(yp + r * w.n, acc[r], valid);
}

constexpr int64_t kDepth = 256;

template <bool Signed, bool Zeros>
void run(const float *x, int64_t rows, const Int4Weights &w, int64_t panelBegin,
         int64_t panelEnd, float *y, float *scratch) {
  for (int64_t panel = panelBegin; panel < panelEnd; ++panel) {
    if (rows > kInt4DirectRows) {
      for (int64_t p0 = 0; p0 < w.k; p0 += kDepth) {
        int64_t p1 = std::min(w.k, p0 + kDepth);
        dequantizePanel<Signed, Zeros>(w, panel, p0, p1, scratch);
        int64_t r = 0;
        for (; r + 2 <= rows; r += 2)
          tileRows<2>(x + r * w.k, w, scratch, panel, p0, p1, y + r * w.n);
        if (r < rows)
          tileRows<1>(x + r * w.k, w, scratch, panel, p0, p1, y + r * w.n);
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

void kernels::int4GemmAvx2(const float *x, int64_t rows, const Int4Weights &w,
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
