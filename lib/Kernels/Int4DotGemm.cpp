//===- Int4DotGemm.cpp - int4 x int8 GEMM: packing, rows, scalar ----------===//
//
// The row quantizer every ISA shares, and the scalar kernel: the contract
// of qopt/Kernels/Int4DotGemm.h written out. Built with -ffp-contract=off:
// its multiplies and adds are fused only where std::fma says so, as the
// vector file's are.
//
//===----------------------------------------------------------------------===//

#include "qopt/Kernels/Int4DotGemm.h"
#include "Int4DotGemmKernels.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

using namespace qopt;
using namespace qopt::kernels;

bool Int4DotWeights::canPack(const Int4Weights &w) {
  constexpr int64_t kMaxSegment = int64_t(1) << 20;
  return w.k > 0 && w.n > 0 && w.block > 0 &&
         (w.block >= w.k || (w.block % 4 == 0 && w.block <= kMaxSegment));
}

namespace {

/// Byte of group g's 64 and its nibble for column c (< 32) at k = 4g + i.
size_t dotByte(int64_t panelBase, int64_t g, int64_t c, int64_t i) {
  return size_t(panelBase + g * 64 + (c % 16) * 4 + i);
}

} // namespace

Int4DotWeights Int4DotWeights::pack(const Int4Weights &w) {
  assert(canPack(w));
  Int4DotWeights d;
  d.k = w.k;
  d.n = w.n;
  d.block = w.block;
  d.isSigned = w.isSigned;
  d.hasZeros = w.hasZeros;
  d.segment = w.block >= w.k || w.block % 128 == 0 ? 128 : w.block;
  int64_t groups = d.numGroups(), panels = d.numPanels();
  d.codes.assign(size_t(panels * groups * 64), 0);
  for (int64_t panel = 0; panel < panels; ++panel) {
    const uint8_t *from =
        w.codes.data() + panel * w.rowPairs() * kInt4PanelColumns;
    int64_t base = panel * groups * 64;
    for (int64_t p = 0; p < w.k; ++p)
      for (int64_t c = 0; c < kInt4PanelColumns; ++c) {
        if (panel * kInt4PanelColumns + c >= w.n)
          break;
        uint8_t byte = from[(p / 2) * kInt4PanelColumns + c];
        uint8_t code = p % 2 ? byte >> 4 : byte & 0x0F;
        if (w.isSigned)
          code ^= 0x08; // q + 8
        uint8_t &to = d.codes[dotByte(base, p / 4, c, p % 4)];
        to |= c < 16 ? code : uint8_t(code << 4);
      }
  }
  d.scales.assign(w.scales.size(), 0.0f);
  d.zeros.assign(w.zeros.size(), 0.0f);
  for (int64_t b = 0; b < w.numBlocks(); ++b)
    for (int64_t j = 0; j < w.n; ++j) {
      size_t from = size_t(b * w.paddedColumns() + j);
      size_t to =
          size_t(d.gridIndex(j / kInt4PanelColumns, b) + j % kInt4PanelColumns);
      d.scales[to] = w.scales[from];
      d.zeros[to] = float(w.zeros[from] + (w.isSigned ? 8 : 0));
    }
  return d;
}

Int4Weights Int4DotWeights::unpack() const {
  Int4Weights w;
  w.k = k;
  w.n = n;
  w.block = block;
  w.isSigned = isSigned;
  int64_t groups = numGroups(), pairs = w.rowPairs();
  w.codes.assign(size_t(numPanels() * pairs * kInt4PanelColumns), 0);
  for (int64_t panel = 0; panel < numPanels(); ++panel)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t c = 0; c < kInt4PanelColumns; ++c) {
        if (panel * kInt4PanelColumns + c >= n)
          break;
        uint8_t byte = codes[dotByte(panel * groups * 64, p / 4, c, p % 4)];
        uint8_t code = c < 16 ? byte & 0x0F : byte >> 4;
        if (isSigned)
          code ^= 0x08;
        w.codes[size_t((panel * pairs + p / 2) * kInt4PanelColumns + c)] |=
            p % 2 ? uint8_t(code << 4) : code;
      }
  // The grid back in [blocks][columns], z' back to z (0 past N).
  w.scales.assign(scales.size(), 0.0f);
  std::vector<int32_t> z(zeros.size(), 0);
  for (int64_t b = 0; b < w.numBlocks(); ++b)
    for (int64_t j = 0; j < n; ++j) {
      size_t from =
          size_t(gridIndex(j / kInt4PanelColumns, b) + j % kInt4PanelColumns);
      size_t to = size_t(b * w.paddedColumns() + j);
      w.scales[to] = scales[from];
      z[to] = int32_t(zeros[from]) - (isSigned ? 8 : 0);
    }
  w.setZeros(std::move(z));
  return w;
}

