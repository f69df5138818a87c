//===- GemmScalar.cpp - The portable u8 x s8 GEMM (int8 panel layout) -----===//
//
// The reference the other families are tested against, and the path for
// machines without AVX2.
//
//===----------------------------------------------------------------------===//

#include "GemmKernels.h"

using namespace qopt::kernels;

void gemm::scalar(const uint8_t *a, int64_t lda, int64_t m, const Panels &b,
                  int32_t *c, int64_t ldc) {
  for (int64_t p = 0; p < b.numPanels; ++p) {
    const int8_t *panel =
        static_cast<const int8_t *>(b.data) + p * b.panelBytes;
    int64_t channels = b.n - p * 16 < 16 ? b.n - p * 16 : 16;
    for (int64_t row = 0; row < m; ++row) {
      const uint8_t *arow = a + row * lda;
      int32_t acc[16] = {};
      for (int64_t g = 0; g < b.numGroups; ++g) {
        uint32_t group = loadGroup(arow, g, b.k);
        const int8_t *w = panel + g * 64;
        for (int ch = 0; ch < 16; ++ch)
          for (int j = 0; j < 4; ++j)
            acc[ch] += int32_t((group >> (8 * j)) & 0xff) * w[ch * 4 + j];
      }
      for (int64_t ch = 0; ch < channels; ++ch)
        c[row * ldc + p * 16 + ch] = acc[ch];
    }
  }
}
