//===- Int8Quantize.cpp - f32 -> int8 bytes: the scalar rule, dispatch ----===//

#include "qopt/Runtime/Int8Quantize.h"
#include "QuantizeKernels.h"

#include <cmath>

using namespace qopt;
using namespace qopt::rt;

void rt::quantizeFloatRuns(Isa isa, const float *x, int64_t xStride,
                           int64_t count, int64_t runs,
                           const QuantizeGrid &grid, uint8_t *out,
                           int64_t outStride) {
  quantize::Grid g{grid.scale, grid.zero, grid.isSigned ? -128 : 0,
                   grid.isSigned ? 127 : 255, grid.flip};
  if (isa != Isa::Scalar) {
    quantize::avx2(x, xStride, count, runs, g, out, outStride);
    return;
  }
  for (int64_t run = 0; run < runs; ++run, x += xStride, out += outStride)
    for (int64_t i = 0; i < count; ++i) {
      float r = std::nearbyintf(x[i] / g.scale);
      int32_t q = 0;
      if (!std::isnan(r)) {
        double v = double(r) + g.zero;
        q = v <= g.lowest ? g.lowest : v >= g.highest ? g.highest : int32_t(v);
      }
      out[i] = uint8_t(q) ^ g.flip;
    }
}

void rt::quantizeFloats(Isa isa, const float *x, int64_t count,
                        const QuantizeGrid &grid, uint8_t *out) {
  quantizeFloatRuns(isa, x, 0, count, 1, grid, out, 0);
}
