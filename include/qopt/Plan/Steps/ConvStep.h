//===- ConvStep.h - An int8 conv unit over NHWC tensors ---------*- C++ -*-===//
//
// The class of one kind of plan step (qopt/Plan/PlanSteps.def); what it does,
// its fields, checks and work are in lib/Plan/Steps/ConvStep.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PLAN_STEPS_CONV_STEP_H
#define QOPT_PLAN_STEPS_CONV_STEP_H

#include "qopt/Plan/Plan.h"

namespace qopt {
namespace plan {

/// An int8 conv unit: x (and the residual) NHWC u8, y NHWC u8 or float.
class ConvStep : public PlanStep {
public:
  ConvStep(std::string name, kernels::Int8Conv conv)
      : PlanStep(Kind::Conv, std::move(name)), conv(std::move(conv)) {}
  /// The shape of 2-D conv `op` on an NCHW input of `x` with OIHW weights of
  /// `w` (the interpreter's rules for group, strides, dilations, pads and
  /// auto_pad).
  static llvm::Expected<kernels::Int8ConvShape>
  getShape(const interp::KernelOp &op, const interp::Shape &x,
           const interp::Shape &w);
  int64_t getNumTiles() const override { return conv.getNumTiles(); }
  size_t getScratchBytes() const override { return conv.getScratchBytes(); }
  int64_t getMacs() const override;
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  const kernels::Int8Conv &getConv() const { return conv; }
  /// Moves the kernel out, for a step that replaces this one.
  kernels::Int8Conv takeConv() { return std::move(conv); }
  llvm::Error writeFields(planfile::PlanEncoder &out) const override;
  llvm::Error verify(const PlanVerifier &check) const override;
  static bool classof(const PlanStep *s) { return s->getKind() == Kind::Conv; }

private:
  kernels::Int8Conv conv;
};

} // namespace plan
} // namespace qopt

#endif // QOPT_PLAN_STEPS_CONV_STEP_H
