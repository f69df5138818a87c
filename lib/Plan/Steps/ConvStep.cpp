//===- ConvStep.cpp - Int8 conv steps -------------------------------------===//
//
// An int8 conv unit: the kernel of qopt/Kernels/Int8Conv.h over NHWC u8
// tensors (its input, residual and pair operand), its epilogue onto NHWC u8
// or f32.
//
// The kind's row is in qopt/Plan/PlanSteps.def; this file has what it
// does, its fields in a plan file, what its kernel relies on and its work.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/Steps/ConvStep.h"

#include "PlanFields.h"
#include "PlanVerifier.h"
#include "qopt/Interpreter/NNUtil.h"
#include "qopt/Support/Error.h"

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;
using namespace qopt::plan::planfile;

//===----------------------------------------------------------------------===//
// Running
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
// Fields, checks, work
//===----------------------------------------------------------------------===//

llvm::Error ConvStep::writeFields(planfile::PlanEncoder &encoder) const {
  encoder.conv(conv);
  return llvm::Error::success();
}

std::unique_ptr<PlanStep> planfile::readConvStep(PlanDecoder &decoder, Plan &,
                                                 const std::string &name) {
  if (auto c = decoder.conv(name))
    return std::make_unique<ConvStep>(name, std::move(*c));
  return nullptr;
}

llvm::Error ConvStep::verify(const PlanVerifier &check) const {
  const ConvStep &step = *this;
  const Int8Conv &conv = step.getConv();
  const Int8ConvShape &c = conv.getShape();
  const Int8Epilogue &e = conv.getEpilogue();
  if (auto err = Int8Conv::checkParams(c, e))
    return err;
  bool paired = !e.pairTable.empty();
  if (auto err = check.checkOperands(step, 1 + e.hasResidual + paired, 1))
    return err;
  Shape out{c.batch, c.outC, c.outH(), c.outW()};
  if (auto err = check.expectNhwc(
          step.inputs[0], {c.batch, c.inC, c.inH, c.inW}, true, "its input"))
    return err;
  if (e.hasResidual)
    if (auto err = check.expectNhwc(step.inputs[1], out, true, "its residual"))
      return err;
  if (paired)
    if (auto err = check.expectNhwc(step.inputs.back(), out, true,
                                    "its pair table's operand"))
      return err;
  return check.expectNhwc(step.outputs[0], out, e.outputScale != 0,
                          "its result");
}
