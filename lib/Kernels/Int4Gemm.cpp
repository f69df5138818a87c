//===- Int4Gemm.cpp - Weight-only 4-bit GEMM: packing, scalar, dispatch ---===//
//
// The scalar kernel is the contract written out: per output, fma over k in
// order from 0, each weight float(q - z) * s in f32. The AVX2 and AVX-512
// files compute the same operations eight and sixteen columns at a time,
// so their bits are these (no multiply and add are contracted here but by
// std::fma).
//
//===----------------------------------------------------------------------===//

#include "qopt/Kernels/Int4Gemm.h"
#include "Int4GemmKernels.h"

#include <algorithm>
#include <cassert>
#include <cmath>

using namespace qopt;
using namespace qopt::kernels;

Int4Weights Int4Weights::pack(const int8_t *q, int64_t k, int64_t n,
                              int64_t block, bool isSigned, const float *scales,
                              const int64_t *zeros) {
  assert(k > 0 && n > 0 && block > 0 && (block % 2 == 0 || block >= k));
  Int4Weights w;
  w.k = k;
  w.n = n;
  w.block = block;
  w.isSigned = isSigned;
  int64_t columns = w.paddedColumns(), pairs = w.rowPairs();
  w.codes.assign(size_t(w.numPanels() * pairs * kInt4PanelColumns), 0);
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) {
      uint8_t code = uint8_t(q[p * n + j]) & 0x0F;
      int64_t panel = j / kInt4PanelColumns, c = j % kInt4PanelColumns;
      uint8_t &byte =
          w.codes[size_t((panel * pairs + p / 2) * kInt4PanelColumns + c)];
      byte |= p % 2 ? uint8_t(code << 4) : code;
    }
  int64_t blocks = w.numBlocks();
  w.scales.assign(size_t(blocks * columns), 0.0f);
  std::vector<int32_t> z(size_t(blocks * columns), 0);
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t j = 0; j < n; ++j) {
      w.scales[size_t(b * columns + j)] = scales[b * n + j];
      if (zeros)
        z[size_t(b * columns + j)] = int32_t(zeros[b * n + j]);
    }
  w.setZeros(std::move(z));
  return w;
}

size_t kernels::int4GemmScratchBytes(const Int4Weights &w, int64_t rows) {
  if (rows <= kInt4DirectRows)
    return 0;
  // 256 rows of a panel (the AVX-512 kernel's slice; K's last pair too).
  return size_t(std::min<int64_t>(w.rowPairs() * 2, 256) * kInt4PanelColumns) *
         sizeof(float);
}

namespace {

/// The weight at row p, column c of panel `panel`, as the DQ makes it.
float weightAt(const Int4Weights &w, int64_t panel, int64_t p, int64_t c) {
  uint8_t byte =
      w.codes[size_t((panel * w.rowPairs() + p / 2) * kInt4PanelColumns + c)];
  int32_t code = p % 2 ? byte >> 4 : byte & 0x0F;
  if (w.isSigned && code > 7)
    code -= 16;
  size_t at =
      size_t((p / w.block) * w.paddedColumns() + panel * kInt4PanelColumns + c);
  return float(code - w.zeros[at]) * w.scales[at];
}

void int4GemmScalar(const float *x, int64_t rows, const Int4Weights &w,
                    int64_t panelBegin, int64_t panelEnd, float *y) {
  for (int64_t panel = panelBegin; panel < panelEnd; ++panel)
    for (int64_t c = 0; c < kInt4PanelColumns; ++c) {
      int64_t j = panel * kInt4PanelColumns + c;
      if (j >= w.n)
        break;
      for (int64_t r = 0; r < rows; ++r) {
        float acc = 0.0f;
        for (int64_t p = 0; p < w.k; ++p)
          acc = std::fma(x[r * w.k + p], weightAt(w, panel, p, c), acc);
        y[r * w.n + j] = acc;
      }
    }
}

} // namespace

void kernels::int4Gemm(Isa isa, const float *x, int64_t rows,
                       const Int4Weights &w, int64_t panelBegin,
                       int64_t panelEnd, float *y, float *scratch) {
  if (isa == Isa::Avx512Vnni || isa == Isa::Amx)
    return int4GemmAvx512(x, rows, w, panelBegin, panelEnd, y, scratch);
  if (isa == Isa::Avx2 || isa == Isa::AvxVnni)
    return int4GemmAvx2(x, rows, w, panelBegin, panelEnd, y, scratch);
  int4GemmScalar(x, rows, w, panelBegin, panelEnd, y);
}
