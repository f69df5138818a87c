//===- Int8Conv.h - int8 convolution with its epilogue, NHWC ----*- C++ -*-===//
//
// The conv step of the CPU plan. Activations are NHWC and stored as u8: an
// s8 tensor with zero point z is the same numbers + 128 with zero point
// z + 128, so one kernel serves both (the plan converts at its borders).
// Weights are s8, per output channel or per tensor, with a zero point zw[c]
// (0 for symmetric weights; u8 weights are the same numbers - 128 with zero
// point zw - 128).
//
//   acc[p][c]  = sum over taps and input channels of x_u8 * w    (exact s32)
//   real[p][c] = scale[c] * (acc[p][c] - zx * wsum[c]
//                            - zw[c] * (xsum[p] - K * zx)) + bias[c]  (float)
//   then, in the unit's order: + residual (dequantized), activation, and
//   y = saturate(nearbyint(real / sy) + zy), or real itself for a float
//   result; an int8 result may go through a 256-entry table last (a
//   requantize or activation table step fused into the conv).
//
// where xsum[p] is the sum of the K input bytes pixel p's taps read (its
// im2col row). The zw term is exact in s32 and costs K adds per pixel, so
// symmetric weights skip it.
//
// Padding reads the input's zero point (real 0), so the input zero point's
// term zx * wsum[c] is the same for every output pixel and comes from the
// packed weights' channel sums; the weight zero point's term differs per
// pixel.
//
// The arithmetic after `acc` follows the reference interpreter's fused
// units step for step (float32 values, activations computed in double,
// except sigmoid and SiLU: one float sequence, lib/Kernels/
// SigmoidFloat.h, within 4 float ulp), so results match it within one step
// of the output grid.
//
// An int8 gemm step (Plan.h) runs a 1x1 conv over M x 1 pixels: its x, y
// and residual are then M rows of K or N, NHWC's layout for [1, M, 1, K].
//
// The epilogue runs 8 or 16 channels at a time where the machine has AVX2 and
// the activation is none, relu, leaky relu, clip, sigmoid or SiLU, giving the
// scalar epilogue's bits (lib/Kernels/EpilogueKernels.h); the others
// (tanh, hard sigmoid and swish) run scalar on every ISA.
//
// Lowering: a 1x1 convolution with unit stride and no padding is one GEMM on
// the input as it lies; a depthwise one (a channel per group) sums each
// channel's taps with the channels in vector lanes; any other reads its
// input through an im2col buffer (K = kh * kw * cin bytes per output pixel).
// Narrow output rows are taken several at a time, so each GEMM has about
// kPixelsPerCall rows. The tiles threads share are such row groups (of sizes
// that differ by one at most), and in ungrouped layers of fewer than 4 row
// groups also blocks of the output channels (64 or more each, but the last):
// there the weights outweigh the activations, and each thread reads its share.
//
// An input dilation d reads the input as if d - 1 pixels of its zero point
// lay between its pixels: a ConvTranspose with stride d is such a
// convolution (flipped, transposed weights; pads d' * (k - 1) - p).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_KERNELS_INT8CONV_H
#define QOPT_KERNELS_INT8CONV_H

#include "qopt/Kernels/Int8Gemm.h"

#include <algorithm>
#include <optional>
#include <vector>

namespace qopt {
namespace kernels {

struct Int8ConvShape {
  int64_t batch = 1, inH = 1, inW = 1, inC = 1;
  int64_t outC = 1, kernelH = 1, kernelW = 1;
  int64_t strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  int64_t groups = 1;
  /// Input pixels this far apart, zero points between (transposed convs).
  int64_t inputDilationH = 1, inputDilationW = 1;

