//===- MatMulStep.cpp - Int8 MatMul of two activations --------------------===//
//
//   y[b] = quantize(f32(double(acc[b]) * lhsScale * rhsScale))   (or the f32)
//   acc[b][m][n] = sum over k of (A[b][m][k] - za) * (B[b][k][n] - zb)
//
// A tile is up to kRowsPerTile rows of one product. The tiles a call gets
// are consecutive, so the right operand is packed once for all the rows of
// a product that one call computes. The operands are read through their
// strides, so an operand in NHWC layout (a 4-D int8 tensor a conv or
// quantize step wrote) needs no reformat.
//
// Against the reference (q.matmul: each operand dequantized to f32, the
// products summed in double, the sum rounded to f32): the s32 sum is exact,
// where the reference rounds each dequantized operand to f32 first, so the
// f32 results can differ in their last bits and a quantized result by one
// step where a value lies on a rounding boundary.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/Plan.h"

#include <algorithm>

using namespace qopt;
using namespace qopt::rt;

namespace {

size_t alignTo64(size_t n) { return (n + 63) / 64 * 64; }

/// Element strides of tensor `t`'s logical dims as it is stored.
std::vector<int64_t> storedStrides(const PlanTensor &t) {
  const Shape &s = t.shape;
  std::vector<int64_t> strides(s.size(), 1);
  if (t.layout == PlanLayout::Nhwc) { // [N, C, H, W] stored [N, H, W, C]
    strides[1] = 1;
    strides[3] = s[1];
    strides[2] = s[3] * s[1];
    strides[0] = s[2] * strides[2];
    return strides;
  }
  for (size_t i = s.size(); i-- > 1;)
    strides[i - 1] = strides[i] * s[i];
  return strides;
}

/// An operand of the product: its matrix strides and, per batch dim, the
/// stride (0 where the dim is broadcast).
struct Operand {
  Int8Matrix matrix;
  std::vector<int64_t> batchStrides;
};

Operand operandOf(const PlanRun &run, int id, int32_t zero) {
  const PlanTensor &t = run.tensor(id);
  std::vector<int64_t> strides = storedStrides(t);
  size_t rank = t.shape.size();
  Operand o;
  o.matrix.data = reinterpret_cast<const uint8_t *>(run.read(id));
  o.matrix.rowStride = strides[rank - 2];
  o.matrix.columnStride = strides[rank - 1];
  o.matrix.isSigned = t.kind == ElementKind::I8;
  o.matrix.flip = t.getStoredFlip();
  o.matrix.zero = zero;
  for (size_t i = 0; i + 2 < rank; ++i)
    o.batchStrides.push_back(t.shape[i] == 1 ? 0 : strides[i]);
  return o;
}

} // namespace

size_t MatMulStep::getScratchBytes() const {
  return alignTo64(size_t(kernel.getPackedElements()) * sizeof(int16_t)) +
         alignTo64(size_t(kernel.getPairElements()) * sizeof(int32_t)) +
         alignTo64(size_t(kernel.getRowElements()) * sizeof(int32_t)) +
         alignTo64(size_t(kernel.getRowElements()) * sizeof(float));
}

llvm::Error MatMulStep::run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                            void *scratch) const {
  const Params &p = params;
  Operand lhs = operandOf(run, inputs[0], p.lhsZero);
  Operand rhs = operandOf(run, inputs[1], p.rhsZero);
  const Shape &yShape = run.tensor(outputs[0]).shape;
  char *y = run.write(outputs[0]);

  auto *packed = static_cast<int16_t *>(scratch);
  auto *pairs = reinterpret_cast<int32_t *>(
      static_cast<char *>(scratch) +
      alignTo64(size_t(kernel.getPackedElements()) * sizeof(int16_t)));
  int32_t *acc = reinterpret_cast<int32_t *>(
      reinterpret_cast<char *>(pairs) +
      alignTo64(size_t(kernel.getPairElements()) * sizeof(int32_t)));
  float *row = reinterpret_cast<float *>(
      reinterpret_cast<char *>(acc) +
      alignTo64(size_t(kernel.getRowElements()) * sizeof(int32_t)));

  double scale = double(p.lhsScale) * double(p.rhsScale);
  int64_t tilesPerProduct = (p.m + kRowsPerTile - 1) / kRowsPerTile;
  int64_t packedBatch = -1;
  Int8Matrix a = lhs.matrix, b = rhs.matrix;
  for (int64_t tile = tileBegin; tile < tileEnd; ++tile) {
    int64_t batch = tile / tilesPerProduct;
    if (batch != packedBatch) {
      // The batch index, dim by dim from the last, into each offset.
      int64_t rest = batch, lhsOffset = 0, rhsOffset = 0;
      for (size_t d = lhs.batchStrides.size(); d-- > 0;) {
        int64_t index = rest % yShape[d];
        rest /= yShape[d];
        lhsOffset += index * lhs.batchStrides[d];
        rhsOffset += index * rhs.batchStrides[d];
      }
      a.data = lhs.matrix.data + lhsOffset;
      b.data = rhs.matrix.data + rhsOffset;
      kernel.packRight(b, packed);
      packedBatch = batch;
    }
    int64_t first = (tile % tilesPerProduct) * kRowsPerTile;
    int64_t last = std::min(p.m, first + kRowsPerTile);
    for (int64_t r = first; r < last; ++r) {
      kernel.multiplyRow(a, r, packed, pairs, acc);
      int64_t at = (batch * p.m + r) * p.n;
      float *out = p.output ? row : reinterpret_cast<float *>(y) + at;
      for (int64_t c = 0; c < p.n; ++c)
        out[c] = static_cast<float>(double(acc[c]) * scale);
      if (p.output)
        quantizeFloats(isa, row, p.n, *p.output,
                       reinterpret_cast<uint8_t *>(y) + at);
    }
  }
  return llvm::Error::success();
}
