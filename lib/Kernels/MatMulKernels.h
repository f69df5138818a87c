//===- MatMulKernels.h - One row of an int8 activation product -*- C++ -*-===//
//
// Private to lib/Kernels (GemmKernels.h says why the ISA files include
// nothing else). One row of Int8MatMul (qopt/Kernels/Int8MatMul.h):
//
//   acc[n] = sum over p < kPairs of  pairs[p].lo * packed[p][n][0]
//                                  + pairs[p].hi * packed[p][n][1]
//
// with `pairs[p]` two s16 values (the row's elements 2p and 2p + 1, minus
// the zero point) in one s32, and `packed` [kPairs][paddedN][2] s16; the
// sums are exact in s32.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_MATMULKERNELS_H
#define QOPT_LIB_KERNELS_MATMULKERNELS_H

#include <cstdint>

namespace qopt {
namespace kernels {
namespace matmul {

/// paddedN is a multiple of 16.
using RowKernel = void (*)(const int32_t *pairs, int64_t kPairs,
                           const int16_t *packed, int64_t paddedN,
                           int32_t *acc);

void scalarRow(const int32_t *pairs, int64_t kPairs, const int16_t *packed,
               int64_t paddedN, int32_t *acc);
void avx2Row(const int32_t *pairs, int64_t kPairs, const int16_t *packed,
             int64_t paddedN, int32_t *acc);
void avx512Row(const int32_t *pairs, int64_t kPairs, const int16_t *packed,
               int64_t paddedN, int32_t *acc);

} // namespace matmul
} // namespace kernels
} // namespace qopt

#endif // QOPT_LIB_KERNELS_MATMULKERNELS_H
