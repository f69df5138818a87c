//===- Int8Conv.cpp - int8 convolution: tiles, GEMM, epilogue ------------===//
//
// The rows the GEMM reads (im2col copies or gathered runs) are made in
// ConvInputRows.cpp.
//
//===----------------------------------------------------------------------===//

#include "qopt/Kernels/Int8Conv.h"
#include "DepthwiseKernels.h"
#include "EpilogueKernels.h"
#include "SigmoidFloat.h"
#include "qopt/Kernels/ActivationMath.h"
#include "qopt/Kernels/ByteTable.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

using namespace qopt;
using namespace qopt::kernels;

namespace {

/// One value through the unit's activation: as the reference's activation
/// kernels compute it (in double from the stored float, stored as float),
/// except sigmoid and SiLU, which follow SigmoidFloat.h as the vector
/// epilogue does.
float activate(float v, Activation a, float alpha, float beta) {
  double x = v;
  switch (a) {
  case Activation::None:
    return v;
  case Activation::Relu:
    return float(act::relu(x));
  case Activation::LeakyRelu:
    return float(act::leakyRelu(x, alpha));
  case Activation::Clip:
    return float(act::clip(x, alpha, beta));
  case Activation::Sigmoid:
    return sigmoid::scalar(v);
  case Activation::Tanh:
    return float(std::tanh(x));
  case Activation::HardSigmoid:
    return float(act::hardSigmoid(x, alpha, beta));
  case Activation::HardSwish:
    return float(act::hardSwish(x));
  case Activation::Silu:
    return sigmoid::silu(v);
  }
  return v;
}

/// The vector epilogue's name of an activation it runs.
kernels::epilogue::VectorActivation toVectorActivation(Activation a) {
  using kernels::epilogue::VectorActivation;
  switch (a) {
  case Activation::Relu:
    return VectorActivation::Relu;
  case Activation::LeakyRelu:
    return VectorActivation::LeakyRelu;
  case Activation::Clip:
    return VectorActivation::Clip;
  case Activation::Sigmoid:
    return VectorActivation::Sigmoid;
  case Activation::Silu:
    return VectorActivation::Silu;
  default:
    return VectorActivation::None;
  }
}

/// saturate(nearbyint(quotient) + zero) onto u8, NaN -> 0.
uint8_t roundOntoU8(float quotient, int32_t zero) {
  float r = std::nearbyintf(quotient);
  if (std::isnan(r))
    return 0;
  double q = double(r) + zero;
  return q <= 0 ? 0 : q >= 255 ? 255 : uint8_t(q);
}

/// Epilogues tests put in place of a family's (replaceForTesting).
std::atomic<kernels::epilogue::Kernel>
    epiloguesForTesting[size_t(Isa::Amx) + 1];

} // namespace

uint8_t RequantizedAdd::apply(uint8_t v, uint8_t w) const {
  float y = float(int32_t(v) - zeroV) * scaleV;
  y = y + float(int32_t(w) - zeroW) * scaleW;
  y = y < low ? low : y;
  y = high < y ? high : y;
  float q = std::nearbyintf(y / outputScale) + float(outputZero);
  // As maxps and minps clamp it: NaN -> 0.
  return uint8_t(sigmoid::minLane(sigmoid::maxLane(q, 0.0f), 255.0f));
}

bool RequantizedAdd::hasStoredZeroPoints() const {
  for (int32_t zero : {zeroV, zeroW, outputZero})
    if (zero < 0 || zero > 255)
      return false;
  return true;
}

bool RequantizedAdd::reproduces(llvm::ArrayRef<uint8_t> table) const {
  if (table.size() != 65536 || !hasStoredZeroPoints())
    return false;
  for (unsigned v = 0; v < 256; ++v)
    for (unsigned w = 0; w < 256; ++w)
      if (table[v << 8 | w] != apply(uint8_t(v), uint8_t(w)))
        return false;
  return true;
}

RequantizedAdd RequantizedAdd::swapped() const {
  RequantizedAdd other = *this;
  std::swap(other.scaleV, other.scaleW);
  std::swap(other.zeroV, other.zeroW);
  return other;
}

kernels::epilogue::Kernel kernels::epilogue::forFamily(Isa isa) {
  if (Kernel replaced = epiloguesForTesting[size_t(isa)])
    return replaced;
  return isa == Isa::Avx512Vnni || isa == Isa::Amx ? avx512 : avx2;
}

void kernels::epilogue::replaceForTesting(Isa isa, Kernel kernel) {
  epiloguesForTesting[size_t(isa)] = kernel;
}

