//===- Transpose.cpp - Tiles of 4-byte elements: dispatch, edges ----------===//

#include "qopt/Kernels/Transpose.h"
#include "TransposeKernels.h"

using namespace qopt;
using namespace qopt::kernels;

void kernels::transpose32(Isa isa, const uint32_t *in, int64_t inStride,
                          int64_t rows, int64_t cols, uint32_t *out,
                          int64_t outStride) {
  int64_t blockRows = 0, blockCols = 0;
  if (isa != Isa::Scalar) {
    transpose::avx2(in, inStride, rows, cols, out, outStride);
    blockRows = rows / 8 * 8;
    blockCols = cols / 8 * 8;
  }
  // What the blocks left: the last columns of the block rows, then the
  // last rows whole.
  for (int64_t r = 0; r < blockRows; ++r)
    for (int64_t c = blockCols; c < cols; ++c)
      out[c * outStride + r] = in[r * inStride + c];
  for (int64_t r = blockRows; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[c * outStride + r] = in[r * inStride + c];
}
