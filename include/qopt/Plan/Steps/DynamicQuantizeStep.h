//===- DynamicQuantizeStep.h - f32 onto u8 on its own range -----*- C++ -*-===//
//
// The class of one kind of plan step (qopt/Plan/PlanSteps.def); what it does,
// its fields, checks and work are in lib/Plan/Steps/DynamicQuantizeStep.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PLAN_STEPS_DYNAMIC_QUANTIZE_STEP_H
#define QOPT_PLAN_STEPS_DYNAMIC_QUANTIZE_STEP_H

#include "qopt/Kernels/CpuFeatures.h"
#include "qopt/Plan/Plan.h"

namespace qopt {
namespace plan {

/// ONNX DynamicQuantizeLinear: an f32 tensor onto u8, on the grid its own
/// range makes (kernels::dynamicQuantizeGrid), in any layout (element by
/// element); its results are the bytes, the scale (f32, one element) and
/// the zero point (u8, one element). One tile: the range spans the tensor.
class DynamicQuantizeStep : public PlanStep {
public:
  DynamicQuantizeStep(std::string name, kernels::Isa isa)
      : PlanStep(Kind::DynamicQuantize, std::move(name)), isa(isa) {}
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  llvm::Error writeFields(planfile::PlanEncoder &out) const override;
  llvm::Error verify(const PlanVerifier &check) const override;
  static bool classof(const PlanStep *s) {
    return s->getKind() == Kind::DynamicQuantize;
  }

private:
  kernels::Isa isa;
};

} // namespace plan
} // namespace qopt

#endif // QOPT_PLAN_STEPS_DYNAMIC_QUANTIZE_STEP_H
