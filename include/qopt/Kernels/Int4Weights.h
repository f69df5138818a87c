//===- Int4Weights.h - A 4-bit weight as Int4Gemm reads it ------*- C++ -*-===//
//
// The packed form of a weight-only 4-bit GEMM's weight (qopt/Kernels/
// Int4Gemm.h); its own header, free of LLVM, for the ISA files.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_KERNELS_INT4WEIGHTS_H
#define QOPT_KERNELS_INT4WEIGHTS_H

#include <cstdint>
#include <vector>

namespace qopt {
namespace kernels {

/// Columns of one panel of packed codes (the unit of a kernel call's work).
constexpr int64_t kInt4PanelColumns = 32;

/// A weight as the kernels read it.
struct Int4Weights {
  int64_t k = 0, n = 0, block = 0;
  bool isSigned = true;
  /// Panels of 32 columns; in each, K / 2 (rounded up) rows of 32 bytes:
  /// byte c of row i holds column c's codes of k = 2i (low nibble) and
  /// 2i + 1 (high nibble, 0 past K). Columns past N hold code 0.
  std::vector<uint8_t> codes;
  /// [blocks][panels * 32]: scale and zero point (0 when none) per block
  /// and column; 0 and 0 past N.
  std::vector<float> scales;
  std::vector<int32_t> zeros;
  /// Whether any zero point is not 0 (set by pack and setZeros).
  bool hasZeros = false;

  /// zeros, then hasZeros from them.
  void setZeros(std::vector<int32_t> z) {
    zeros = std::move(z);
    hasZeros = false;
    for (int32_t v : zeros)
      hasZeros |= v != 0;
  }

  int64_t numBlocks() const { return (k + block - 1) / block; }
  int64_t numPanels() const {
    return (n + kInt4PanelColumns - 1) / kInt4PanelColumns;
  }
  int64_t paddedColumns() const { return numPanels() * kInt4PanelColumns; }
  int64_t rowPairs() const { return (k + 1) / 2; }

  /// Packs codes q [k][n] (i4 as -8..7, u4 as 0..15, one a byte, row-major),
  /// scales [blocks][n] and zero points [blocks][n] (null: none). `block`
  /// must be even or k itself.
  static Int4Weights pack(const int8_t *q, int64_t k, int64_t n, int64_t block,
                          bool isSigned, const float *scales,
                          const int64_t *zeros);
};

} // namespace kernels
} // namespace qopt

#endif // QOPT_KERNELS_INT4WEIGHTS_H
