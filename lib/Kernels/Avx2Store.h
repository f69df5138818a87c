//===- Avx2Store.h - Storing 8 int32 lanes, the last few masked -*- C++ -*-===//
//
// For the files built with -mavx2 only (GemmKernels.h says why): static, so
// each of them keeps its own copy.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_AVX2STORE_H
#define QOPT_LIB_KERNELS_AVX2STORE_H

#include "Intrinsics.h"
#include <cstdint>

/// Stores the first `count` lanes of v (all 8 if count >= 8, none if <= 0).
static inline __attribute__((always_inline)) void
store8(int32_t *dst, __m256i v, int64_t count) {
  if (count >= 8) {
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst), v);
    return;
  }
  if (count <= 0)
    return;
  __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(count)), lanes);
  _mm256_maskstore_epi32(dst, mask, v);
}

#endif // QOPT_LIB_KERNELS_AVX2STORE_H
