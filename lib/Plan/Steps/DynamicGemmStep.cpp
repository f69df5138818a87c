//===- DynamicGemmStep.cpp - Int8 MatMuls on a runtime input grid ---------===//
//
// A dynamically quantized MatMul: ONNX Runtime's MatMulIntegerToFloat, or
// MatMulInteger -> Cast -> Mul by s_x * s_w [-> Add bias], which
// fuse-dynamic-matmul makes one. The int8 GEMM is a gemm step's (a 1x1
// conv over the rows); the input grid comes from tensors at run time, so
// each call first makes the epilogue's per-channel scale s_x * s_w[n] and
// zero term z_x * sum(w[n]) (Int8Conv::fillRuntimeGrid), and the result
// is float(acc) * scale + bias, as ONNX Runtime computes it.
//
// The kind's row is in qopt/Plan/PlanSteps.def; this file has what it
// does, its fields in a plan file, what its kernel relies on and its work.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/Steps/DynamicGemmStep.h"

#include "PlanFields.h"
#include "PlanVerifier.h"
#include "qopt/Plan/Steps/GemmStep.h"
#include "qopt/Support/Error.h"

#include <cstring>

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;
using namespace qopt::plan::planfile;

size_t DynamicGemmStep::getScratchBytes() const {
  // The conv's own, then the grid's scales and zero terms.
  size_t channels = size_t(conv.getShape().outC);
  return alignScratch(conv.getScratchBytes()) +
         alignScratch(channels * sizeof(float)) +
         alignScratch(channels * sizeof(int32_t));
}

int64_t DynamicGemmStep::getMacs() const {
  const Int8ConvShape &s = conv.getShape();
  return s.inH * s.inC * s.outC;
}

llvm::Error DynamicGemmStep::run(PlanRun &run, int64_t tileBegin,
                                 int64_t tileEnd, void *scratch) const {
  const Int8ConvShape &s = conv.getShape();
  int64_t k = s.inC, n = s.outC;
  float inputScale;
  std::memcpy(&inputScale, run.read(inputs[1]), sizeof(float));
  int32_t inputZero = *reinterpret_cast<const uint8_t *>(run.read(inputs[2]));
  char *convScratch = static_cast<char *>(scratch);
  float *scales = reinterpret_cast<float *>(
      convScratch + alignScratch(conv.getScratchBytes()));
  int32_t *zeroTerms =
      reinterpret_cast<int32_t *>(reinterpret_cast<char *>(scales) +
                                  alignScratch(size_t(n) * sizeof(float)));
  Int8RuntimeGrid grid =
      conv.fillRuntimeGrid(inputScale, inputZero, scales, zeroTerms);
  const uint8_t *x = reinterpret_cast<const uint8_t *>(run.read(inputs[0]));
  float *y = reinterpret_cast<float *>(run.write(outputs[0]));
  conv.forEachTileRun(
      tileBegin, tileEnd,
      [&](int64_t row, int64_t rowEnd, int64_t blockBegin, int64_t blockEnd) {
        conv.runRows(x + row * k, nullptr, y + row * n, 0, rowEnd - row,
                     blockBegin, blockEnd, convScratch, nullptr, &grid);
      });
  return llvm::Error::success();
}

llvm::Error DynamicGemmStep::writeFields(PlanEncoder &encoder) const {
  encoder.conv(conv);
  return llvm::Error::success();
}

std::unique_ptr<PlanStep>
planfile::readDynamicGemmStep(PlanDecoder &decoder, Plan &,
                              const std::string &name) {
  if (auto c = decoder.conv(name))
    return std::make_unique<DynamicGemmStep>(name, std::move(*c));
  return nullptr;
}

llvm::Error DynamicGemmStep::verify(const PlanVerifier &check) const {
  const Plan &plan = check.getPlan();
  const Int8ConvShape &c = conv.getShape();
  const Int8Epilogue &e = conv.getEpilogue();
  if (auto err = Int8Conv::checkParams(c, e))
    return err;
  if (!GemmStep::isGemmShape(c))
    return makeError("its kernel is not a 1x1 conv over rows");
  if (!conv.takesRuntimeGrid() || e.outputScale != 0 ||
      (e.activation != Activation::None && e.activation != Activation::Relu))
    return makeError("its kernel is not a float-result GEMM (with a Relu at "
                     "most) with input zero point 0 (the grid comes at run "
                     "time)");
  if (auto err = check.checkOperands(*this, 3, 1))
    return err;
  if (plan.tensors[inputs[0]].kind != ElementKind::U8)
    return makeError("its input is not u8");
  if (auto err = check.expectRows(inputs[0], c.inH, c.inC, true, "its input"))
    return err;
  auto isScalar = [&](int id, ElementKind kind) {
    const PlanTensor &t = plan.tensors[id];
    return t.kind == kind && shapeNumElements(t.shape).value_or(0) == 1;
  };
  if (!isScalar(inputs[1], ElementKind::F32) ||
      !isScalar(inputs[2], ElementKind::U8))
    return makeError(
        "its input's scale and zero point are not one f32 and one u8");
  return check.expectRows(outputs[0], c.inH, c.outC, false, "its result");
}
