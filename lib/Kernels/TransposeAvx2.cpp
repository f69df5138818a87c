//===- TransposeAvx2.cpp - 8 x 8 blocks of 4-byte elements transposed -----===//
//
// Built with -mavx2; called only where CPUID says the machine has it. Each
// block: eight rows of eight elements loaded, interleaved in three rounds
// (unpack 32-bit, unpack 64-bit, swap 128-bit halves), stored as eight
// columns. The elements move as bits: floats, NaNs included, are not
// touched.
//
//===----------------------------------------------------------------------===//

#include "TransposeKernels.h"

#include <immintrin.h>

using namespace qopt::kernels;

void transpose::avx2(const uint32_t *in, int64_t inStride, int64_t rows,
                     int64_t cols, uint32_t *out, int64_t outStride) {
  for (int64_t r = 0; r + 8 <= rows; r += 8)
    for (int64_t c = 0; c + 8 <= cols; c += 8) {
      const uint32_t *from = in + r * inStride + c;
      __m256 v[8];
      for (int i = 0; i < 8; ++i)
        v[i] = _mm256_castsi256_ps(_mm256_loadu_si256(
            reinterpret_cast<const __m256i *>(from + i * inStride)));
      __m256 t[8], u[8];
      for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(v[i], v[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(v[i], v[i + 1]);
      }
      for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
      }
      uint32_t *to = out + c * outStride + r;
      for (int i = 0; i < 4; ++i) {
        __m256 low = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        __m256 high = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(to + i * outStride),
                            _mm256_castps_si256(low));
        _mm256_storeu_si256(
            reinterpret_cast<__m256i *>(to + (i + 4) * outStride),
            _mm256_castps_si256(high));
      }
    }
}
