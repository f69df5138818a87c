//===- CopyRunsAvx2.cpp - Many short copies with 32-byte moves ------------===//
//
// Built with -mavx2; called only where CPUID says the machine has it. A run
// of 32 bytes or more is whole 32-byte moves, the last one overlapping the
// one before; shorter ones are two overlapping moves of 16, 8 or 4 bytes,
// or single bytes. The size's case is chosen once for all the runs.
//
//===----------------------------------------------------------------------===//

#include "CopyRunsKernels.h"

#include <immintrin.h>

#include <cstring>

using namespace qopt::kernels;

namespace {

template <typename Chunk>
inline void overlappingPair(uint8_t *dst, const uint8_t *src, int64_t n) {
  Chunk head, tail;
  std::memcpy(&head, src, sizeof(Chunk));
  std::memcpy(&tail, src + n - sizeof(Chunk), sizeof(Chunk));
  std::memcpy(dst, &head, sizeof(Chunk));
  std::memcpy(dst + n - sizeof(Chunk), &tail, sizeof(Chunk));
}

template <typename Copy>
inline void eachRun(uint8_t *dst, int64_t dstStride, const uint8_t *src,
                    int64_t srcStride, int64_t runs, Copy copy) {
  for (int64_t i = 0; i < runs; ++i, dst += dstStride, src += srcStride)
    copy(dst, src);
}

} // namespace

void copyruns::avx2(uint8_t *dst, int64_t dstStride, const uint8_t *src,
                    int64_t srcStride, int64_t bytes, int64_t runs) {
  const int64_t n = bytes;
  if (n >= 32) {
    eachRun(dst, dstStride, src, srcStride, runs,
            [n](uint8_t *to, const uint8_t *from) {
              __m256i last = _mm256_loadu_si256(
                  reinterpret_cast<const __m256i *>(from + n - 32));
              for (int64_t i = 0; i + 32 < n; i += 32)
                _mm256_storeu_si256(
                    reinterpret_cast<__m256i *>(to + i),
                    _mm256_loadu_si256(
                        reinterpret_cast<const __m256i *>(from + i)));
              _mm256_storeu_si256(reinterpret_cast<__m256i *>(to + n - 32),
                                  last);
            });
  } else if (n >= 16) {
    eachRun(dst, dstStride, src, srcStride, runs,
            [n](uint8_t *to, const uint8_t *from) {
              overlappingPair<__m128i>(to, from, n);
            });
  } else if (n >= 8) {
    eachRun(dst, dstStride, src, srcStride, runs,
            [n](uint8_t *to, const uint8_t *from) {
              overlappingPair<uint64_t>(to, from, n);
            });
  } else if (n >= 4) {
    eachRun(dst, dstStride, src, srcStride, runs,
            [n](uint8_t *to, const uint8_t *from) {
              overlappingPair<uint32_t>(to, from, n);
            });
  } else {
    eachRun(dst, dstStride, src, srcStride, runs,
            [n](uint8_t *to, const uint8_t *from) {
              for (int64_t k = 0; k < n; ++k)
                to[k] = from[k];
            });
  }
}
