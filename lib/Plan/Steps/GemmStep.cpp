//===- GemmStep.cpp - Int8 Gemm/MatMul steps ------------------------------===//
//
// An int8 Gemm/MatMul with constant weights as a 1x1 conv over the rows of
// ONNX-layout operands, s8 operands flipped to u8 around the kernel.
//
// The kind's row is in qopt/Plan/PlanSteps.def; this file has what it
// does, its fields in a plan file, what its kernel relies on and its work.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/Steps/GemmStep.h"

#include "PlanFields.h"
#include "PlanVerifier.h"
#include "qopt/Support/Error.h"

#include <cstring>

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;
using namespace qopt::plan::planfile;

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

namespace {

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
  return alignScratch(conv.getScratchBytes()) +
         alignScratch(size_t(rows * s.inC)) +
         alignScratch(size_t(rows * s.outC));
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
  uint8_t *xRows = reinterpret_cast<uint8_t *>(
      convScratch + alignScratch(conv.getScratchBytes()));
  int64_t maxRows = conv.getRowsPerCall();
  uint8_t *residualRows = xRows + alignScratch(size_t(maxRows * k));
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
// Fields, checks, work
//===----------------------------------------------------------------------===//

llvm::Error GemmStep::writeFields(planfile::PlanEncoder &encoder) const {
  encoder.conv(conv);
  return llvm::Error::success();
}

std::unique_ptr<PlanStep> planfile::readGemmStep(PlanDecoder &decoder, Plan &,
                                                 const std::string &name) {
  if (auto c = decoder.conv(name))
    return std::make_unique<GemmStep>(name, std::move(*c));
  return nullptr;
}

llvm::Error GemmStep::verify(const PlanVerifier &check) const {
  const GemmStep &step = *this;
  const Int8Conv &conv = step.getConv();
  const Int8ConvShape &c = conv.getShape();
  const Int8Epilogue &e = conv.getEpilogue();
  if (auto err = Int8Conv::checkParams(c, e))
    return err;
  if (!GemmStep::isGemmShape(c))
    return makeError("its kernel is not a 1x1 conv over rows");
  // The kernel's output bytes are u8 before an s8 result is flipped: no
  // table of stored bytes applies to them.
  if (!e.outputTable.empty() || !e.pairTable.empty())
    return makeError("a gemm step has no output or pair table");
  if (auto err = check.checkOperands(step, e.hasResidual ? 2 : 1, 1))
    return err;
  if (auto err =
          check.expectRows(step.inputs[0], c.inH, c.inC, true, "its input"))
    return err;
  if (e.hasResidual)
    if (auto err = check.expectRows(step.inputs[1], c.inH, c.outC, true,
                                    "its residual"))
      return err;
  return check.expectRows(step.outputs[0], c.inH, c.outC, e.outputScale != 0,
                          "its result");
}
