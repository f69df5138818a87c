//===- PlanSteps.cpp - What each kind of plan step does -------------------===//

#include "qopt/Interpreter/NNUtil.h"
#include "qopt/Kernels/ActivationMath.h"
#include "qopt/Kernels/Transpose.h"
#include "qopt/Plan/Plan.h"
#include "qopt/Support/Error.h"

#include "llvm/ADT/StringSwitch.h"

#include <cassert>
#include <cstring>
#include <functional>

using namespace qopt;
using namespace qopt::rt;

//===----------------------------------------------------------------------===//
// Int8 conv
//===----------------------------------------------------------------------===//

llvm::Expected<Int8ConvShape>
ConvStep::getShape(const KernelOp &op, const Shape &x, const Shape &w) {
  KernelContext ctx(op, {}, 0);
  auto g = convGeometry(ctx, x, w);
  if (!g)
    return g.takeError();
  if (g->inSpatial.size() != 2)
    return ctx.error("the int8 conv step is 2-D");
  Int8ConvShape s;
  s.batch = g->batch;
  s.inC = g->inChannels;
  s.inH = g->inSpatial[0];
  s.inW = g->inSpatial[1];
  s.outC = g->outChannels;
  s.kernelH = g->kernel[0];
  s.kernelW = g->kernel[1];
  s.strideH = g->strides[0];
  s.strideW = g->strides[1];
  s.dilationH = g->dilations[0];
  s.dilationW = g->dilations[1];
  s.padTop = g->padBegin[0];
  s.padLeft = g->padBegin[1];
  s.padBottom = g->padEnd[0];
  s.padRight = g->padEnd[1];
  s.groups = g->group;
  return s;
}

int64_t ConvStep::getMacs() const {
  const Int8ConvShape &s = conv.getShape();
  return s.batch * s.outH() * s.outW() * s.outC * s.kernelH * s.kernelW *
         (s.inC / s.groups);
}