Int8Conv::Int8Conv(Isa isa, const Int8ConvShape &shape, const int8_t *weights,
                   Int8Epilogue epilogue)
    : shape(shape), epilogue(std::move(epilogue)),
      groupInC(shape.inC / shape.groups), groupOutC(shape.outC / shape.groups),
      depth(shape.kernelH * shape.kernelW * groupInC) {
  // OIHW -> per group, [channel][ky][kx][ci]: the order im2col writes.
  std::vector<int8_t> reordered(groupOutC * depth);
  int64_t taps = shape.kernelH * shape.kernelW;
  for (int64_t g = 0; g < shape.groups; ++g) {
    for (int64_t o = 0; o < groupOutC; ++o)
      for (int64_t ci = 0; ci < groupInC; ++ci)
        for (int64_t t = 0; t < taps; ++t)
          reordered[o * depth + t * groupInC + ci] =
              weights[((g * groupOutC + o) * groupInC + ci) * taps + t];
    packed.emplace_back(isa, reordered.data(), groupOutC, depth, depth);
  }
  const Int8Epilogue &e = this->epilogue;
  depthwise = shape.groups > 1 && groupInC == 1 && groupOutC == 1 &&
              shape.inputDilationH == 1 && shape.inputDilationW == 1 &&
              e.weightZero.empty();
  // Few row groups (a network's last stages): tiles of blocks of the
  // output channels too, up to 4 tiles a layer, so that threads split the
  // weights. One group of channels: blocks of panels (64 or more channels
  // each, but the last). A grouped conv (RegNet's and ResNeXt's 3x3):
  // blocks of whole groups, each group still one GEMM; with one block,
  // RegNetX-400MF's 14x14 and 7x7 stages ran no faster on 2 threads, nor
  // did MobileNetV2's depthwise convs there.
  int64_t numPanels = packed[0].getNumPanels();
  rowGroups = (getNumRows() + getRowsPerCall() - 1) / getRowsPerCall();
  panelsPerBlock = numPanels;
  groupsPerBlock = shape.groups;
  int64_t blocksWanted = (4 + rowGroups - 1) / rowGroups;
  if (shape.groups == 1 && rowGroups < 4) {
    int64_t blocks =
        std::min(blocksWanted, std::max<int64_t>(1, numPanels / 4));
    panelsPerBlock = (numPanels + blocks - 1) / blocks;
  } else if (shape.groups > 1 && !depthwise && rowGroups < 4) {
    int64_t blocks = std::min(blocksWanted, shape.groups);
    groupsPerBlock = (shape.groups + blocks - 1) / blocks;
  } else if (depthwise && rowGroups < 4) {
    // Its channels are its vector lanes: blocks of 64 or more (but the
    // last), whole vectors of 16. Smaller ones (ShuffleNetV2 x0.5's 48
    // channels in 3) ran 7% slower on 2 threads than one block.
    int64_t blocks =
        std::min(blocksWanted, std::max<int64_t>(1, shape.outC / 64));
    groupsPerBlock = ((shape.outC + blocks - 1) / blocks + 15) / 16 * 16;
  }
  channelBlocks = shape.groups == 1
                      ? (numPanels + panelsPerBlock - 1) / panelsPerBlock
                      : (shape.groups + groupsPerBlock - 1) / groupsPerBlock;
  if (depthwise) {
    int64_t c = shape.outC;
    depthwiseWeights.resize(taps * c);
    depthwiseSums.assign(c, 0);
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t t = 0; t < taps; ++t) {
        depthwiseWeights[t * c + ch] = weights[ch * taps + t];
        depthwiseSums[ch] += weights[ch * taps + t];
      }
    for (int32_t sum : depthwiseSums)
      depthwiseBase.push_back(e.inputZero * sum);
  }
  // Convs read with gathered rows instead of im2col copies where the
  // family has the kernel and each run is whole k groups: one run per
  // kernel row where its taps are adjacent input pixels (one group, no
  // dilation along W), else one per tap. Even runs of one k group beat
  // im2col, which copies a grouped conv's taps one at a time: ResNeXt-50
  // 32x4d (4 and 8 channels a group in its first stages) 18.5 -> 13.5 ms
  // on 1 thread; others within 2%.
  kernelRows =
      shape.groups == 1 && shape.dilationW == 1 && shape.inputDilationW == 1;
  runsPerPixel = kernelRows ? shape.kernelH : taps;
  runBytes = kernelRows ? shape.kernelW * shape.inC : groupInC;
  gathered = !depthwise && !isPointwise() && e.weightZero.empty() &&
             hasGatheredGemm(packed[0], runBytes);
  if (gathered) {
    paddingRun.assign(std::max(shape.inC, runBytes), uint8_t(e.inputZero));
    auto [inside, insideEnd] = getInsideColumns();
    edgeColumns = kernelRows ? shape.outW() - (insideEnd - inside) : 0;
  }
  bool vectorActivation =
      e.activation == Activation::None || e.activation == Activation::Relu ||
      e.activation == Activation::LeakyRelu ||
      e.activation == Activation::Sigmoid ||
      // SiLU onto a grid of subnormal scale: the scalar two divisions.
      (e.activation == Activation::Silu &&
       !(e.outputScale > 0 &&
         e.outputScale < std::numeric_limits<float>::min())) ||
      (e.activation == Activation::Clip && !std::isnan(e.alpha) &&
       !std::isnan(e.beta));
  if (isa != Isa::Scalar && vectorActivation) {
    for (int64_t c = 0; c < shape.outC; ++c) {
      int32_t sum = packed[c / groupOutC].getChannelSums()[c % groupOutC];
      zeroTerms.push_back(e.inputZero * sum);
      channelScales.push_back(e.scale[e.scale.size() > 1 ? c : 0]);
    }
  }
}

