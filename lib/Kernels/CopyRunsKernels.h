//===- CopyRunsKernels.h - The run-copy family's entry point ----*- C++ -*-===//
//
// Private to lib/Kernels (GemmKernels.h says why the ISA files include
// nothing else).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_COPYRUNSKERNELS_H
#define QOPT_LIB_KERNELS_COPYRUNSKERNELS_H

#include <cstdint>

namespace qopt {
namespace kernels {
namespace copyruns {

/// `runs` runs of `bytes` bytes (at least 1): run i from src + i *
/// srcStride to dst + i * dstStride, the two not overlapping. An int8
/// conv's im2col row: each output pixel's taps along one kernel row.
void avx2(uint8_t *dst, int64_t dstStride, const uint8_t *src,
          int64_t srcStride, int64_t bytes, int64_t runs);

} // namespace copyruns
} // namespace kernels
} // namespace qopt

#endif // QOPT_LIB_KERNELS_COPYRUNSKERNELS_H
