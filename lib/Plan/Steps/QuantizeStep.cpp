//===- QuantizeStep.cpp - f32 onto int8, per tensor -----------------------===//
//
// Quantizing an f32 tensor (a model input, a float island's result)
// straight into the int8 layout the next step reads.
//
// The kind's row is in qopt/Plan/PlanSteps.def; this file has what it
// does, its fields in a plan file, what its kernel relies on and its work.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/Steps/QuantizeStep.h"

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

/// Elements per tile, as a table step's (TableStep.cpp).
static constexpr int64_t kQuantizeTileElements = 16384;

int64_t QuantizeStep::getNumTiles() const {
  if (toNhwc)
    return shape[0] * shape[2];
  return (elements + kQuantizeTileElements - 1) / kQuantizeTileElements;
}

llvm::Error QuantizeStep::run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                              void * /*scratch*/) const {
  const float *x = reinterpret_cast<const float *>(run.read(inputs[0]));
  uint8_t *y = reinterpret_cast<uint8_t *>(run.write(outputs[0]));
  if (!toNhwc) {
    int64_t begin = tileBegin * kQuantizeTileElements;
    int64_t end = std::min(tileEnd * kQuantizeTileElements, elements);
    quantizeFloats(isa, x + begin, end - begin, grid, y + begin);
    return llvm::Error::success();
  }
  // Each row: the channels' planes quantized and interleaved into pixels.
  int64_t channels = shape[1], height = shape[2], width = shape[3];
  for (int64_t row = tileBegin; row < tileEnd; ++row) {
    int64_t n = row / height, h = row % height;
    quantizeFloatPlanes(isa, x + (n * channels * height + h) * width,
                        height * width, channels, width, grid,
                        y + row * width * channels);
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Fields, checks, work
//===----------------------------------------------------------------------===//

llvm::Error QuantizeStep::writeFields(planfile::PlanEncoder &encoder) const {
  FieldSink &out = encoder.out;
  out.grid(grid);
  out.ints(shape, "quantize shape");
  out.flag(toNhwc, "quantize layout");
  return llvm::Error::success();
}

std::unique_ptr<PlanStep> planfile::readQuantizeStep(PlanDecoder &decoder,
                                                     Plan &,
                                                     const std::string &name) {
  FieldSource &in = decoder.in;
  QuantizeGrid g = in.grid();
  Shape shape = in.ints("quantize shape");
  bool toNhwc = in.flag("quantize layout");
  if (in.failed)
    return nullptr;
  if (toNhwc && shape.size() != 4) {
    in.fail("quantize '" + name + "' into NHWC is not 4-D");
    return nullptr;
  }
  for (int64_t d : shape)
    if (d < 0) {
      in.fail("quantize '" + name + "' has a negative dimension");
      return nullptr;
    }
  if (!shapeNumElements(shape)) {
    in.fail("quantize '" + name + "' has too many elements");
    return nullptr;
  }
  return std::make_unique<QuantizeStep>(name, decoder.isa, g, std::move(shape),
                                        toNhwc);
}

llvm::Error QuantizeStep::verify(const PlanVerifier &check) const {
  const QuantizeStep &step = *this;
  const Plan &plan = check.getPlan();
  if (auto err = check.checkOperands(step, 1, 1))
    return err;
  const PlanTensor &x = plan.tensors[step.inputs[0]];
  const PlanTensor &y = plan.tensors[step.outputs[0]];
  const QuantizeGrid &g = step.getGrid();
  bool layoutsFit = step.isToNhwc() ? x.layout == PlanLayout::Onnx &&
                                          y.layout == PlanLayout::Nhwc
                                    : x.layout == y.layout;
  if (x.kind != ElementKind::F32 || !PlanVerifier::isInt8Kind(y.kind) ||
      x.shape != step.getShape() || y.shape != step.getShape() || !layoutsFit)
    return makeError("quantizes f32 '" + x.name + "' into int8 '" + y.name +
                     "' of shape " + shapeToString(step.getShape()) +
                     ", which they are not (or not in those layouts)");
  return check.checkGrid(g, y);
}