llvm::Error Int8Conv::checkParams(const Int8ConvShape &s,
                                  const Int8Epilogue &e) {
  auto fail = [](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "int8 conv: " + why.str());
  };
  constexpr int64_t kMaxSize = int64_t(1) << 31;
  for (int64_t v : {s.batch, s.inH, s.inW, s.inC, s.outC, s.kernelH, s.kernelW,
                    s.strideH, s.strideW, s.dilationH, s.dilationW, s.groups,
                    s.inputDilationH, s.inputDilationW})
    if (v < 1 || v > kMaxSize)
      return fail("a size, stride, dilation or group count is out of range");
  if ((s.inH - 1) > (kMaxSize - 1) / s.inputDilationH ||
      (s.inW - 1) > (kMaxSize - 1) / s.inputDilationW)
    return fail("the dilated input is too large");
  for (int64_t v : {s.padTop, s.padLeft, s.padBottom, s.padRight})
    if (v < 0 || v > kMaxSize)
      return fail("a pad is out of range");
  if (s.inC % s.groups || s.outC % s.groups)
    return fail(llvm::Twine(s.groups) + " groups do not divide " +
                llvm::Twine(s.inC) + " input and " + llvm::Twine(s.outC) +
                " output channels");
  if (s.outH() < 1 || s.outW() < 1)
    return fail("the window is larger than the padded input");
  // One output pixel's taps, one output row's im2col buffer, the weights,
  // their packed panels (each group's channels padded to a panel and its
  // depth to a k group, 2 bytes a weight for AVX2, or to 64 for AMX) and
  // the MACs, checked for overflow and bounded.
  int64_t groupOutC = s.outC / s.groups;
  int64_t taps, depth, rowBytes, weights, panelBytes, packedBytes, rows, pixels,
      macs;
  if (llvm::MulOverflow(s.kernelH, s.kernelW, taps) ||
      llvm::MulOverflow(taps, s.inC / s.groups, depth) ||
      llvm::MulOverflow(depth, s.outW(), rowBytes) ||
      llvm::MulOverflow(depth, s.outC, weights) ||
      llvm::MulOverflow(
          std::max((depth + 3) / 4 * 4 * 2, (depth + 63) / 64 * 64),
          (groupOutC + 15) / 16 * 16, panelBytes) ||
      llvm::MulOverflow(panelBytes, s.groups, packedBytes) ||
      llvm::MulOverflow(s.batch, s.outH(), rows) ||
      llvm::MulOverflow(rows, s.outW(), pixels) ||
      llvm::MulOverflow(pixels, weights, macs) ||
      rowBytes > (int64_t(1) << 40) || packedBytes > (int64_t(1) << 33))
    return fail("the kernel is too large");
  if (e.scale.size() != 1 && e.scale.size() != size_t(s.outC))
    return fail("scales for " + llvm::Twine(e.scale.size()) + " of " +
                llvm::Twine(s.outC) + " channels");
  if (e.weightZero.size() > 1 && e.weightZero.size() != size_t(s.outC))
    return fail("weight zero points for " + llvm::Twine(e.weightZero.size()) +
                " of " + llvm::Twine(s.outC) + " channels");
  for (int32_t zero : e.weightZero)
    if (zero < -128 || zero > 127)
      return fail("a weight zero point is not an s8 value");
  // |acc|, |zx * wsum| and |zw * (xsum - K * zx)| are each below
  // K * 255 * 128; their sum stays in s32 for K up to 16384.
  if (!e.weightZero.empty() && depth > 16384)
    return fail("weights with zero points over " + llvm::Twine(depth) +
                " taps per output (at most 16384)");
  if (!e.bias.empty() && e.bias.size() != size_t(s.outC))
    return fail("biases for " + llvm::Twine(e.bias.size()) + " of " +
                llvm::Twine(s.outC) + " channels");
  if (!e.outputTable.empty() &&
      (e.outputTable.size() != 256 || e.outputScale == 0))
    return fail("an output table of " + llvm::Twine(e.outputTable.size()) +
                " entries on " + (e.outputScale == 0 ? "a float" : "an int8") +
                " result (256 on an int8 one)");
  if (!e.pairTable.empty() && (e.pairTable.size() != 65536 ||
                               e.outputScale == 0 || !e.outputTable.empty()))
    return fail(
        "a pair table of " + llvm::Twine(e.pairTable.size()) + " entries on " +
        (e.outputScale == 0      ? "a float result"
         : e.outputTable.empty() ? "an int8 result"
                                 : "an int8 result with an output table") +
        " (65536 on an int8 one without)");
  for (int32_t zero : {e.inputZero, e.residualZero, e.outputZero})
    if (zero < 0 || zero > 255)
      return fail("a zero point is not a stored u8 value");
  if (e.pairArithmetic && !e.pairArithmetic->hasStoredZeroPoints())
    return fail("a pair table's arithmetic with a zero point that is not a "
                "stored u8 value");
  if (e.pairArithmetic && !e.pairArithmetic->reproduces(e.pairTable))
    return fail("a pair table's arithmetic that does not give its entries");
  if (!(e.outputScale >= 0) || !std::isfinite(e.outputScale))
    return fail("the output scale is not finite and >= 0");
  return llvm::Error::success();
}