llvm::Error ConvStep::run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                          void *scratch) const {
  // Inputs: x, then the residual and the pair table's operand if any.
  const Int8Epilogue &e = conv.getEpilogue();
  auto bytesOf = [&](int id) {
    return reinterpret_cast<const uint8_t *>(run.read(id));
  };
  const uint8_t *residual = e.hasResidual ? bytesOf(inputs[1]) : nullptr;
  const uint8_t *pairOperand =
      e.pairTable.empty() ? nullptr : bytesOf(inputs.back());
  conv.runTiles(bytesOf(inputs[0]), residual, run.write(outputs[0]), tileBegin,
                tileEnd, scratch, pairOperand);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Int8 Gemm/MatMul: a 1x1 conv over the rows
//===----------------------------------------------------------------------===//

namespace {

constexpr size_t kScratchAlignment = 64;

size_t alignUp(size_t n) {
  return (n + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment;
}

/// dst = src with the top bit of each byte toggled (s8 <-> u8 + 128).
void copyFlipped(uint8_t *dst, const uint8_t *src, size_t n) {
  for (size_t i = 0; i < n; ++i)
    dst[i] = src[i] ^ 0x80;
}

} // namespace

bool GemmStep::isGemmShape(const Int8ConvShape &s) {
  return s.batch == 1 && s.inW == 1 && s.kernelH == 1 && s.kernelW == 1 &&
         s.strideH == 1 && s.strideW == 1 && s.dilationH == 1 &&
         s.dilationW == 1 && s.padTop == 0 && s.padLeft == 0 &&
         s.padBottom == 0 && s.padRight == 0 && s.groups == 1 &&
         s.inputDilationH == 1 && s.inputDilationW == 1;
}

Int8ConvShape GemmStep::makeShape(int64_t m, int64_t k, int64_t n) {
  Int8ConvShape s;
  s.inH = m;
  s.inC = k;
  s.outC = n;
  return s;
}

size_t GemmStep::getScratchBytes() const {
  const Int8ConvShape &s = conv.getShape();
  // The conv's own, then a row group of x's rows and of the residual's
  // (flipped from s8).
  int64_t rows = conv.getRowsPerCall();
  return alignUp(conv.getScratchBytes()) + alignUp(size_t(rows * s.inC)) +
         alignUp(size_t(rows * s.outC));
}

int64_t GemmStep::getMacs() const {
  const Int8ConvShape &s = conv.getShape();
  return s.inH * s.inC * s.outC;
}

llvm::Error GemmStep::run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                          void *scratch) const {
  const Int8ConvShape &s = conv.getShape();
  const Int8Epilogue &e = conv.getEpilogue();
  int64_t k = s.inC, n = s.outC;
  bool flipX = run.tensor(inputs[0]).kind == ElementKind::I8;
  bool flipResidual =
      e.hasResidual && run.tensor(inputs[1]).kind == ElementKind::I8;
  bool flipY = run.tensor(outputs[0]).kind == ElementKind::I8;
  size_t resultBytes = e.outputScale == 0 ? sizeof(float) : 1;
  const uint8_t *x = reinterpret_cast<const uint8_t *>(run.read(inputs[0]));
  const uint8_t *residual =
      e.hasResidual ? reinterpret_cast<const uint8_t *>(run.read(inputs[1]))
                    : nullptr;
  char *y = run.write(outputs[0]);
  char *convScratch = static_cast<char *>(scratch);
  uint8_t *xRows = reinterpret_cast<uint8_t *>(convScratch +
                                               alignUp(conv.getScratchBytes()));
  int64_t maxRows = conv.getRowsPerCall();
  uint8_t *residualRows = xRows + alignUp(size_t(maxRows * k));
  // A run of tiles at a time: one row group (maxRows rows at most) and
  // adjacent channel blocks of it.
  conv.forEachTileRun(
      tileBegin, tileEnd,
      [&](int64_t row, int64_t rowEnd, int64_t blockBegin, int64_t blockEnd) {
        int64_t rows = rowEnd - row;
        assert(rows <= maxRows && "a row group is one GEMM call");
        const uint8_t *in = x + row * k;
        if (flipX) {
          copyFlipped(xRows, in, size_t(rows * k));
          in = xRows;
        }
        const uint8_t *res = residual ? residual + row * n : nullptr;
        if (flipResidual) {
          copyFlipped(residualRows, res, size_t(rows * n));
          res = residualRows;
        }
        char *out = y + row * n * resultBytes;
        conv.runRows(in, res, out, 0, rows, blockBegin, blockEnd, convScratch);
        if (flipY) {
          // Only this run's channels: other tiles write the rest of the rows.
          auto [first, last] = conv.getBlockChannels(blockBegin, blockEnd);
          for (int64_t r = 0; r < rows; ++r) {
            uint8_t *bytes = reinterpret_cast<uint8_t *>(out) + r * n + first;
            copyFlipped(bytes, bytes, size_t(last - first));
          }
        }
      });
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Reformat: NCHW <-> NHWC, s8 <-> u8 (+128)
//===----------------------------------------------------------------------===//

int64_t ReformatStep::getNumTiles() const { return shape[0] * shape[2]; }

namespace {

/// Rows (n, h) of a 4-D tensor moved between NCHW and NHWC; `flip` toggles
/// the top bit of each byte (s8 <-> u8 + 128). NCHW row (n, c) of h * w
/// elements is row n * batchRows + firstRow + c of rows `rowStride` apart,
/// from `columnOffset` on.
template <typename T>
void reformatRows(const T *in, T *out, const Shape &shape, bool toNhwc,
                  bool flip, int64_t rowStride, int64_t columnOffset,
                  int64_t firstRow, int64_t batchRows, int64_t rowBegin,
                  int64_t rowEnd) {
  int64_t c = shape[1], h = shape[2], w = shape[3];
  for (int64_t row = rowBegin; row < rowEnd; ++row) {
    int64_t n = row / h, y = row % h;
    for (int64_t ch = 0; ch < c; ++ch) {
      int64_t nchw =
          (n * batchRows + firstRow + ch) * rowStride + columnOffset + y * w;
      int64_t nhwc = (n * h + y) * w * c + ch;
      for (int64_t x = 0; x < w; ++x) {
        const T &from = toNhwc ? in[nchw + x] : in[nhwc + x * c];
        T &to = toNhwc ? out[nhwc + x * c] : out[nchw + x];
        if constexpr (sizeof(T) == 1)
          to = flip ? static_cast<T>(from ^ 0x80) : from;
        else
          to = from;
      }
    }
  }
}

} // namespace

llvm::Error ReformatStep::run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                              void * /*scratch*/) const {
  const PlanTensor &from = run.tensor(inputs[0]);
  const PlanTensor &to = run.tensor(outputs[0]);
  bool toNhwc = to.layout == PlanLayout::Nhwc;
  bool flip = from.getStoredFlip() != to.getStoredFlip();
  int64_t stride = rowStride ? rowStride : shape[2] * shape[3];
  int64_t rows = batchRows ? batchRows : shape[1];
  switch (getElementByteSize(from.kind)) {
  case 1:
    reformatRows(reinterpret_cast<const uint8_t *>(run.read(inputs[0])),
                 reinterpret_cast<uint8_t *>(run.write(outputs[0])), shape,
                 toNhwc, flip, stride, columnOffset, firstRow, rows, tileBegin,
                 tileEnd);
    return llvm::Error::success();
  case 4: {
    // Each image row: a transpose between its pixels' channels and its
    // channels' rows.
    const uint32_t *in =
        reinterpret_cast<const uint32_t *>(run.read(inputs[0]));
    uint32_t *out = reinterpret_cast<uint32_t *>(run.write(outputs[0]));
    int64_t c = shape[1], h = shape[2], w = shape[3];
    Isa isa = run.getPlan().isa;
    for (int64_t row = tileBegin; row < tileEnd; ++row) {
      int64_t n = row / h, y = row % h;
      int64_t pixels = (n * h + y) * w * c;
      int64_t channels = (n * rows + firstRow) * stride + columnOffset + y * w;
      if (toNhwc)
        transpose32(isa, in + channels, stride, c, w, out + pixels, c);
      else
        transpose32(isa, in + pixels, c, w, c, out + channels, stride);
    }
    return llvm::Error::success();
  }
  default:
    return makeError("reformat of '" + from.name + "': no NHWC layout for " +
                     getElementKindName(from.kind));
  }
}
