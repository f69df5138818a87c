//===- Int8MatMul.h - Products of two int8 activation matrices -*- C++ -*-===//
//
// The int8 MatMul of attention, where both operands are activations (Q K^T,
// softmax V): no weights to pack ahead of time, per-tensor zero points on
// both sides. For an M x K operand A and a K x N operand B,
//
//   acc[m][n] = sum over k of (A[m][k] - za) * (B[k][n] - zb)
//
// exactly in s32 (each product is at most 255 * 255 in magnitude, and a
// pair of them fits a 32-bit lane, so K up to 2^15 cannot overflow).
//
// B is packed once per product into s16 pairs of rows, [K/2][N'][2] with
// N' = N rounded up to 16 and an odd K padded with a zero row, so a row of A
// is a broadcast pair times one vector of columns (vpmaddwd): 32 products an
// instruction at 512 bits.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_KERNELS_INT8MATMUL_H
#define QOPT_KERNELS_INT8MATMUL_H

#include "qopt/Kernels/CpuFeatures.h"

#include <cstdint>

namespace qopt {
namespace kernels {

/// A strided int8 matrix as stored: element (r, c) is the byte at data +
/// r * rowStride + c * columnStride, XORed with `flip`, read as s8 or u8;
/// its value is that minus `zero`.
struct Int8Matrix {
  const uint8_t *data = nullptr;
  int64_t rowStride = 0, columnStride = 1;
  bool isSigned = false;
  uint8_t flip = 0;
  int32_t zero = 0;

  int32_t at(int64_t r, int64_t c) const {
    uint8_t b = data[r * rowStride + c * columnStride] ^ flip;
    return (isSigned ? int32_t(int8_t(b)) : int32_t(b)) - zero;
  }
};

class Int8MatMul {
public:
  /// A product of K x N right operands on `isa`'s kernel.
  Int8MatMul(Isa isa, int64_t k, int64_t n);

  int64_t getK() const { return k; }
  int64_t getN() const { return n; }
  /// s16 elements of a packed right operand.
  int64_t getPackedElements() const { return kPairs * paddedN * 2; }
  /// s32 elements of the accumulator row multiplyRow() writes (N rounded
  /// up; only the first N are the product's).
  int64_t getRowElements() const { return paddedN; }
  /// s32 elements of the left row scratch multiplyRow() takes.
  int64_t getPairElements() const { return kPairs; }

  /// `b` (K x N) into `packed` (getPackedElements()).
  void packRight(const Int8Matrix &b, int16_t *packed) const;
  /// acc[0, N) = row `row` of `a` (1 x K) times the packed right operand;
  /// `pairs` is scratch of getPairElements().
  void multiplyRow(const Int8Matrix &a, int64_t row, const int16_t *packed,
                   int32_t *pairs, int32_t *acc) const;

private:
  Isa isa;
  int64_t k, n, kPairs, paddedN;
};

} // namespace kernels
} // namespace qopt

#endif // QOPT_KERNELS_INT8MATMUL_H