std::vector<int8_t> Int8Conv::getWeights() const {
  std::vector<int8_t> weights(shape.outC * groupInC * shape.kernelH *
                              shape.kernelW);
  std::vector<int8_t> reordered(groupOutC * depth);
  int64_t taps = shape.kernelH * shape.kernelW;
  for (int64_t g = 0; g < shape.groups; ++g) {
    packed[g].unpack(reordered.data(), depth);
    for (int64_t o = 0; o < groupOutC; ++o)
      for (int64_t ci = 0; ci < groupInC; ++ci)
        for (int64_t t = 0; t < taps; ++t)
          weights[((g * groupOutC + o) * groupInC + ci) * taps + t] =
              reordered[o * depth + t * groupInC + ci];
  }
  return weights;
}

void Int8Conv::composeOutputTable(llvm::ArrayRef<uint8_t> table) {
  assert(table.size() == 256 && epilogue.outputScale != 0 &&
         "a 256-entry table on an int8 result");
  if (!epilogue.pairTable.empty()) {
    for (uint8_t &v : epilogue.pairTable)
      v = table[v];
    epilogue.pairArithmetic.reset(); // not the composition's
    return;
  }
  std::vector<uint8_t> &mine = epilogue.outputTable;
  if (mine.empty()) {
    mine.assign(table.begin(), table.end());
    return;
  }
  for (uint8_t &v : mine)
    v = table[v];
}

void Int8Conv::setPairTable(std::vector<uint8_t> table) {
  assert(table.size() == 65536 && epilogue.outputScale != 0 &&
         epilogue.pairTable.empty() &&
         "a 65536-entry table on an int8 result without one");
  if (!epilogue.outputTable.empty()) {
    // v goes through the output table first: row v of the pair table is
    // row outputTable[v] of `table`.
    std::vector<uint8_t> composed(65536);
    for (size_t v = 0; v < 256; ++v)
      std::copy_n(&table[size_t(epilogue.outputTable[v]) << 8], 256,
                  &composed[v << 8]);
    table = std::move(composed);
    epilogue.outputTable.clear();
  }
  epilogue.pairTable = std::move(table);
}

bool Int8Conv::setPairArithmetic(const RequantizedAdd &add) {
  if (!add.reproduces(epilogue.pairTable))
    return false;
  epilogue.pairArithmetic = add;
  return true;
}

