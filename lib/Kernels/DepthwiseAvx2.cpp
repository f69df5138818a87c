//===- DepthwiseAvx2.cpp - Depthwise conv sums, 8 channels a vector -------===//
//
// Built with -mavx2 and called only where CPUID finds AVX2.
//
//===----------------------------------------------------------------------===//

#include "DepthwiseBlock8.h"
#include "DepthwiseKernels.h"

void qopt::rt::depthwise::avx2(const Row &row, int32_t *acc) {
  rowOf<Block8>(row, acc);
}
