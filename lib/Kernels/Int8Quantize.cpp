//===- Int8Quantize.cpp - f32 -> int8 bytes: the scalar rule, dispatch ----===//

#include "qopt/Kernels/Int8Quantize.h"
#include "QuantizeKernels.h"

#include <cmath>

using namespace qopt;
using namespace qopt::kernels;

namespace {

quantize::Grid kernelGrid(const QuantizeGrid &grid) {
  return {grid.scale, grid.zero, grid.isSigned ? -128 : 0,
          grid.isSigned ? 127 : 255, grid.flip};
}

/// The scalar rule: saturate(nearbyint(x / scale) + zero), NaN -> 0.
uint8_t quantizeOne(float x, const quantize::Grid &g) {
  float r = std::nearbyintf(x / g.scale);
  int32_t q = 0;
  if (!std::isnan(r)) {
    double v = double(r) + g.zero;
    q = v <= g.lowest ? g.lowest : v >= g.highest ? g.highest : int32_t(v);
  }
  return uint8_t(q) ^ g.flip;
}

} // namespace

void kernels::quantizeFloatRuns(Isa isa, const float *x, int64_t xStride,
                                int64_t count, int64_t runs,
                                const QuantizeGrid &grid, uint8_t *out,
                                int64_t outStride) {
  quantize::Grid g = kernelGrid(grid);
  if (isa == Isa::Avx512Vnni || isa == Isa::Amx) {
    quantize::avx512(x, xStride, count, runs, g, out, outStride);
    return;
  }
  if (isa != Isa::Scalar) {
    quantize::avx2(x, xStride, count, runs, g, out, outStride);
    return;
  }
  for (int64_t run = 0; run < runs; ++run, x += xStride, out += outStride)
    for (int64_t i = 0; i < count; ++i)
      out[i] = quantizeOne(x[i], g);
}

void kernels::quantizeFloatPlanes(Isa isa, const float *x, int64_t planeStride,
                                  int64_t planes, int64_t count,
                                  const QuantizeGrid &grid, uint8_t *out) {
  quantize::Grid g = kernelGrid(grid);
  if (isa != Isa::Scalar) {
    quantize::avx2Planes(x, planeStride, planes, count, g, out);
    return;
  }
  for (int64_t i = 0; i < count; ++i)
    for (int64_t p = 0; p < planes; ++p)
      out[i * planes + p] = quantizeOne(x[p * planeStride + i], g);
}

void kernels::quantizeFloats(Isa isa, const float *x, int64_t count,
                             const QuantizeGrid &grid, uint8_t *out) {
  quantizeFloatRuns(isa, x, 0, count, 1, grid, out, 0);
}

QuantizeGrid kernels::dynamicQuantizeGrid(Isa isa, const float *x,
                                          int64_t count) {
  float lo = 0.0f, hi = 0.0f;
  if (isa != Isa::Scalar) {
    quantize::avx2Range(x, count, lo, hi);
  } else {
    // As std::min/std::max: a NaN never replaces the bound.
    for (int64_t i = 0; i < count; ++i) {
      lo = x[i] < lo ? x[i] : lo;
      hi = x[i] > hi ? x[i] : hi;
    }
  }
  QuantizeGrid grid;
  grid.scale = (hi - lo) / 255.0f;
  grid.zero = 0;
  if (grid.scale > 0) {
    float zero = std::nearbyintf(0.0f - lo / grid.scale);
    grid.zero = zero <= 0 ? 0 : zero >= 255 ? 255 : int32_t(zero);
  }
  return grid;
}