bool Int8Conv::isPointwise() const {
  return shape.kernelH == 1 && shape.kernelW == 1 && shape.strideH == 1 &&
         shape.strideW == 1 && shape.inputDilationH == 1 &&
         shape.inputDilationW == 1 && shape.padTop == 0 && shape.padLeft == 0 &&
         shape.padBottom == 0 && shape.padRight == 0;
}

int64_t Int8Conv::getRowsPerCall() const {
  int64_t outW = shape.outW();
  return std::max<int64_t>(
      1, std::min(getNumRows(), (kPixelsPerCall + outW - 1) / outW));
}

size_t Int8Conv::getScratchBytes() const {
  int64_t pixels = getRowsPerCall() * shape.outW();
  if (depthwise)
    return alignUp(size_t(pixels * shape.outC) * sizeof(int32_t));
  return getRowsScratchBytes() +
         alignUp(size_t(pixels * groupOutC) * sizeof(int32_t)) +
         alignUp(getGemmScratchBytes(packed[0], pixels));
}

void Int8Conv::subtractWeightZeroTerms(const uint8_t *a, int64_t lda,
                                       int64_t pixels, Channels channels,
                                       int32_t inputZero, int32_t *acc) const {
  const std::vector<int32_t> &zeros = epilogue.weightZero;
  bool perChannel = zeros.size() > 1;
  const int32_t *zw =
      zeros.data() +
      (perChannel ? channels.group * groupOutC + channels.first : 0);
  int32_t padTerm = int32_t(depth) * inputZero;
  int64_t count = channels.count;
  for (int64_t p = 0; p < pixels; ++p, a += lda, acc += count) {
    uint32_t sum = 0;
    for (int64_t k = 0; k < depth; ++k)
      sum += a[k];
    int32_t rowTerm = int32_t(sum) - padTerm;
    if (perChannel)
      for (int64_t c = 0; c < count; ++c)
        acc[c] -= zw[c] * rowTerm;
    else
      for (int64_t c = 0; c < count; ++c)
        acc[c] -= zw[0] * rowTerm;
  }
}

bool Int8Conv::hasPairInEpilogue() const {
  return epilogue.pairArithmetic && !zeroTerms.empty() && !epilogue.hasResidual;
}

bool Int8Conv::takesRuntimeGrid() const {
  const Int8Epilogue &e = epilogue;
  return shape.groups == 1 && !depthwise && e.inputZero == 0 &&
         !e.hasResidual && e.outputTable.empty() && e.pairTable.empty();
}

Int8RuntimeGrid Int8Conv::fillRuntimeGrid(float inputScale, int32_t inputZero,
                                          float *scales,
                                          int32_t *zeroTerms) const {
  assert(takesRuntimeGrid() && "a runtime grid needs a plain one-group conv");
  const std::vector<float> &weightScales = epilogue.scale;
  bool perChannel = weightScales.size() > 1;
  llvm::ArrayRef<int32_t> sums = packed[0].getChannelSums();
  for (int64_t c = 0; c < shape.outC; ++c) {
    scales[c] = inputScale * weightScales[perChannel ? c : 0];
    zeroTerms[c] = inputZero * sums[c];
  }
  return Int8RuntimeGrid{inputZero, scales, zeroTerms};
}

