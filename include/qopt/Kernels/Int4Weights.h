//===- Int4Weights.h - A 4-bit weight as Int4Gemm reads it ------*- C++ -*-===//
//
// The packed forms of a weight-only 4-bit GEMM's weight: the f32 kernel's
// (qopt/Kernels/Int4Gemm.h) and the integer one's (Int4DotGemm.h); their
// own header, free of LLVM, for the ISA files.
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

/// A 4-bit weight in the integer kernel's layout.
struct Int4DotWeights {
  int64_t k = 0, n = 0, block = 0, segment = 0;
  bool isSigned = true;
  /// Panels of 32 columns; in each, K / 4 (rounded up) groups of 64 bytes.
  /// Byte t of group g holds, in its low nibble, the unsigned code of
  /// column t / 4 at k = 4g + t % 4 and, in its high nibble, that of column
  /// 16 + t / 4 (0 past K and N).
  std::vector<uint8_t> codes;
  /// [panels][blocks][32]: the scale and the unsigned codes' zero point z'
  /// (as a float) per block and column, a panel's in the order its codes
  /// are read (one stream for decode's single pass); 0 past N.
  std::vector<float> scales, zeros;
  /// Whether any zero point is not 0 (z' not 8 for int4, not 0 for uint4).
  bool hasZeros = false;

  int64_t numGroups() const { return (k + 3) / 4; }
  int64_t numSegments() const {
    return (numGroups() * 4 + segment - 1) / segment;
  }
  int64_t numPanels() const {
    return (n + kInt4PanelColumns - 1) / kInt4PanelColumns;
  }
  int64_t paddedColumns() const { return numPanels() * kInt4PanelColumns; }
  int64_t numBlocks() const { return (k + block - 1) / block; }
  /// Where the grid of `panel`'s 32 columns in block `b` starts.
  int64_t gridIndex(int64_t panel, int64_t b) const {
    return (panel * numBlocks() + b) * kInt4PanelColumns;
  }
  /// The weight block segment s lies in.
  int64_t blockOfSegment(int64_t s) const {
    return block >= k ? 0 : s * segment / block;
  }

  /// Whether a weight has this form: one block, or blocks of a multiple of
  /// 4 rows (a group of 4 never straddles two), of at most 2^20 rows.
  static bool canPack(const Int4Weights &w);
  static Int4DotWeights pack(const Int4Weights &w);
  /// The f32 kernel's form of the same weight (what a plan file stores).
  Int4Weights unpack() const;
};

} // namespace kernels
} // namespace qopt

#endif // QOPT_KERNELS_INT4WEIGHTS_H
