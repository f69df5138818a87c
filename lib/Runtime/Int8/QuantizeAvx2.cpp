//===- QuantizeAvx2.cpp - f32 -> int8 bytes, 8 at a time ------------------===//
//
// Built with -mavx2; called only where CPUID says the machine has it.
//
//   r = roundps(x / scale, nearest even)     the scalar nearbyintf(x / scale)
//   r = min(max(r, lowest - zero), highest - zero) + zero
//
// Clamping before adding the zero point keeps every sum an exact small
// integer, so the float sum equals the reference's double one wherever it
// does not saturate, and saturates where it does. NaN lanes become 0.
//
//===----------------------------------------------------------------------===//

#include "QuantizeKernels.h"

#include <immintrin.h>

using namespace qopt::rt;

namespace {

/// The grid's constants, splat once.
struct GridLanes {
  explicit GridLanes(const quantize::Grid &grid)
      : scale(_mm256_set1_ps(grid.scale)),
        zero(_mm256_set1_ps(float(grid.zero))),
        low(_mm256_set1_ps(float(grid.lowest - grid.zero))),
        high(_mm256_set1_ps(float(grid.highest - grid.zero))),
        flip(_mm_set1_epi8(char(grid.flip))), isSigned(grid.lowest < 0) {}
  __m256 scale, zero, low, high;
  __m128i flip;
  bool isSigned;
};

/// Eight floats onto the grid: their bytes in the low half.
inline __m128i quantize8(const GridLanes &g, __m256 x) {
  __m256 r = _mm256_round_ps(_mm256_div_ps(x, g.scale),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 isNan = _mm256_cmp_ps(r, r, _CMP_UNORD_Q);
  r = _mm256_add_ps(_mm256_min_ps(_mm256_max_ps(r, g.low), g.high), g.zero);
  __m256i q = _mm256_cvtps_epi32(_mm256_andnot_ps(isNan, r));
  __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(q),
                                  _mm256_extracti128_si256(q, 1));
  __m128i bytes = g.isSigned ? _mm_packs_epi16(words, words)
                             : _mm_packus_epi16(words, words);
  return _mm_xor_si128(bytes, g.flip);
}

} // namespace

void quantize::avx2(const float *x, int64_t xStride, int64_t count,
                    int64_t runs, const Grid &grid, uint8_t *out,
                    int64_t outStride) {
  GridLanes g(grid);
  int64_t tail = count % 8;
  // The last 1-7 elements of a run: a masked load, the same arithmetic,
  // their bytes stored alone.
  __m256i tailMask =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(tail)),
                         _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (int64_t run = 0; run < runs; ++run, x += xStride, out += outStride) {
    int64_t i = 0;
    for (; i + 8 <= count; i += 8)
      _mm_storel_epi64(reinterpret_cast<__m128i *>(out + i),
                       quantize8(g, _mm256_loadu_ps(x + i)));
    if (tail) {
      alignas(16) uint8_t bytes[16];
      _mm_store_si128(reinterpret_cast<__m128i *>(bytes),
                      quantize8(g, _mm256_maskload_ps(x + i, tailMask)));
      for (int64_t k = 0; k < tail; ++k)
        out[i + k] = bytes[k];
    }
  }
}