void Int8Conv::finishPixels(const int32_t *acc, Channels channels,
                            const uint8_t *residual, void *output,
                            int64_t pixelBase, int64_t pixels,
                            const uint8_t *pairOperand,
                            const Int8RuntimeGrid *grid) const {
  const Int8Epilogue &e = epilogue;
  int64_t first = channels.group * groupOutC + channels.first;
  int64_t count = channels.count;
  if (!zeroTerms.empty()) {
    kernels::epilogue::Params p{};
    p.zeroTerm = (grid ? grid->zeroTerm : zeroTerms.data()) + first;
    p.scale = (grid ? grid->scale : channelScales.data()) + first;
    p.bias = e.bias.empty() ? nullptr : e.bias.data() + first;
    p.activation = toVectorActivation(e.activation);
    p.alpha = e.alpha;
    p.beta = e.beta;
    p.hasResidual = e.hasResidual;
    p.residualAfterActivation = e.residualAfterActivation;
    p.residualScale = e.residualScale;
    p.residualZero = e.residualZero;
    p.outputScale = e.outputScale;
    p.outputZero = float(e.outputZero);
    int64_t at = pixelBase * shape.outC + first;
    const uint8_t *operand = e.hasResidual ? residual + at : nullptr;
    if (hasPairInEpilogue()) {
      const RequantizedAdd &add = *e.pairArithmetic;
      p.hasPair = true;
      p.pairScaleV = add.scaleV;
      p.pairZeroV = float(add.zeroV);
      p.pairScaleW = add.scaleW;
      p.pairZeroW = add.zeroW;
      p.pairLow = add.low;
      p.pairHigh = add.high;
      p.pairOutputScale = add.outputScale;
      p.pairOutputZero = float(add.outputZero);
      operand = pairOperand + at;
    }
    size_t elementBytes = e.outputScale == 0 ? sizeof(float) : 1;
    kernels::epilogue::forFamily(packed[0].getIsa())(
        p, acc, pixels, count, operand,
        static_cast<char *>(output) + at * elementBytes, shape.outC);
    return;
  }
  const int32_t *sums =
      depthwise
          ? depthwiseSums.data() + first
          : packed[channels.group].getChannelSums().data() + channels.first;
  bool perChannel = e.scale.size() > 1;
  bool siluOverScale = e.activation == Activation::Silu && e.outputScale != 0 &&
                       !(e.hasResidual && e.residualAfterActivation) &&
                       e.outputScale >= std::numeric_limits<float>::min();
  for (int64_t px = 0; px < pixels; ++px) {
    int64_t at = (pixelBase + px) * shape.outC + first;
    for (int64_t c = 0; c < count; ++c) {
      int64_t channel = first + c;
      float scale =
          grid ? grid->scale[channel] : e.scale[perChannel ? channel : 0];
      int32_t zeroTerm = grid ? grid->zeroTerm[channel] : e.inputZero * sums[c];
      float y = float(acc[px * count + c] - zeroTerm) * scale;
      if (!e.bias.empty())
        y += e.bias[channel];
      float r = 0;
      if (e.hasResidual)
        r = float(int32_t(residual[at + c]) - e.residualZero) * e.residualScale;
      if (e.hasResidual && !e.residualAfterActivation)
        y += r;
      if (siluOverScale) { // as the vector epilogue: one division
        static_cast<uint8_t *>(output)[at + c] =
            roundOntoU8(sigmoid::siluOverScale(y, e.outputScale), e.outputZero);
        continue;
      }
      y = activate(y, e.activation, e.alpha, e.beta);
      if (e.hasResidual && e.residualAfterActivation)
        y += r;
      if (e.outputScale == 0)
        static_cast<float *>(output)[at + c] = y;
      else
        static_cast<uint8_t *>(output)[at + c] =
            roundOntoU8(y / e.outputScale, e.outputZero);
    }
  }
}

void Int8Conv::run(const uint8_t *input, const uint8_t *residual, void *output,
                   int64_t rowBegin, int64_t rowEnd, void *scratch,
                   const uint8_t *pairOperand) const {
  runRows(input, residual, output, rowBegin, rowEnd, 0, channelBlocks, scratch,
          pairOperand);
}

void Int8Conv::runTiles(const uint8_t *input, const uint8_t *residual,
                        void *output, int64_t tileBegin, int64_t tileEnd,
                        void *scratch, const uint8_t *pairOperand) const {
  forEachTileRun(tileBegin, tileEnd,
                 [&](int64_t rowBegin, int64_t rowEnd, int64_t blockBegin,
                     int64_t blockEnd) {
                   runRows(input, residual, output, rowBegin, rowEnd,
                           blockBegin, blockEnd, scratch, pairOperand);
                 });
}

std::pair<int64_t, int64_t> Int8Conv::getBlockChannels(int64_t blockBegin,
                                                       int64_t blockEnd) const {
  // All the blocks: every group's channels.
  if (blockBegin == 0 && blockEnd == channelBlocks)
    return {0, shape.outC};
  if (shape.groups > 1)
    return {blockBegin * groupsPerBlock * groupOutC,
            std::min(shape.outC, blockEnd * groupsPerBlock * groupOutC)};
  return {std::min(shape.outC, blockBegin * panelsPerBlock * kPanelChannels),
          std::min(shape.outC, blockEnd * panelsPerBlock * kPanelChannels)};
}