  /// The input's extent with the zero points between its pixels.
  int64_t dilatedInH() const { return (inH - 1) * inputDilationH + 1; }
  int64_t dilatedInW() const { return (inW - 1) * inputDilationW + 1; }
  int64_t outH() const {
    return (dilatedInH() + padTop + padBottom - dilationH * (kernelH - 1) - 1) /
               strideH +
           1;
  }
  int64_t outW() const {
    return (dilatedInW() + padLeft + padRight - dilationW * (kernelW - 1) - 1) /
               strideW +
           1;
  }
};

enum class Activation {
  None,
  Relu,
  LeakyRelu, ///< alpha
  Clip,      ///< alpha = min, beta = max
  Sigmoid,
  Tanh,
  HardSigmoid, ///< alpha, beta
  HardSwish,
  Silu,
};

/// A pair table's arithmetic, when it has one: the requantizing Add of two
/// u8 bytes (QAT's ResNet blocks: Add, maybe Relu, Q on its own grid),
///
///   out = clamp(nearbyint(act(float(v - zeroV) * scaleV +
///                             float(w - zeroW) * scaleW) / outputScale)
///               + outputZero, 0, 255)
///
/// with act clamping to [low, high] (none: infinite bounds; relu: low 0),
/// each a float operation. The vector epilogue computes it in the conv's
/// registers instead of looking 65,536 entries up; a conv takes it only
/// when it gives its pair table's every entry (reproduces()).
struct RequantizedAdd {
  float scaleV = 1, scaleW = 1, low = 0, high = 0, outputScale = 1;
  int32_t zeroV = 0, zeroW = 0, outputZero = 0;

  /// Whether every zero point is a stored u8 value (0..255), which the
  /// vector epilogue's float arithmetic on them needs.
  bool hasStoredZeroPoints() const;
  /// One pair, operation for operation as the vector epilogue computes it
  /// (zero points in 0..255).
  uint8_t apply(uint8_t v, uint8_t w) const;
  /// Whether the zero points are stored values and apply(v, w) is
  /// table[v * 256 + w] for every pair.
  bool reproduces(llvm::ArrayRef<uint8_t> table) const;
  /// The same with v and w's roles swapped (the table's operands read the
  /// other way round).
  RequantizedAdd swapped() const;
};

struct Int8Epilogue {
  /// Per output channel (one value = per tensor): input scale * weight
  /// scale.
  std::vector<float> scale;
  /// Per output channel real bias, or empty.
  std::vector<float> bias;
  /// The input's zero point as stored (u8).
  int32_t inputZero = 0;
  /// Per output channel (one value = per tensor) zero point of the s8
  /// weights, in [-128, 127]; empty for 0.
  std::vector<int32_t> weightZero;
  Activation activation = Activation::None;
  float alpha = 0, beta = 0;
  /// Residual: a u8 NHWC tensor of the output's shape on its own grid.
  bool hasResidual = false;
  bool residualAfterActivation = false;
  float residualScale = 1;
  int32_t residualZero = 0;
  /// Output grid (u8); a float result when outputScale is 0.
  float outputScale = 0;
  int32_t outputZero = 0;
  /// 256 entries each stored output byte is looked up in, in place after
  /// the epilogue wrote a batch of rows (a table step that read the conv's
  /// result alone, fused into it), or empty.
  std::vector<uint8_t> outputTable;
  /// 65,536 entries of a two-operand table step that read the conv's
  /// result alone (a requantizing Add or Mul with another int8 tensor of
  /// its shape), fused into it: each stored byte v becomes
  /// pairTable[v * 256 + w], with w the byte at the same place of the
  /// step's last input (NHWC, the result's shape); or empty. Never with an
  /// outputTable (setPairTable composes the two).
  std::vector<uint8_t> pairTable;
  /// The pair table's arithmetic (RequantizedAdd), when it has it.
  std::optional<RequantizedAdd> pairArithmetic;
};

/// An input grid known only when the conv runs (dynamic quantization, as
/// DynamicQuantizeLinear makes it): its zero point and, per output channel,
/// the scale and zero term that replace the epilogue's for one call.
/// fillRuntimeGrid computes them; the conv must have one group and be
/// built with inputZero 0 and the weight scales as its epilogue's scale.
struct Int8RuntimeGrid {
  int32_t inputZero = 0;
  const float *scale = nullptr;      ///< outC values: s_x * s_w[c]
  const int32_t *zeroTerm = nullptr; ///< outC values: z_x * sum of w[c]
};

class Int8Conv {
public:
  /// Why `shape` and `epilogue` cannot make a conv (a size out of range,
  /// channels the groups do not divide, an empty output, per-channel
  /// vectors of the wrong length, a weight zero point out of range or with
  /// a depth whose sums could overflow s32, an output table of other than
  /// 256 entries or a pair table of other than 65,536, either on a float
  /// result, or both), or success; the constructor assumes they can.
  static llvm::Error checkParams(const Int8ConvShape &shape,
                                 const Int8Epilogue &epilogue);
  /// weights: OIHW s8 (O = outC, I = inC / groups), as ONNX stores them.
  Int8Conv(Isa isa, const Int8ConvShape &shape, const int8_t *weights,
           Int8Epilogue epilogue);

