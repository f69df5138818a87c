//===- Transpose.h - Tiles of 4-byte elements transposed --------*- C++ -*-===//
//
// The plan's reformats between NCHW and NHWC move each image row as a
// transpose: a row of pixels (each its channels) into a row of each
// channel, or back. Every family writes the same bytes; only the order of
// the moves differs.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_KERNELS_TRANSPOSE_H
#define QOPT_KERNELS_TRANSPOSE_H

#include "qopt/Kernels/CpuFeatures.h"

#include <cstdint>

namespace qopt {
namespace kernels {

/// out[c * outStride + r] = in[r * inStride + c] for r < rows, c < cols:
/// 4-byte elements, moved as they are. The two may not overlap.
void transpose32(Isa isa, const uint32_t *in, int64_t inStride, int64_t rows,
                 int64_t cols, uint32_t *out, int64_t outStride);

} // namespace kernels
} // namespace qopt

#endif // QOPT_KERNELS_TRANSPOSE_H