void Int8Conv::runRows(const uint8_t *input, const uint8_t *residual,
                       void *output, int64_t rowBegin, int64_t rowEnd,
                       int64_t blockBegin, int64_t blockEnd, void *scratch,
                       const uint8_t *pairOperand,
                       const Int8RuntimeGrid *grid) const {
  assert((!grid || takesRuntimeGrid()) &&
         "a runtime grid needs a plain one-group conv");
  int32_t inputZero = grid ? grid->inputZero : epilogue.inputZero;
  if (depthwise)
    return runDepthwiseRows(input, residual, output, rowBegin, rowEnd,
                            blockBegin, blockEnd, scratch, pairOperand);
  int64_t outH = shape.outH(), outW = shape.outW();
  int64_t rowsPerCall = getRowsPerCall();
  bool pointwise = isPointwise();
  assert(reinterpret_cast<uintptr_t>(scratch) % kScratchAlignment == 0 &&
         "Int8Conv::run needs 64-byte aligned scratch");
  uint8_t *rows = static_cast<uint8_t *>(scratch);
  int32_t *acc = reinterpret_cast<int32_t *>(rows + getRowsScratchBytes());
  void *gemmScratch =
      reinterpret_cast<char *>(acc) +
      alignUp(size_t(rowsPerCall * outW * groupOutC) * sizeof(int32_t));
  // Output rows are adjacent pixels in NHWC, across images too: several
  // rows make one GEMM of rows * outW pixels, so narrow layers still fill
  // the kernels' register tiles.
  for (int64_t row = rowBegin; row < rowEnd; row += rowsPerCall) {
    int64_t count = std::min(rowsPerCall, rowEnd - row);
    int64_t pixels = count * outW;
    // Blocks of a grouped conv are whole groups, each group's panels all
    // of them; one group's blocks are its adjacent panels: one GEMM over
    // all of them.
    bool groupBlocks = shape.groups > 1;
    int64_t groupBegin = groupBlocks ? blockBegin * groupsPerBlock : 0;
    int64_t groupEnd =
        groupBlocks ? std::min(shape.groups, blockEnd * groupsPerBlock) : 1;
    int64_t panelBegin = groupBlocks ? 0 : blockBegin * panelsPerBlock;
    int64_t panelEnd =
        groupBlocks ? packed[0].getNumPanels() : blockEnd * panelsPerBlock;
    const uint8_t **runs = reinterpret_cast<const uint8_t **>(rows);
    uint8_t *edges = rows + alignUp(size_t(rowsPerCall * outW * runsPerPixel) *
                                    sizeof(void *));
    if (gathered)
      for (int64_t r = 0; r < count; ++r)
        fillRuns(input, (row + r) / outH, (row + r) % outH,
                 runs + r * outW * runsPerPixel,
                 edges + r * shape.kernelH * edgeColumns * runBytes);
    for (int64_t g = groupBegin; g < groupEnd; ++g) {
      Channels channels{g, panelBegin * kPanelChannels,
                        std::min(groupOutC, panelEnd * kPanelChannels) -
                            panelBegin * kPanelChannels};
      if (gathered) {
        // Every group's runs are group 0's, g * groupInC bytes on.
        gemmU8S8Gathered(runs, runsPerPixel, g * groupInC, pixels, packed[g],
                         acc, channels.count, panelBegin, panelEnd);
        finishPixels(acc, channels, residual, output, row * outW, pixels,
                     pairOperand, grid);
        continue;
      }
      const uint8_t *a;
      int64_t lda;
      if (pointwise) {
        // Stride 1 and no pads: the input pixels are the output's.
        a = input + row * outW * shape.inC + g * groupInC;
        lda = shape.inC;
      } else {
        for (int64_t r = 0; r < count; ++r)
          fillRow(input, g, (row + r) / outH, (row + r) % outH,
                  rows + r * outW * depth);
        a = rows;
        lda = depth;
      }
      gemmU8S8(a, lda, pixels, packed[g], acc, channels.count, gemmScratch,
               panelBegin, panelEnd);
      if (!epilogue.weightZero.empty())
        subtractWeightZeroTerms(a, lda, pixels, channels, inputZero, acc);
      finishPixels(acc, channels, residual, output, row * outW, pixels,
                   pairOperand, grid);
    }
    if (!epilogue.outputTable.empty())
      lookUpRows(output, row * outW, pixels, blockBegin, blockEnd);
    else if (!epilogue.pairTable.empty() && !hasPairInEpilogue())
      lookUpPairs(output, pairOperand, row * outW, pixels, blockBegin,
                  blockEnd);
  }
}

namespace {
/// Four channels of portable sums.
struct ScalarBlock {
  static constexpr int64_t kLanes = 4;
  int32_t sum[4];
  explicit ScalarBlock(const int32_t *base) { std::copy_n(base, 4, sum); }
  void add(const uint8_t *x, const int32_t *w, int32_t zero) {
    for (int k = 0; k < 4; ++k)
      sum[k] += (int32_t(x[k]) - zero) * w[k];
  }
  void store(int32_t *acc) const { std::copy_n(sum, 4, acc); }
};
} // namespace

