//===- QuantizeKernels.h - The quantize families' entry points -*- C++ -*-===//
//
// Private to lib/Runtime/Int8 (GemmKernels.h says why the ISA files include
// nothing else).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_RUNTIME_INT8_QUANTIZEKERNELS_H
#define QOPT_LIB_RUNTIME_INT8_QUANTIZEKERNELS_H

#include <cstdint>

namespace qopt {
namespace rt {
namespace quantize {

/// The grid as the kernels read it (Int8Quantize.h has the meaning).
struct Grid {
  float scale;
  int32_t zero, lowest, highest;
  uint8_t flip;
};

/// The elements [0, count - count % 8) of x; the caller does the rest.
void avx2(const float *x, int64_t count, const Grid &grid, uint8_t *out);

} // namespace quantize
} // namespace rt
} // namespace qopt

#endif // QOPT_LIB_RUNTIME_INT8_QUANTIZEKERNELS_H
