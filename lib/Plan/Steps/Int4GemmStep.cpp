//===- Int4GemmStep.cpp - Weight-only 4-bit MatMuls -----------------------===//
//
// A MatMul of f32 rows by the DequantizeLinear of a constant int4 or uint4
// weight [K, N] with block-wise (axis 0), per-column or per-tensor
// parameters: the form LLM weight-only quantizers export. The codes stay
// 4-bit (kernels::int4Gemm); each output is the fma chain over k in order
// of x and the weight as the DequantizeLinear makes it, so a plan gives the
// same bits on every ISA and thread count, and the reference's (which sums
// in double) within f32 rounding. With int8 activations (the plan option
// PlanBuildOptions::int8ActivationsForInt4) the integer kernel runs
// instead (kernels::int4DotGemm): x rounded to int8 per segment, a
// different function, as ONNX Runtime's MatMulNBits at accuracy level 4.
//
// The kind's row is in qopt/Plan/PlanSteps.def; this file has what it
// does, its fields in a plan file, what its kernel relies on and its work.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/Steps/Int4GemmStep.h"

#include "PlanFields.h"
#include "PlanVerifier.h"
#include "qopt/Kernels/Int4DotGemm.h"
#include "qopt/Kernels/Int4Gemm.h"
#include "qopt/Support/Error.h"

#include <cstring>

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;
using namespace qopt::plan::planfile;

Int4GemmStep::Int4GemmStep(std::string name, Isa isa, int64_t rows,
                           Int4Weights weights, bool int8Activations)
    : PlanStep(Kind::Int4Gemm, std::move(name)), isa(isa), rows(rows),
      weights(std::move(weights)) {
  if (!int8Activations)
    return;
  dotWeights = Int4DotWeights::pack(this->weights);
  this->weights.codes = {}; // (dotWeights has them)
}

size_t Int4GemmStep::getScratchBytes() const {
  return dotWeights ? 0 : int4GemmScratchBytes(weights, rows);
}

size_t Int4GemmStep::getSharedBytes() const {
  return dotWeights ? int4DotGemmRowsBytes(*dotWeights, rows) : 0;
}

llvm::Error Int4GemmStep::prepare(PlanRun &run, void *shared) const {
  // The rows rounded to int8 once, for every panel's tile.
  if (dotWeights)
    int4DotGemmQuantizeRows(
        reinterpret_cast<const float *>(run.read(inputs[0])), rows, *dotWeights,
        shared);
  return llvm::Error::success();
}

llvm::Error Int4GemmStep::run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                              void *scratch) const {
  const float *x = reinterpret_cast<const float *>(run.read(inputs[0]));
  float *y = reinterpret_cast<float *>(run.write(outputs[0]));
  if (dotWeights) {
    if (!run.getShared())
      return makeError("int4 gemm '" + getName() +
                       "' runs before its rows are quantized");
    int4DotGemm(isa, run.getShared(), rows, *dotWeights, tileBegin, tileEnd, y);
    return llvm::Error::success();
  }
  int4Gemm(isa, x, rows, weights, tileBegin, tileEnd, y,
           static_cast<float *>(scratch));
  return llvm::Error::success();
}

namespace {

template <typename T> llvm::ArrayRef<uint8_t> bytesOf(const std::vector<T> &v) {
  return {reinterpret_cast<const uint8_t *>(v.data()), v.size() * sizeof(T)};
}

template <typename T>
bool copyBytes(llvm::StringRef blob, std::vector<T> &v, size_t count) {
  if (blob.size() != count * sizeof(T))
    return false;
  v.resize(count);
  std::memcpy(v.data(), blob.data(), blob.size());
  return true;
}

} // namespace

