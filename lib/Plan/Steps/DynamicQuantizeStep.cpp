//===- DynamicQuantizeStep.cpp - f32 onto u8 on its own range -------------===//
//
// ONNX DynamicQuantizeLinear, as dynamically quantized models (ONNX
// Runtime's quantize_dynamic) put before each MatMulInteger: the range of
// the tensor gives a u8 grid, the tensor is quantized onto it, and the
// grid's scale and zero point are results for the integer MatMuls after.
//
// The kind's row is in qopt/Plan/PlanSteps.def; this file has what it
// does, its fields in a plan file, what its kernel relies on and its work.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/Steps/DynamicQuantizeStep.h"

#include "PlanFields.h"
#include "PlanVerifier.h"
#include "qopt/Support/Error.h"

#include <cstring>

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;
using namespace qopt::plan::planfile;

llvm::Error DynamicQuantizeStep::run(PlanRun &run, int64_t /*tileBegin*/,
                                     int64_t /*tileEnd*/,
                                     void * /*scratch*/) const {
  const PlanTensor &xTensor = run.tensor(inputs[0]);
  int64_t count = shapeNumElements(xTensor.shape).value_or(0);
  const float *x = reinterpret_cast<const float *>(run.read(inputs[0]));
  uint8_t *y = reinterpret_cast<uint8_t *>(run.write(outputs[0]));
  QuantizeGrid grid = dynamicQuantizeGrid(isa, x, count);
  // Scale 0: every x is 0 (or NaN), and ONNX's bytes are all 0.
  if (grid.scale > 0)
    quantizeFloats(isa, x, count, grid, y);
  else
    std::memset(y, 0, size_t(count));
  std::memcpy(run.write(outputs[1]), &grid.scale, sizeof(float));
  uint8_t zero = uint8_t(grid.zero);
  std::memcpy(run.write(outputs[2]), &zero, 1);
  return llvm::Error::success();
}

llvm::Error DynamicQuantizeStep::writeFields(PlanEncoder &) const {
  // Everything it needs is in its tensors.
  return llvm::Error::success();
}

std::unique_ptr<PlanStep>
planfile::readDynamicQuantizeStep(PlanDecoder &decoder, Plan &,
                                  const std::string &name) {
  return std::make_unique<DynamicQuantizeStep>(name, decoder.isa);
}

llvm::Error DynamicQuantizeStep::verify(const PlanVerifier &check) const {
  const Plan &plan = check.getPlan();
  if (auto err = check.checkOperands(*this, 1, 3))
    return err;
  const PlanTensor &x = plan.tensors[inputs[0]];
  const PlanTensor &y = plan.tensors[outputs[0]];
  if (x.kind != ElementKind::F32 || y.kind != ElementKind::U8 ||
      x.shape != y.shape || x.layout != y.layout)
    return makeError("quantizes f32 '" + x.name + "' into u8 '" + y.name +
                     "' of its shape and layout, which they are not");
  auto isScalar = [&](int id, ElementKind kind) {
    const PlanTensor &t = plan.tensors[id];
    return t.kind == kind && shapeNumElements(t.shape).value_or(0) == 1;
  };
  if (!isScalar(outputs[1], ElementKind::F32) ||
      !isScalar(outputs[2], ElementKind::U8))
    return makeError("its scale and zero point are not one f32 and one u8");
  return llvm::Error::success();
}
