//===- ConvInputRows.cpp - The rows an int8 conv's GEMM reads ------------===//
//
// Int8Conv's input side: im2col rows (a copy of each output pixel's taps)
// for the families that read A in memory, and gathered runs (pointers to
// kernel rows or taps where they lie in the input) for those with
// gemmU8S8Gathered; the scratch both take.
//
//===----------------------------------------------------------------------===//

#include "CopyRunsKernels.h"
#include "qopt/Kernels/CopyRun.h"
#include "qopt/Kernels/Int8Conv.h"

#include <algorithm>
#include <cstring>

using namespace qopt;
using namespace qopt::kernels;

namespace {

/// Fills n bytes with `value`, skipping the call for none.
inline void fillBytes(uint8_t *dst, uint8_t value, int64_t n) {
  if (n > 0)
    std::memset(dst, value, n);
}

} // namespace

size_t Int8Conv::getRowsScratchBytes() const {
  int64_t rows = getRowsPerCall(), pixels = rows * shape.outW();
  if (isPointwise())
    return 0;
  if (!gathered)
    return alignUp(size_t(pixels * depth));
  return alignUp(size_t(pixels * runsPerPixel) * sizeof(void *)) +
         alignUp(size_t(rows * shape.kernelH * edgeColumns * runBytes));
}

std::pair<int64_t, int64_t> Int8Conv::getInsideColumns() const {
  int64_t outW = shape.outW();
  int64_t inside =
      std::min(outW, (shape.padLeft + shape.strideW - 1) / shape.strideW);
  int64_t lastW = (shape.kernelW - 1) * shape.dilationW;
  int64_t insideEnd =
      shape.inW - lastW + shape.padLeft <= 0
          ? inside
          : std::max(inside, std::min(outW, (shape.inW - lastW + shape.padLeft -
                                             1) / shape.strideW +
                                                1));
  return {inside, insideEnd};
}

const uint8_t *Int8Conv::inputRowAt(const uint8_t *input, int64_t n, int64_t oh,
                                    int64_t ky) const {
  // On the dilated input; rows between the input's are its zero point.
  int64_t dilatedH = oh * shape.strideH - shape.padTop + ky * shape.dilationH;
  int64_t ih = dilatedH / shape.inputDilationH;
  if (dilatedH < 0 || dilatedH % shape.inputDilationH || ih >= shape.inH)
    return nullptr;
  return input + (n * shape.inH + ih) * shape.inW * shape.inC;
}

void Int8Conv::copyKernelRow(uint8_t *dst, const uint8_t *inputRow,
                             int64_t firstW) const {
  // Taps [begin, end) inside the input; none when a pad is wider than the
  // kernel row, or the row starts past the input.
  // Adjacent taps: one group, so a tap is all inC channels.
  const uint8_t zero = uint8_t(epilogue.inputZero);
  int64_t tapBytes = shape.inC;
  int64_t begin =
      std::min<int64_t>(shape.kernelW, std::max<int64_t>(0, -firstW));
  int64_t end =
      std::max(begin, std::min<int64_t>(shape.kernelW, shape.inW - firstW));
  fillBytes(dst, zero, begin * tapBytes);
  if (end > begin)
    copyRun(dst + begin * tapBytes, inputRow + (firstW + begin) * shape.inC,
            (end - begin) * tapBytes);
  fillBytes(dst + end * tapBytes, zero, (shape.kernelW - end) * tapBytes);
}