namespace {

constexpr size_t kTermsAlign = 64;

size_t valuesBytes(const Int4DotWeights &w, int64_t rows) {
  size_t bytes = size_t(rows * w.numGroups() * 4);
  return (bytes + kTermsAlign - 1) / kTermsAlign * kTermsAlign;
}

/// Where the parts of quantized rows are.
template <typename Bytes>
QuantizedRows rowsAt(Bytes *bytes, const Int4DotWeights &w, int64_t rows) {
  auto *at = reinterpret_cast<const uint8_t *>(bytes);
  return QuantizedRows{
      reinterpret_cast<const int8_t *>(at),
      reinterpret_cast<const float *>(at + valuesBytes(w, rows)),
      w.numGroups() * 4};
}

} // namespace

void kernels::int4DotGemmQuantizeRows(const float *x, int64_t rows,
                                      const Int4DotWeights &w,
                                      void *quantizedRows) {
  int64_t stride = w.numGroups() * 4, segments = w.numSegments();
  auto *values = static_cast<int8_t *>(quantizedRows);
  auto *terms = reinterpret_cast<float *>(
      static_cast<uint8_t *>(quantizedRows) + valuesBytes(w, rows));
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = x + r * w.k;
    int8_t *q = values + r * stride;
    for (int64_t s = 0; s < segments; ++s) {
      int64_t begin = s * w.segment, end = std::min(w.k, begin + w.segment);
      float amax = 0.0f;
      bool finite = true;
      for (int64_t p = begin; p < end; ++p) {
        finite &= std::isfinite(row[p]);
        amax = std::max(amax, std::fabs(row[p]));
      }
      float *t = terms + (r * segments + s) * 2;
      int32_t sum = 0;
      if (!finite || amax == 0.0f) {
        std::fill(q + begin, q + end, int8_t(0));
        t[0] = finite ? 0.0f : std::numeric_limits<float>::quiet_NaN();
      } else {
        float inverse = 127.0f / amax;
        for (int64_t p = begin; p < end; ++p) {
          float v = std::nearbyint(row[p] * inverse);
          int8_t c = int8_t(std::min(127.0f, std::max(-127.0f, v)));
          q[p] = c;
          sum += c;
        }
        t[0] = amax / 127.0f;
      }
      t[1] = float(sum);
      std::fill(q + end, q + std::min(stride, (s + 1) * w.segment), int8_t(0));
    }
  }
}

namespace {

void int4DotGemmScalar(const QuantizedRows &x, int64_t rows,
                       const Int4DotWeights &w, int64_t panelBegin,
                       int64_t panelEnd, float *y) {
  int64_t groups = w.numGroups(), segments = w.numSegments();
  for (int64_t panel = panelBegin; panel < panelEnd; ++panel)
    for (int64_t c = 0; c < kInt4PanelColumns; ++c) {
      int64_t j = panel * kInt4PanelColumns + c;
      if (j >= w.n)
        break;
      for (int64_t r = 0; r < rows; ++r) {
        const int8_t *q = x.values + r * x.stride;
        float acc = 0.0f;
        for (int64_t s = 0; s < segments; ++s) {
          int64_t g0 = s * w.segment / 4;
          int64_t g1 = std::min(groups, (s + 1) * w.segment / 4);
          int32_t dot = 0;
          for (int64_t g = g0; g < g1; ++g)
            for (int64_t i = 0; i < 4; ++i) {
              uint8_t byte = w.codes[dotByte(panel * groups * 64, g, c, i)];
              int32_t u = c < 16 ? byte & 0x0F : byte >> 4;
              dot += u * q[g * 4 + i];
            }
          size_t at = size_t(w.gridIndex(panel, w.blockOfSegment(s)) + c);
          const float *t = x.segmentTerms + (r * segments + s) * 2;
          float integral = std::fma(-w.zeros[at], t[1], float(dot));
          acc = std::fma(integral, w.scales[at] * t[0], acc);
        }
        y[r * w.n + j] = acc;
      }
    }
}

} // namespace

size_t kernels::int4DotGemmRowsBytes(const Int4DotWeights &w, int64_t rows) {
  return valuesBytes(w, rows) +
         size_t(rows * w.numSegments() * 2) * sizeof(float);
}

void kernels::int4DotGemm(Isa isa, const void *quantizedRows, int64_t rows,
                          const Int4DotWeights &w, int64_t panelBegin,
                          int64_t panelEnd, float *y) {
  QuantizedRows q = rowsAt(quantizedRows, w, rows);
  if (isa == Isa::Avx512Vnni || isa == Isa::Amx)
    return int4DotGemmAvx512Vnni(q, rows, w, panelBegin, panelEnd, y);
  int4DotGemmScalar(q, rows, w, panelBegin, panelEnd, y);
}
