//===- Int4DotGemmAvx512Vnni.cpp - int4 x int8 GEMM, AVX-512 VNNI ---------===//
//
// Built with -mavx512f -mavx512bw -mavx512vnni -ffp-contract=off; called
// only where CPUID finds them.
//
// A panel's 32 columns are two vectors of int32 sums. Each group of 4 rows
// of K is 64 bytes of codes: their low nibbles are columns 0-15, their high
// nibbles 16-31, each in vpdpbusd's order (four consecutive k of a column
// in a dword), so unpacking is one and, one shift and one and for 128
// weights. Every row of a tile broadcasts its 4 int8 values of the group
// and adds 64 products per vpdpbusd (the codes, 0..15, are its unsigned
// operand). At a segment's end the sums become float as the scalar kernel
// makes them: fma(-z', sum xq, dot), then fma with s * sx into y's
// registers. Integer sums are exact in any order; the float steps are in
// segment order, so the bits are the scalar kernel's.
//
//===----------------------------------------------------------------------===//

#include "Int4DotGemmKernels.h"

#include <algorithm>
#include <cstring>
#include <immintrin.h>

using namespace qopt;
using namespace qopt::kernels;

namespace {

inline __m512i broadcastGroup(const int8_t *q) {
  int32_t v;
  std::memcpy(&v, q, sizeof v);
  return _mm512_set1_epi32(v);
}

/// R rows (a tile) by one panel, over every segment.
template <int R, bool Zeros>
void tile(const QuantizedRows &x, const Int4DotWeights &w, int64_t panel,
          const int8_t *rows, const float *terms, float *y) {
  const int64_t groups = w.numGroups(), segments = w.numSegments();
  const uint8_t *codes = w.codes.data() + panel * groups * 64;
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  __m512 out[R][2];
  for (int r = 0; r < R; ++r)
    out[r][0] = out[r][1] = _mm512_setzero_ps();
  for (int64_t s = 0; s < segments; ++s) {
    int64_t g0 = s * w.segment / 4;
    int64_t g1 = std::min(groups, (s + 1) * w.segment / 4);
    __m512i acc[R][2];
    for (int r = 0; r < R; ++r)
      acc[r][0] = acc[r][1] = _mm512_setzero_si512();
    for (int64_t g = g0; g < g1; ++g) {
      __m512i v = _mm512_loadu_si512(codes + g * 64);
      __m512i low = _mm512_and_si512(v, nibble);
      __m512i high = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
      for (int r = 0; r < R; ++r) {
        __m512i a = broadcastGroup(rows + r * x.stride + g * 4);
        acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], low, a);
        acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], high, a);
      }
    }
    int64_t at = w.gridIndex(panel, w.blockOfSegment(s));
    __m512 scale[2], zero[2];
    for (int h = 0; h < 2; ++h) {
      scale[h] = _mm512_loadu_ps(w.scales.data() + at + 16 * h);
      zero[h] = Zeros ? _mm512_loadu_ps(w.zeros.data() + at + 16 * h)
                      : _mm512_set1_ps(8.0f); // int4 without zero points
    }
    for (int r = 0; r < R; ++r) {
      const float *t = terms + (r * segments + s) * 2;
      __m512 sx = _mm512_set1_ps(t[0]), sum = _mm512_set1_ps(t[1]);
      for (int h = 0; h < 2; ++h) {
        __m512 integral =
            _mm512_fnmadd_ps(zero[h], sum, _mm512_cvtepi32_ps(acc[r][h]));
        out[r][h] =
            _mm512_fmadd_ps(integral, _mm512_mul_ps(scale[h], sx), out[r][h]);
      }
    }
  }
  int64_t valid = w.n - panel * kInt4PanelColumns;
  for (int r = 0; r < R; ++r)
    for (int h = 0; h < 2; ++h) {
      int64_t count = valid - 16 * h;
      float *to = y + r * w.n + panel * kInt4PanelColumns + 16 * h;
      if (count >= 16)
        _mm512_storeu_ps(to, out[r][h]);
      else if (count > 0)
        _mm512_mask_storeu_ps(to, __mmask16((1u << count) - 1), out[r][h]);
    }
}

constexpr int kTileRows = 6;

template <bool Zeros>
void run(const QuantizedRows &x, int64_t rows, const Int4DotWeights &w,
         int64_t panelBegin, int64_t panelEnd, float *y) {
  using Tile = void (*)(const QuantizedRows &, const Int4DotWeights &, int64_t,
                        const int8_t *, const float *, float *);
  // The tile of 1 to kTileRows rows.
  static constexpr Tile kTiles[kTileRows + 1] = {
      nullptr,        tile<1, Zeros>, tile<2, Zeros>, tile<3, Zeros>,
      tile<4, Zeros>, tile<5, Zeros>, tile<6, Zeros>};
  const int64_t segments = w.numSegments();
  for (int64_t panel = panelBegin; panel < panelEnd; ++panel)
    for (int64_t r = 0; r < rows; r += kTileRows)
      kTiles[std::min<int64_t>(kTileRows, rows - r)](
          x, w, panel, x.values + r * x.stride,
          x.segmentTerms + r * segments * 2, y + r * w.n);
}

} // namespace

void kernels::int4DotGemmAvx512Vnni(const QuantizedRows &x, int64_t rows,
                                    const Int4DotWeights &w, int64_t panelBegin,
                                    int64_t panelEnd, float *y) {
  // An int4 weight without zero points has z' 8 everywhere (the scalar
  // kernel reads the same 8 from w.zeros); the others read theirs.
  if (w.isSigned && !w.hasZeros)
    run<false>(x, rows, w, panelBegin, panelEnd, y);
  else
    run<true>(x, rows, w, panelBegin, panelEnd, y);
}