void kernels::depthwise::scalar(const Row &row, int32_t *acc) {
  rowOf<ScalarBlock>(row, acc);
}

void Int8Conv::runDepthwiseRows(const uint8_t *input, const uint8_t *residual,
                                void *output, int64_t rowBegin, int64_t rowEnd,
                                int64_t blockBegin, int64_t blockEnd,
                                void *scratch,
                                const uint8_t *pairOperand) const {
  Isa isa = packed[0].getIsa();
  depthwise::Kernel kernel = isa == Isa::Scalar ? depthwise::scalar
                             : isa == Isa::Avx2 || isa == Isa::AvxVnni
                                 ? depthwise::avx2
                                 : depthwise::avx512;
  int64_t outH = shape.outH(), outW = shape.outW();
  // The blocks' channels [first, first + c) of all `stride`.
  auto [first, last] = getBlockChannels(blockBegin, blockEnd);
  int64_t c = last - first, stride = shape.outC;
  int64_t rowsPerCall = getRowsPerCall();
  int32_t *acc = static_cast<int32_t *>(scratch);
  depthwise::Row r{};
  r.inH = shape.inH;
  r.inW = shape.inW;
  r.channels = c;
  r.stride = stride;
  r.kernelH = shape.kernelH;
  r.kernelW = shape.kernelW;
  r.strideH = shape.strideH;
  r.strideW = shape.strideW;
  r.dilationH = shape.dilationH;
  r.dilationW = shape.dilationW;
  r.padTop = shape.padTop;
  r.padLeft = shape.padLeft;
  r.outW = outW;
  r.weights = depthwiseWeights.data() + first;
  r.base = depthwiseBase.data() + first;
  r.inputZero = epilogue.inputZero;
  for (int64_t row = rowBegin; row < rowEnd; row += rowsPerCall) {
    int64_t count = std::min(rowsPerCall, rowEnd - row);
    for (int64_t k = 0; k < count; ++k) {
      int64_t n = (row + k) / outH;
      r.input = input + n * shape.inH * shape.inW * stride + first;
      r.oh = (row + k) % outH;
      kernel(r, acc + k * outW * c);
    }
    int64_t pixels = count * outW;
    finishPixels(acc, Channels{0, first, c}, residual, output, row * outW,
                 pixels, pairOperand);
    if (!epilogue.outputTable.empty())
      lookUpRows(output, row * outW, pixels, blockBegin, blockEnd);
    else if (!epilogue.pairTable.empty() && !hasPairInEpilogue())
      lookUpPairs(output, pairOperand, row * outW, pixels, blockBegin,
                  blockEnd);
  }
}

void Int8Conv::lookUpRows(void *output, int64_t pixelBase, int64_t pixels,
                          int64_t blockBegin, int64_t blockEnd) const {
  // The rows' pixels are adjacent: one lookup over all their channels
  // while they are in cache (or over each pixel's block of them).
  uint8_t *bytes = static_cast<uint8_t *>(output) + pixelBase * shape.outC;
  const uint8_t *table = epilogue.outputTable.data();
  Isa isa = packed[0].getIsa();
  auto [first, last] = getBlockChannels(blockBegin, blockEnd);
  if (first == 0 && last == shape.outC) {
    lookupBytes(isa, table, bytes, pixels * shape.outC, bytes);
    return;
  }
  for (int64_t px = 0; px < pixels; ++px)
    lookupBytes(isa, table, bytes + px * shape.outC + first, last - first,
                bytes + px * shape.outC + first);
}

void Int8Conv::lookUpPairs(void *output, const uint8_t *pairOperand,
                           int64_t pixelBase, int64_t pixels,
                           int64_t blockBegin, int64_t blockEnd) const {
  assert(pairOperand && "a pair table needs its operand");
  auto [first, last] = getBlockChannels(blockBegin, blockEnd);
  const uint8_t *table = epilogue.pairTable.data();
  for (int64_t px = 0; px < pixels; ++px) {
    int64_t at = (pixelBase + px) * shape.outC;
    uint8_t *bytes = static_cast<uint8_t *>(output) + at;
    const uint8_t *other = pairOperand + at;
    for (int64_t c = first; c < last; ++c)
      bytes[c] = table[size_t(bytes[c]) << 8 | other[c]];
  }
}
