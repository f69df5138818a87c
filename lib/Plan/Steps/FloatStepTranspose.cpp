//===- FloatStepTranspose.cpp - Float Transpose steps ---------------------===//
//
// A Transpose of 4-byte elements in ONNX layout that swaps two blocks of
// trailing dims (NCHW <-> NHWC) runs as one 2-D transpose per batch
// (FloatStepRun.cpp's run calls transpose32); any other permutation moves
// a row of the result at a time, copied whole where the last dim stays
// ([B, T, H, D] -> [B, H, T, D], attention's heads), the input offset of
// each row kept by an odometer. Moved bits either way.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/Steps/FloatStep.h"

#include <algorithm>
#include <cstring>

using namespace qopt;
using namespace qopt::plan;
using interp::Shape;

std::array<int64_t, 3> FloatStep::transposeBlocks(const PlanRun &run) const {
  if (arithmetic != Arithmetic::Transpose || inputs.size() != 1 ||
      outputs.size() != 1 || inputs[0] < 0 || outputs[0] < 0)
    return {0, 0, 0};
  const PlanTensor &x = run.tensor(inputs[0]), &y = run.tensor(outputs[0]);
  int64_t rank = int64_t(x.shape.size());
  if (x.layout != PlanLayout::Onnx || y.layout != PlanLayout::Onnx ||
      x.kind != y.kind || getElementByteSize(x.kind) != 4 ||
      int64_t(perm.size()) != rank)
    return {0, 0, 0};
  std::vector<bool> seen(rank, false);
  for (int64_t d : perm) {
    if (d < 0 || d >= rank || seen[d])
      return {0, 0, 0}; // not a permutation: the kernel says so
    seen[d] = true;
  }
  // perm = [0, p), then [q, rank), then [p, q).
  int64_t p = 0;
  while (p < rank && perm[p] == p)
    ++p;
  if (p == rank)
    return {0, 0, 0};
  int64_t q = perm[p];
  for (int64_t i = p; i < rank; ++i) {
    int64_t expected =
        i - p < rank - q ? q + (i - p) : p + (i - p - (rank - q));
    if (perm[i] != expected)
      return {0, 0, 0};
  }
  int64_t batches = 1, rows = 1, cols = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < p ? batches : d < q ? rows : cols) *= x.shape[d];
  Shape expectedShape;
  for (int64_t d : perm)
    expectedShape.push_back(x.shape[d]);
  if (expectedShape != y.shape || batches == 0 || rows == 0 || cols == 0)
    return {0, 0, 0};
  return {batches, rows, cols};
}

/// Output rows (all dims but the last) a tile of a general Transpose moves.
static constexpr int64_t kPermuteTileRows = 64;

int64_t FloatStep::permutedRows(const PlanRun &run) const {
  if (arithmetic != Arithmetic::Transpose || transposeBlocks(run)[0] ||
      inputs.size() != 1 || outputs.size() != 1 || inputs[0] < 0 ||
      outputs[0] < 0)
    return 0;
  const PlanTensor &x = run.tensor(inputs[0]), &y = run.tensor(outputs[0]);
  size_t rank = x.shape.size();
  if (x.layout != PlanLayout::Onnx || y.layout != PlanLayout::Onnx ||
      x.kind != y.kind || getElementByteSize(x.kind) != 4 || rank == 0 ||
      perm.size() != rank || y.shape.size() != rank)
    return 0;
  std::vector<bool> seen(rank, false);
  for (size_t d = 0; d < rank; ++d) {
    if (perm[d] < 0 || perm[d] >= int64_t(rank) || seen[perm[d]] ||
        y.shape[d] != x.shape[perm[d]])
      return 0;
    seen[perm[d]] = true;
  }
  int64_t elements = y.numElements();
  return elements ? elements / y.shape.back() : 0;
}

int64_t FloatStep::permuteTiles(const PlanRun &run) const {
  int64_t rows = permutedRows(run);
  return (rows + kPermuteTileRows - 1) / kPermuteTileRows;
}

void FloatStep::runPermute(PlanRun &run, int64_t tileBegin,
                           int64_t tileEnd) const {
  int64_t rows = permutedRows(run);
  int64_t rowBegin = std::min(rows, tileBegin * kPermuteTileRows);
  int64_t rowEnd = std::min(rows, tileEnd * kPermuteTileRows);
  const PlanTensor &x = run.tensor(inputs[0]), &yt = run.tensor(outputs[0]);
  size_t rank = x.shape.size();
  // The input stride of each output dim.
  std::vector<int64_t> inputStride(rank, 1), stride(rank);
  for (size_t d = rank - 1; d-- > 0;)
    inputStride[d] = inputStride[d + 1] * x.shape[d + 1];
  for (size_t d = 0; d < rank; ++d)
    stride[d] = inputStride[perm[d]];
  const auto *in = reinterpret_cast<const uint32_t *>(run.read(inputs[0]));
  auto *out = reinterpret_cast<uint32_t *>(run.write(outputs[0]));
  int64_t cols = yt.shape.back(), step = stride[rank - 1];
  // The coordinates of row rowBegin in the result's leading dims, then an
  // odometer over them (no division per row).
  std::vector<int64_t> at(rank, 0);
  int64_t offset = 0;
  for (int64_t d = int64_t(rank) - 2, rest = rowBegin; d >= 0; --d) {
    at[d] = rest % yt.shape[d];
    rest /= yt.shape[d];
    offset += at[d] * stride[d];
  }
  for (int64_t row = rowBegin; row < rowEnd; ++row) {
    const uint32_t *from = in + offset;
    uint32_t *to = out + row * cols;
    if (step == 1)
      std::memcpy(to, from, cols * sizeof(uint32_t));
    else
      for (int64_t c = 0; c < cols; ++c)
        to[c] = from[c * step];
    for (int64_t d = int64_t(rank) - 2; d >= 0; --d) {
      offset += stride[d];
      if (++at[d] < yt.shape[d])
        break;
      offset -= at[d] * stride[d];
      at[d] = 0;
    }
  }
}
