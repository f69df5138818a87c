//===- Int8MatMul.cpp - Packing and dispatch of int8 activation products --===//
//
// The packed right operand holds each pair of rows (2p, 2p + 1) interleaved
// column by column, so one 32-bit lane holds column n's two values and
// vpmaddwd against a broadcast pair of the left row adds both products.
//
//===----------------------------------------------------------------------===//

#include "qopt/Kernels/Int8MatMul.h"

#include "MatMulKernels.h"

#include <algorithm>
#include <cstring>

using namespace qopt;
using namespace qopt::kernels;

Int8MatMul::Int8MatMul(Isa isa, int64_t k, int64_t n)
    : isa(isa), k(k), n(n), kPairs((k + 1) / 2), paddedN((n + 15) / 16 * 16) {}

void Int8MatMul::packRight(const Int8Matrix &b, int16_t *packed) const {
  std::fill(packed, packed + getPackedElements(), int16_t(0));
  for (int64_t row = 0; row < k; ++row) {
    int16_t *to = packed + (row / 2) * paddedN * 2 + (row & 1);
    for (int64_t col = 0; col < n; ++col)
      to[col * 2] = static_cast<int16_t>(b.at(row, col));
  }
}

static uint32_t pairOf(int32_t lo, int32_t hi) {
  return uint32_t(uint16_t(int16_t(lo))) |
         (uint32_t(uint16_t(int16_t(hi))) << 16);
}

void Int8MatMul::multiplyRow(const Int8Matrix &a, int64_t row,
                             const int16_t *packed, int32_t *pairs,
                             int32_t *acc) const {
  for (int64_t p = 0; p < kPairs; ++p) {
    int32_t lo = a.at(row, 2 * p);
    int32_t hi = 2 * p + 1 < k ? a.at(row, 2 * p + 1) : 0;
    pairs[p] = static_cast<int32_t>(pairOf(lo, hi));
  }
  matmul::RowKernel kernel = matmul::scalarRow;
  if (isa == Isa::Avx512Vnni || isa == Isa::Amx)
    kernel = matmul::avx512Row;
  else if (isa == Isa::Avx2 || isa == Isa::AvxVnni)
    kernel = matmul::avx2Row;
  kernel(pairs, kPairs, packed, paddedN, acc);
}

void matmul::scalarRow(const int32_t *pairs, int64_t kPairs,
                       const int16_t *packed, int64_t paddedN, int32_t *acc) {
  std::fill(acc, acc + paddedN, 0);
  for (int64_t p = 0; p < kPairs; ++p) {
    uint32_t pair = static_cast<uint32_t>(pairs[p]);
    int32_t lo = int16_t(pair & 0xffff), hi = int16_t(pair >> 16);
    const int16_t *b = packed + p * paddedN * 2;
    for (int64_t col = 0; col < paddedN; ++col)
      acc[col] += lo * b[2 * col] + hi * b[2 * col + 1];
  }
}
