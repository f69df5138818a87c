//===- Int8ConvCases.h - The int8 conv tests' shapes ------*- C++ -*-===//
//
// The conv shapes every family is checked on (each kernel path: im2col,
// gathered rows, depthwise, pointwise; tails of the 8- and 16-lane
// epilogues), random operands, and running a conv as two threads would.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_UNITTESTS_RUNTIME_INT8CONVCASES_H
#define QOPT_UNITTESTS_RUNTIME_INT8CONVCASES_H

#include "qopt/Kernels/Int8Conv.h"

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace qopt {
namespace kernels {
namespace convtest {

struct Case {
  Int8ConvShape shape;
  int32_t inputZero;
};

inline Int8ConvShape shapeOf(int64_t batch, int64_t inH, int64_t inW,
                             int64_t inC, int64_t outC, int64_t k,
                             int64_t stride, int64_t pad, int64_t dilation,
                             int64_t groups, int64_t inputDilation = 1) {
  Int8ConvShape s;
  s.batch = batch;
  s.inH = inH;
  s.inW = inW;
  s.inC = inC;
  s.outC = outC;
  s.kernelH = s.kernelW = k;
  s.strideH = s.strideW = stride;
  s.padTop = s.padLeft = pad;
  s.padBottom = s.padRight = pad;
  s.dilationH = s.dilationW = dilation;
  s.groups = groups;
  s.inputDilationH = s.inputDilationW = inputDilation;
  return s;
}

inline const Case kCases[] = {
    {shapeOf(1, 5, 5, 3, 4, 3, 1, 1, 1, 1), 128}, // 3x3, pad 1
    {shapeOf(2, 7, 6, 8, 17, 1, 1, 0, 1, 1), 3},  // pointwise, batch 2
    {shapeOf(1, 9, 9, 5, 33, 3, 2, 1, 1, 1), 0},  // stride 2
    {shapeOf(1, 8, 8, 6, 6, 3, 1, 2, 2, 1), 200}, // dilation 2
    {shapeOf(1, 6, 7, 8, 12, 3, 1, 1, 1, 4), 17}, // 4 groups
    {shapeOf(1, 6, 6, 7, 7, 3, 1, 1, 1, 7), 128}, // depthwise
    // depthwise over whole vectors of channels and a tail: stride 2 and
    // batch 2; 5x5 dilated; a channel multiplier of 2 (grouped, not the
    // depthwise path)
    {shapeOf(2, 9, 8, 40, 40, 3, 2, 1, 1, 40), 100},
    {shapeOf(1, 7, 7, 35, 35, 5, 1, 2, 2, 35), 7},
    {shapeOf(1, 6, 5, 24, 48, 3, 1, 1, 1, 24), 128},
    // depthwise channels a 16-lane vector leaves 8 of (the 8-lane block),
    // and 8 and 5 of (then one at a time): ShuffleNet's 24, stride 2
    {shapeOf(1, 7, 6, 24, 24, 3, 2, 1, 1, 24), 30},
    {shapeOf(1, 5, 6, 29, 29, 3, 1, 1, 1, 29), 140},
    // depthwise rows with pixels whose windows lie inside the input (the
    // interior loop, taps unrolled for 3x3 and 5x5, counted for 7x7), of
    // whole vectors and with 8 or 4 channels left, dilated
    {shapeOf(1, 5, 12, 48, 48, 3, 1, 1, 1, 48), 128},
    {shapeOf(1, 9, 11, 20, 20, 5, 1, 2, 1, 20), 90},
    {shapeOf(1, 9, 10, 16, 16, 7, 1, 3, 1, 16), 3},
    {shapeOf(1, 6, 13, 24, 24, 3, 1, 2, 2, 24), 250},
    {shapeOf(1, 4, 4, 13, 50, 5, 1, 2, 1, 1), 255}, // 5x5, odd channels
    {shapeOf(1, 10, 3, 4, 9, 1, 3, 0, 1, 1), 1},    // 1x1 with stride 3
    {shapeOf(1, 9, 11, 3, 8, 7, 2, 3, 1, 1), 77},   // 7x7/2 stem, 3 channels
    {shapeOf(1, 5, 2, 4, 5, 3, 1, 1, 1, 1), 30},    // 2 wide, 3x3 kernel
    {shapeOf(1, 7, 9, 2, 3, 3, 2, 2, 2, 1), 140},   // dilation 2, stride 2
    // Input dilation (ConvTranspose): 4x4 with pads 2 over a stride-2
    // dilated input, a 3x3 over stride 3 with groups, a 1x1 (no GEMM on
    // the input as it lies).
    {shapeOf(1, 5, 4, 6, 10, 4, 1, 2, 1, 1, 2), 120},
    {shapeOf(2, 3, 4, 4, 6, 3, 1, 1, 1, 2, 3), 9},
    {shapeOf(1, 3, 3, 5, 7, 1, 1, 0, 1, 1, 2), 200},
    // Narrow rows: one GEMM takes several rows, across images.
    {shapeOf(3, 4, 4, 5, 20, 3, 1, 1, 1, 1), 9},
    {shapeOf(3, 3, 5, 8, 16, 1, 1, 0, 1, 1), 5}, // pointwise
    // Channel counts that leave 11-15 past a multiple of 16 (the 16-lane
    // epilogue's tails).
    {shapeOf(1, 4, 5, 6, 15, 3, 1, 1, 1, 1), 60},
    {shapeOf(1, 3, 4, 5, 27, 1, 1, 0, 1, 1), 90},
    {shapeOf(1, 3, 3, 4, 44, 3, 1, 1, 1, 1), 128},
    {shapeOf(1, 2, 5, 7, 29, 1, 1, 0, 1, 1), 33},
    {shapeOf(1, 3, 3, 3, 30, 3, 1, 1, 1, 1), 250},
    // Kernel rows of 120 and of 3 bytes inside the input: the im2col runs'
    // 32-byte moves (three, the last overlapping) and single bytes.
    {shapeOf(1, 4, 6, 40, 16, 3, 1, 1, 1, 1), 7},
    {shapeOf(1, 5, 6, 1, 16, 3, 1, 1, 1, 1), 3},
    // Gathered rows (the avx512vnni family reads the input where it lies):
    // kernel rows on the left and right padding (copied) and on the top
    // and bottom (the padding run), across images in one call; stride 2;
    // a 5x5 over a 3x3 input, every kernel row on both sides' padding; a
    // 7x7/2 stem of 4 channels (28-byte rows); runs per tap for dilation,
    // for groups of 16 channels (each group's runs further on) and for an
    // input dilation; a 1x1 with stride 2, one run a pixel.
    {shapeOf(2, 5, 6, 16, 20, 3, 1, 1, 1, 1), 9},
    {shapeOf(1, 9, 9, 8, 33, 3, 2, 1, 1, 1), 200},
    {shapeOf(1, 3, 3, 16, 16, 5, 1, 2, 1, 1), 77},
    {shapeOf(1, 7, 9, 4, 17, 7, 2, 3, 1, 1), 100},
    {shapeOf(1, 8, 8, 16, 12, 3, 1, 2, 2, 1), 50},
    {shapeOf(1, 6, 7, 32, 24, 3, 1, 1, 1, 2), 17},
    {shapeOf(1, 5, 4, 16, 10, 4, 1, 2, 1, 1, 2), 120},
    {shapeOf(1, 10, 9, 16, 20, 1, 2, 0, 1, 1), 3},
    // Runs of one and two k groups: taps of 4 and 8 channels a group
    // (ResNeXt's first stages), kernel rows of 2 x 2 channels.
    {shapeOf(1, 6, 5, 32, 16, 3, 1, 1, 1, 8), 90},
    {shapeOf(2, 5, 6, 16, 24, 3, 2, 1, 1, 2), 4},
    {shapeOf(1, 7, 6, 2, 18, 2, 1, 1, 1, 1), 160},
    // Pads wider than the kernel: edge columns with no tap inside.
    {shapeOf(1, 4, 5, 8, 16, 3, 1, 4, 1, 1), 33},
};

/// Random u8 activations and s8 weights (OIHW) for a conv of shape `s`.
inline std::pair<std::vector<uint8_t>, std::vector<int8_t>>
randomOperands(const Int8ConvShape &s, std::mt19937 &rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> x(s.batch * s.inH * s.inW * s.inC);
  for (uint8_t &v : x)
    v = uint8_t(byte(rng));
  std::vector<int8_t> w(s.outC * (s.inC / s.groups) * s.kernelH * s.kernelW);
  for (int8_t &v : w)
    v = int8_t(byte(rng) - 128);
  return {std::move(x), std::move(w)};
}

/// Runs `conv` on `x` (and its pair table's operand and its residual, if
/// any) into `y` in two calls, as two threads would split its rows, with
/// 64-byte aligned scratch.
inline void runInTwoCalls(const Int8Conv &conv, const uint8_t *x, void *y,
                          const uint8_t *pairOperand = nullptr,
                          const uint8_t *residual = nullptr) {
  std::vector<char> scratch(conv.getScratchBytes() + 64);
  void *aligned = reinterpret_cast<void *>(
      (reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t(63));
  int64_t half = conv.getNumRows() / 2;
  conv.run(x, residual, y, 0, half, aligned, pairOperand);
  conv.run(x, residual, y, half, conv.getNumRows(), aligned, pairOperand);
}

/// A 1x1 conv on one channel of 256 pixels, x = 0..255, every weight 1:
/// output channel c of pixel x is (x - zx) * scale[c] + bias[c].
struct ChannelSweep {
  Int8ConvShape shape;
  std::vector<uint8_t> x;
  std::vector<int8_t> w;

  explicit ChannelSweep(int64_t channels) : x(256), w(channels, 1) {
    shape.inC = 1;
    shape.inW = 256;
    shape.outC = channels;
    for (int i = 0; i < 256; ++i)
      x[i] = uint8_t(i);
  }
};

} // namespace convtest
} // namespace kernels
} // namespace qopt

#endif // QOPT_UNITTESTS_RUNTIME_INT8CONVCASES_H
