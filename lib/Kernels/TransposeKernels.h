//===- TransposeKernels.h - The transpose family's entry point -*- C++ -*-===//
//
// Private to lib/Kernels (GemmKernels.h says why the ISA files include
// nothing else).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_TRANSPOSEKERNELS_H
#define QOPT_LIB_KERNELS_TRANSPOSEKERNELS_H

#include <cstdint>

namespace qopt {
namespace kernels {
namespace transpose {

/// Transpose.h's transpose32 on whole blocks of 8 x 8 elements: rows and
/// cols rounded down to multiples of 8; the caller moves the rest.
void avx2(const uint32_t *in, int64_t inStride, int64_t rows, int64_t cols,
          uint32_t *out, int64_t outStride);

} // namespace transpose
} // namespace kernels
} // namespace qopt

#endif // QOPT_LIB_KERNELS_TRANSPOSEKERNELS_H