  const Int8ConvShape &getShape() const { return shape; }
  const Int8Epilogue &getEpilogue() const { return epilogue; }
  /// Looks every stored output byte up in `table` (256 entries) too, after
  /// any table the epilogue has: outputTable[v] becomes table[old[v]] (and
  /// each pairTable entry e, table[e]).
  void composeOutputTable(llvm::ArrayRef<uint8_t> table);
  /// Looks every stored output byte v up in `table` (65,536 entries) with
  /// the pair operand's byte w, at v * 256 + w, after any output table,
  /// which it absorbs. An int8 result with no pair table yet.
  void setPairTable(std::vector<uint8_t> table);
  /// The pair table's arithmetic, for the vector epilogue to compute it in
  /// place of the lookups; false, leaving the conv as it was, unless
  /// `add` reproduces the pair table (set after any output table).
  bool setPairArithmetic(const RequantizedAdd &add);
  /// Whether the vector epilogue computes the pair table's arithmetic
  /// (no lookups after it): it has one, and no residual.
  bool hasPairInEpilogue() const;
  /// The weights as given (OIHW s8), unpacked from the kernel's layout.
  std::vector<int8_t> getWeights() const;
  /// Output rows (batch * outH).
  int64_t getNumRows() const { return shape.batch * shape.outH(); }
  /// The unit of parallel work: a group of output rows (one GEMM's worth)
  /// times a block of output channels. Layers with few rows (a network's
  /// last stages) are split along their channels too, so that each thread
  /// reads only its share of the weights.
  int64_t getNumTiles() const { return rowGroups * channelBlocks; }
  /// Output rows run() gives one GEMM: enough for kPixelsPerCall pixels.
  /// No row group of the tiles has more.
  int64_t getRowsPerCall() const;
  /// Scratch bytes one caller of run() or runTiles() needs.
  size_t getScratchBytes() const;

  /// Computes output rows [rowBegin, rowEnd). `output` is u8 NHWC, or float
  /// NHWC when the epilogue's outputScale is 0; `residual` (u8 NHWC) when
  /// the epilogue has one, and `pairOperand` (u8 NHWC, the output's shape)
  /// when it has a pair table. `scratch` holds getScratchBytes() bytes,
  /// 64-byte aligned.
  void run(const uint8_t *input, const uint8_t *residual, void *output,
           int64_t rowBegin, int64_t rowEnd, void *scratch,
           const uint8_t *pairOperand = nullptr) const;
  /// Computes tiles [tileBegin, tileEnd) (see getNumTiles), as run() does.
  void runTiles(const uint8_t *input, const uint8_t *residual, void *output,
                int64_t tileBegin, int64_t tileEnd, void *scratch,
                const uint8_t *pairOperand = nullptr) const;

