//===- Int8Quantize.h - f32 -> int8 bytes, per ISA --------------*- C++ -*-===//
//
// The plan's quantize steps: each element as the reference's QuantizeLinear
// computes it,
//
//   q = saturate(nearbyint(x / scale) + zero)      (a NaN becomes 0)
//
// with a float division (not a multiply by the reciprocal), rounding half to
// even, and the result stored as one byte XORed with `flip` (0x80 for an s8
// tensor the plan stores as u8). Every family gives the same bytes.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_KERNELS_INT8QUANTIZE_H
#define QOPT_KERNELS_INT8QUANTIZE_H

#include "qopt/Kernels/CpuFeatures.h"

#include <cstdint>

namespace qopt {
namespace kernels {

struct QuantizeGrid {
  float scale = 1;
  int32_t zero = 0;
  bool isSigned = false; ///< s8 (-128..127), else u8 (0..255)
  uint8_t flip = 0;      ///< XORed into each stored byte
};

/// out[i] = the stored byte of x[i] on `grid`, for i < count.
void quantizeFloats(Isa isa, const float *x, int64_t count,
                    const QuantizeGrid &grid, uint8_t *out);
/// quantizeFloats on `runs` runs of `count` elements: run r from x + r *
/// xStride into out + r * outStride (the channels of a row of pixels).
void quantizeFloatRuns(Isa isa, const float *x, int64_t xStride, int64_t count,
                       int64_t runs, const QuantizeGrid &grid, uint8_t *out,
                       int64_t outStride);
/// quantizeFloats on `planes` planes of `count` elements (plane p from x +
/// p * planeStride), interleaved: element i of plane p into out[i * planes
/// + p] (an NCHW row of an image into NHWC).
/// DynamicQuantizeLinear's grid of `count` floats, as ONNX defines it: u8,
/// scale (max(0, max x) - min(0, min x)) / 255 and zero point
/// saturate(round(-min(0, min x) / scale)), half to even; NaNs are passed
/// over. Scale 0 (every x 0) means every byte is 0, zero point 0.
QuantizeGrid dynamicQuantizeGrid(Isa isa, const float *x, int64_t count);
void quantizeFloatPlanes(Isa isa, const float *x, int64_t planeStride,
                         int64_t planes, int64_t count,
                         const QuantizeGrid &grid, uint8_t *out);

} // namespace kernels
} // namespace qopt

#endif // QOPT_KERNELS_INT8QUANTIZE_H
