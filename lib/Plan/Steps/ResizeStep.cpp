//===- ResizeStep.cpp - Nearest resize ------------------------------------===//
//
// Nearest-neighbour Resize over NHWC tensors as pixel copies, with the
// source rows and columns the reference kernel gives.
//
// The kind's row is in qopt/Plan/PlanSteps.def; this file has what it
// does, its fields in a plan file, what its kernel relies on and its work.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/Steps/ResizeStep.h"

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

llvm::Error ResizeStep::run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                            void * /*scratch*/) const {
  const Geometry &g = geometry;
  size_t pixelBytes =
      size_t(g.channels) * getElementByteSize(run.tensor(inputs[0]).kind);
  const char *x = run.read(inputs[0]);
  char *y = run.write(outputs[0]);
  for (int64_t row = tileBegin; row < tileEnd; ++row) {
    int64_t n = row / g.outH, oh = row % g.outH;
    const char *from = x + (n * g.inH + sourceRows[oh]) * g.inW * pixelBytes;
    char *to = y + row * g.outW * pixelBytes;
    // memmove: the verifier does not keep a file's tensors apart.
    for (int64_t ow = 0; ow < g.outW; ++ow)
      std::memmove(to + ow * pixelBytes, from + sourceCols[ow] * pixelBytes,
                   pixelBytes);
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Fields, checks, work
//===----------------------------------------------------------------------===//

llvm::Error ResizeStep::writeFields(planfile::PlanEncoder &encoder) const {
  FieldSink &out = encoder.out;
  const Geometry &g = geometry;
  for (int64_t v : {g.batch, g.channels, g.inH, g.inW, g.outH, g.outW})
    out.i64(v, "resize geometry");
  out.ints(sourceRows, "resize rows");
  out.ints(sourceCols, "resize columns");
  return llvm::Error::success();
}

std::unique_ptr<PlanStep> planfile::readResizeStep(PlanDecoder &decoder, Plan &,
                                                   const std::string &name) {
  FieldSource &in = decoder.in;
  ResizeStep::Geometry g;
  for (int64_t *v : {&g.batch, &g.channels, &g.inH, &g.inW, &g.outH, &g.outW})
    *v = in.i64("resize geometry");
  std::vector<int64_t> rows = in.ints("resize rows");
  std::vector<int64_t> cols = in.ints("resize columns");
  return std::make_unique<ResizeStep>(name, g, std::move(rows),
                                      std::move(cols));
}

llvm::Error ResizeStep::verify(const PlanVerifier &check) const {
  const ResizeStep &step = *this;
  const Plan &plan = check.getPlan();
  if (auto err = check.checkOperands(step, 1, 1))
    return err;
  const ResizeStep::Geometry &g = step.getGeometry();
  for (int64_t v : {g.batch, g.channels, g.inH, g.inW, g.outH, g.outW})
    if (v < 1 || v > PlanVerifier::kMaxGeometry)
      return makeError("a resize size is out of range");
  llvm::ArrayRef<int64_t> rows = step.getSourceRows();
  llvm::ArrayRef<int64_t> cols = step.getSourceCols();
  if (int64_t(rows.size()) != g.outH || int64_t(cols.size()) != g.outW ||
      llvm::any_of(rows, [&](int64_t r) { return r < 0 || r >= g.inH; }) ||
      llvm::any_of(cols, [&](int64_t c) { return c < 0 || c >= g.inW; }))
    return makeError("the resize maps do not take each output row and "
                     "column to one of the input's");
  const PlanTensor &x = plan.tensors[step.inputs[0]];
  bool int8 = PlanVerifier::isInt8Kind(x.kind);
  if (auto err =
          check.expectNhwc(step.inputs[0], {g.batch, g.channels, g.inH, g.inW},
                           int8, "its input"))
    return err;
  if (auto err = check.expectNhwc(step.outputs[0],
                                  {g.batch, g.channels, g.outH, g.outW}, int8,
                                  "its result"))
    return err;
  if (plan.tensors[step.outputs[0]].kind != x.kind)
    return makeError("resizes " + llvm::Twine(getElementKindName(x.kind)) +
                     " into another element type");
  return llvm::Error::success();
}