  /// Tile t covers row group t / (channel blocks) and channel block
  /// t % (channel blocks). Calls f(rowBegin, rowEnd, blockBegin, blockEnd)
  /// for tiles [tileBegin, tileEnd), one row group's adjacent blocks at a
  /// time; a row group is getRowsPerCall() rows at most.
  template <typename F>
  void forEachTileRun(int64_t tileBegin, int64_t tileEnd, F &&f) const {
    // Row groups of sizes that differ by one at most (14 rows in 4 groups:
    // 3, 4, 3, 4), so that threads get equal shares. Consecutive tiles of
    // one row group share its im2col rows.
    for (int64_t tile = tileBegin; tile < tileEnd;) {
      int64_t group = tile / channelBlocks, blockBegin = tile % channelBlocks;
      int64_t blockEnd = std::min(channelBlocks, blockBegin + tileEnd - tile);
      f(group * getNumRows() / rowGroups,
        (group + 1) * getNumRows() / rowGroups, blockBegin, blockEnd);
      tile += blockEnd - blockBegin;
    }
  }
  /// The output channels [first, second) of channel blocks
  /// [blockBegin, blockEnd): all of them, across groups, for all blocks.
  std::pair<int64_t, int64_t> getBlockChannels(int64_t blockBegin,
                                               int64_t blockEnd) const;
  /// Rows [rowBegin, rowEnd), channel blocks [blockBegin, blockEnd); on
  /// `grid` when the input's grid is known only now.
  void runRows(const uint8_t *input, const uint8_t *residual, void *output,
               int64_t rowBegin, int64_t rowEnd, int64_t blockBegin,
               int64_t blockEnd, void *scratch,
               const uint8_t *pairOperand = nullptr,
               const Int8RuntimeGrid *grid = nullptr) const;
  /// Whether the conv can run on a runtime grid: one group, not depthwise,
  /// input zero point 0 and no tables or residual.
  bool takesRuntimeGrid() const;
  /// The per-channel terms of the input grid (inputScale, inputZero) into
  /// `scales` and `zeroTerms` (outC values each): inputScale times the
  /// epilogue's scale of the channel, in float as ONNX Runtime multiplies
  /// them, and inputZero times the channel's weight sum.
  Int8RuntimeGrid fillRuntimeGrid(float inputScale, int32_t inputZero,
                                  float *scales, int32_t *zeroTerms) const;

private:
  bool isPointwise() const;
  /// Scratch parts start 64 bytes apart (the GEMMs' aligned accesses).
  static constexpr size_t kScratchAlignment = 64;
  static size_t alignUp(size_t n) {
    return (n + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment;
  }
  /// Scratch for a call's im2col rows or gathered runs, 64-byte aligned.
  size_t getRowsScratchBytes() const;
  /// Input row ky of output row oh's window in image n (on the input as
  /// dilated), or null where it falls on the padding or between dilated
  /// rows.
  const uint8_t *inputRowAt(const uint8_t *input, int64_t n, int64_t oh,
                            int64_t ky) const;
  /// A kernel row of adjacent taps (one group: inC bytes each) from input
  /// column firstW of inputRow on: the taps inside the input copied, those
  /// on the padding filled with the input zero point.
  void copyKernelRow(uint8_t *dst, const uint8_t *inputRow,
                     int64_t firstW) const;
  void fillRow(const uint8_t *input, int64_t group, int64_t n, int64_t oh,
               uint8_t *rows) const;
  /// Output row oh of image n as runs for the gathered GEMM, runsPerPixel
  /// pointers a pixel: to the input where the run lies inside it, else to
  /// paddingRun (a run all padding) or to a copy in `edges` (kernelH *
  /// edgeColumns runs, for a kernel row partly on the padding).
  void fillRuns(const uint8_t *input, int64_t n, int64_t oh,
                const uint8_t **runs, uint8_t *edges) const;
  /// The output columns [first, second) whose kernel rows lie inside the
  /// input (not on its left or right padding).
  std::pair<int64_t, int64_t> getInsideColumns() const;
  /// The channels a GEMM covers: `count` of `group` from its `first`; acc
  /// holds `count` values per pixel.
  struct Channels {
    int64_t group, first, count;
  };
  /// acc[p][c] -= zw[c] * (xsum[p] - K * zx) for the weights' zero points,
  /// on the GEMM's `pixels` rows of A (`lda` apart).
  void subtractWeightZeroTerms(const uint8_t *a, int64_t lda, int64_t pixels,
                               Channels channels, int32_t inputZero,
                               int32_t *acc) const;
  /// The output tables of the pixels [pixelBase, pixelBase + pixels), on
  /// the channel blocks' bytes, in place.
  void lookUpRows(void *output, int64_t pixelBase, int64_t pixels,
                  int64_t blockBegin, int64_t blockEnd) const;
  void lookUpPairs(void *output, const uint8_t *pairOperand, int64_t pixelBase,
                   int64_t pixels, int64_t blockBegin, int64_t blockEnd) const;
  void finishPixels(const int32_t *acc, Channels channels,
                    const uint8_t *residual, void *output, int64_t pixelBase,
                    int64_t pixels, const uint8_t *pairOperand,
                    const Int8RuntimeGrid *grid = nullptr) const;
  /// runRows for a depthwise conv: the sums of the blocks' channels at
  /// once, channels in vector lanes (DepthwiseKernels.h), then the
  /// epilogue.
  void runDepthwiseRows(const uint8_t *input, const uint8_t *residual,
                        void *output, int64_t rowBegin, int64_t rowEnd,
                        int64_t blockBegin, int64_t blockEnd, void *scratch,
                        const uint8_t *pairOperand) const;

  /// Pixels worth one GEMM call: many register tiles of rows, so that a
  /// 7-pixel row (ResNet's last stage) is not a tile of 6 and one of 1,
  /// and few of the amx family's 32-row blocks are short (copied, stored
  /// through buffers): a 56-wide layer's calls are 4 rows, 7 whole blocks.
  /// On a Xeon with AMX, ResNet-18 QAT's plan ran 12% faster than with 48
  /// pixels (amx), and 2-4% with avx512vnni; avx2 unchanged.
  static constexpr int64_t kPixelsPerCall = 192;

  Int8ConvShape shape;
  Int8Epilogue epilogue;
  int64_t groupInC, groupOutC, depth;    ///< per group
  std::vector<PackedInt8Weights> packed; ///< one per group
  /// Tiles: groups of getRowsPerCall() rows, blocks of panelsPerBlock
  /// weight panels (one group of channels) or of groupsPerBlock groups (a
  /// grouped conv); all of them but in layers with few row groups.
  int64_t rowGroups = 1, channelBlocks = 1, panelsPerBlock = 1,
          groupsPerBlock = 1;
  /// The vector epilogue's per-channel constants (all outC channels):
  /// inputZero * the weight channel's sum, and the scale; empty when the
  /// scalar epilogue runs (tanh, hard sigmoid or swish, clip with NaN
  /// bounds, or no AVX2).
  std::vector<int32_t> zeroTerms;
  std::vector<float> channelScales;
  /// A depthwise conv (one input and one output channel per group, no
  /// input dilation, symmetric weights) runs its own sums: the weights
  /// tap-major ([tap][channel]), each channel's weight sum and the input
  /// zero point times it.
  bool depthwise = false;
  std::vector<int32_t> depthwiseWeights, depthwiseSums, depthwiseBase;
  /// The GEMM reads the input where it lies, through pointers to runs of
  /// bytes (gemmU8S8Gathered), instead of im2col rows: runsPerPixel runs
  /// of runBytes each, a kernel row's (kernelRows: when its taps are
  /// adjacent input pixels) or a tap's. Runs on padding read paddingRun (the
  /// input zero point); edgeColumns output columns a row have kernel rows
  /// partly on it, copied.
  bool gathered = false, kernelRows = false;
  int64_t runsPerPixel = 0, runBytes = 0, edgeColumns = 0;
  std::vector<uint8_t> paddingRun;
};

} // namespace kernels
} // namespace qopt

#endif // QOPT_KERNELS_INT8CONV_H