llvm::Error Int4GemmStep::writeFields(PlanEncoder &encoder) const {
  FieldSink &out = encoder.out;
  out.i64(rows, "int4 gemm rows");
  out.i64(weights.k, "int4 gemm k");
  out.i64(weights.n, "int4 gemm n");
  out.i64(weights.block, "int4 gemm block");
  out.flag(weights.isSigned, "int4 gemm signed");
  out.flag(dotWeights.has_value(), "int4 gemm int8 activations");
  // The f32 kernel's form of the codes, whichever kernel runs.
  out.blob(dotWeights ? dotWeights->unpack().codes : weights.codes,
           "int4 gemm codes");
  out.blob(bytesOf(weights.scales), "int4 gemm scales");
  out.blob(bytesOf(weights.zeros), "int4 gemm zero points");
  return llvm::Error::success();
}

std::unique_ptr<PlanStep> planfile::readInt4GemmStep(PlanDecoder &decoder,
                                                     Plan &,
                                                     const std::string &name) {
  FieldSource &in = decoder.in;
  int64_t rows = in.i64("int4 gemm rows");
  Int4Weights w;
  w.k = in.i64("int4 gemm k");
  w.n = in.i64("int4 gemm n");
  w.block = in.i64("int4 gemm block");
  w.isSigned = in.flag("int4 gemm signed");
  bool int8Activations =
      decoder.version >= 12 && in.flag("int4 gemm int8 activations");
  llvm::StringRef codes = in.blob("int4 gemm codes");
  llvm::StringRef scales = in.blob("int4 gemm scales");
  llvm::StringRef zeros = in.blob("int4 gemm zero points");
  if (in.failed)
    return nullptr;
  constexpr int64_t kMaxDim = int64_t(1) << 31;
  int64_t rowsByK = 0, macs = 0;
  if (rows < 1 || rows > kMaxDim || w.k < 1 || w.k > kMaxDim || w.n < 1 ||
      w.n > kMaxDim || w.block < 1 || (w.block % 2 && w.block < w.k) ||
      __builtin_mul_overflow(rows, w.k, &rowsByK) ||
      __builtin_mul_overflow(rowsByK, w.n, &macs)) {
    in.fail("int4 gemm '" + name +
            "' has rows, K, N or a block size out of range");
    return nullptr;
  }
  size_t grid = size_t(w.numBlocks() * w.paddedColumns());
  if (!copyBytes(codes, w.codes,
                 size_t(w.numPanels() * w.rowPairs() * kInt4PanelColumns)) ||
      !copyBytes(scales, w.scales, grid) || !copyBytes(zeros, w.zeros, grid)) {
    in.fail("int4 gemm '" + name +
            "' has codes, scales or zero points of the wrong size");
    return nullptr;
  }
  w.setZeros(std::move(w.zeros));
  if (int8Activations && !Int4DotWeights::canPack(w)) {
    in.fail("int4 gemm '" + name +
            "' has int8 activations but a block size that is not a multiple "
            "of 4");
    return nullptr;
  }
  return std::make_unique<Int4GemmStep>(name, decoder.isa, rows, std::move(w),
                                        int8Activations);
}

llvm::Error Int4GemmStep::verify(const PlanVerifier &check) const {
  if (auto err = check.checkOperands(*this, 1, 1))
    return err;
  const Plan &plan = check.getPlan();
  if (plan.tensors[inputs[0]].kind != ElementKind::F32 ||
      plan.tensors[outputs[0]].kind != ElementKind::F32)
    return makeError("its input and result are not f32");
  size_t grid = size_t(weights.numBlocks() * weights.paddedColumns());
  size_t codes = dotWeights ? dotWeights->codes.size() : weights.codes.size();
  size_t wanted =
      dotWeights
          ? size_t(dotWeights->numPanels() * dotWeights->numGroups() * 64)
          : size_t(weights.numPanels() * weights.rowPairs() *
                   kInt4PanelColumns);
  if (codes != wanted || weights.scales.size() != grid ||
      weights.zeros.size() != grid ||
      (dotWeights &&
       (dotWeights->scales.size() != grid || dotWeights->zeros.size() != grid)))
    return makeError("its codes or grid do not match K and N");
  if (auto err =
          check.expectRows(inputs[0], rows, weights.k, false, "its input"))
    return err;
  return check.expectRows(outputs[0], rows, weights.n, false, "its result");
}