void Int8Conv::fillRow(const uint8_t *input, int64_t group, int64_t n,
                       int64_t oh, uint8_t *rows) const {
  const uint8_t zero = uint8_t(epilogue.inputZero);
  // With one group and no dilation along W, a kernel row's taps are
  // adjacent pixels: one copy of its taps inside the input, padding around.
  bool adjacentTaps = shape.dilationW == 1 && shape.inputDilationW == 1 &&
                      groupInC == shape.inC;
  int64_t tapRowBytes = shape.kernelW * groupInC;
  int64_t outW = shape.outW();
  // Output columns whose whole kernel row lies inside the input: [inside,
  // insideEnd). Kernel row by kernel row, those are copies of one size a
  // fixed step apart.
  auto [inside, insideEnd] = getInsideColumns();
  for (int64_t ky = 0; ky < shape.kernelH; ++ky) {
    uint8_t *tapRow = rows + ky * tapRowBytes;
    const uint8_t *inputRow = inputRowAt(input, n, oh, ky);
    if (!inputRow) {
      for (int64_t ow = 0; ow < outW; ++ow)
        fillBytes(tapRow + ow * depth, zero, tapRowBytes);
      continue;
    }
    inputRow += group * groupInC;
    auto column = [&](int64_t ow) {
      uint8_t *dst = tapRow + ow * depth;
      int64_t firstW = ow * shape.strideW - shape.padLeft;
      if (adjacentTaps)
        return copyKernelRow(dst, inputRow, firstW);
      for (int64_t kx = 0; kx < shape.kernelW; ++kx, dst += groupInC) {
        int64_t dilatedW = firstW + kx * shape.dilationW;
        int64_t iw = dilatedW / shape.inputDilationW;
        if (dilatedW < 0 || dilatedW % shape.inputDilationW || iw >= shape.inW)
          fillBytes(dst, zero, groupInC);
        else
          copyRun(dst, inputRow + iw * shape.inC, groupInC);
      }
    };
    for (int64_t ow = 0; ow < inside; ++ow)
      column(ow);
    if (adjacentTaps) {
      const uint8_t *src =
          inputRow + (inside * shape.strideW - shape.padLeft) * shape.inC;
      uint8_t *dst = tapRow + inside * depth;
      int64_t srcStep = shape.strideW * shape.inC;
      if (packed[0].getIsa() != Isa::Scalar && insideEnd > inside) {
        // Every family but scalar has AVX2: 32-byte moves.
        copyruns::avx2(dst, depth, src, srcStep, tapRowBytes,
                       insideEnd - inside);
      } else {
        for (int64_t ow = inside; ow < insideEnd;
             ++ow, src += srcStep, dst += depth)
          copyRun(dst, src, tapRowBytes);
      }
    } else {
      for (int64_t ow = inside; ow < insideEnd; ++ow)
        column(ow);
    }
    for (int64_t ow = insideEnd; ow < outW; ++ow)
      column(ow);
  }
}

void Int8Conv::fillRuns(const uint8_t *input, int64_t n, int64_t oh,
                        const uint8_t **runs, uint8_t *edges) const {
  int64_t outW = shape.outW(), inC = shape.inC;
  const uint8_t *padding = paddingRun.data();
  auto [inside, insideEnd] = getInsideColumns();
  for (int64_t ky = 0; ky < shape.kernelH; ++ky) {
    const uint8_t *inputRow = inputRowAt(input, n, oh, ky);
    if (kernelRows) {
      // Run ky of each pixel: its kernel row's taps, adjacent input pixels;
      // the columns whose row reaches into the padding from a copy with
      // the zero point around the part inside.
      const uint8_t **run = runs + ky;
      if (!inputRow) {
        for (int64_t ow = 0; ow < outW; ++ow)
          run[ow * runsPerPixel] = padding;
        continue;
      }
      for (int64_t ow = inside; ow < insideEnd; ++ow)
        run[ow * runsPerPixel] =
            inputRow + (ow * shape.strideW - shape.padLeft) * inC;
      uint8_t *edge = edges + ky * edgeColumns * runBytes;
      auto edgeColumn = [&](int64_t ow) {
        copyKernelRow(edge, inputRow, ow * shape.strideW - shape.padLeft);
        run[ow * runsPerPixel] = edge;
        edge += runBytes;
      };
      for (int64_t ow = 0; ow < inside; ++ow)
        edgeColumn(ow);
      for (int64_t ow = insideEnd; ow < outW; ++ow)
        edgeColumn(ow);
      continue;
    }
    // One run per tap: its input pixel's channels, or the padding.
    for (int64_t ow = 0; ow < outW; ++ow) {
      const uint8_t **run = runs + ow * runsPerPixel + ky * shape.kernelW;
      int64_t firstW = ow * shape.strideW - shape.padLeft;
      for (int64_t kx = 0; kx < shape.kernelW; ++kx) {
        int64_t dilatedW = firstW + kx * shape.dilationW;
        int64_t iw = dilatedW / shape.inputDilationW;
        bool tapInside = inputRow && dilatedW >= 0 &&
                         dilatedW % shape.inputDilationW == 0 && iw < shape.inW;
        run[kx] = tapInside ? inputRow + iw * inC : padding;
      }
    }
  }
}
