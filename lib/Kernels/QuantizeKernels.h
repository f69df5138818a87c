//===- QuantizeKernels.h - The quantize families' entry points -*- C++ -*-===//
//
// Private to lib/Kernels (GemmKernels.h says why the ISA files include
// nothing else).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_QUANTIZEKERNELS_H
#define QOPT_LIB_KERNELS_QUANTIZEKERNELS_H

#include <cstdint>

namespace qopt {
namespace kernels {
namespace quantize {

/// The grid as the kernels read it (Int8Quantize.h has the meaning).
struct Grid {
  float scale;
  int32_t zero, lowest, highest;
  uint8_t flip;
};

/// `runs` runs of `count` elements each, all of them: run r from x + r *
/// xStride into out + r * outStride.
void avx2(const float *x, int64_t xStride, int64_t count, int64_t runs,
          const Grid &grid, uint8_t *out, int64_t outStride);
/// quantize::avx2 at 16 lanes (QuantizeAvx512.cpp): the same bytes.
void avx512(const float *x, int64_t xStride, int64_t count, int64_t runs,
            const Grid &grid, uint8_t *out, int64_t outStride);
/// `planes` planes of `count` elements (plane p from x + p * planeStride)
/// into `count` interleaved groups: element i of plane p to out[i * planes
/// + p] (an NCHW row of an image into NHWC). All of them.
/// lo = min(0, min x), hi = max(0, max x), NaNs passed over, as the
/// scalar loop of dynamicQuantizeGrid finds them.
void avx2Range(const float *x, int64_t count, float &lo, float &hi);
void avx2Planes(const float *x, int64_t planeStride, int64_t planes,
                int64_t count, const Grid &grid, uint8_t *out);

} // namespace quantize
} // namespace kernels
} // namespace qopt

#endif // QOPT_LIB_KERNELS_QUANTIZEKERNELS_H
