//===- QuantizeStep.h - f32 onto int8 bytes, per tensor ---------*- C++ -*-===//
//
// The class of one kind of plan step (qopt/Plan/PlanSteps.def); what it does,
// its fields, checks and work are in lib/Plan/Steps/QuantizeStep.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PLAN_STEPS_QUANTIZE_STEP_H
#define QOPT_PLAN_STEPS_QUANTIZE_STEP_H

#include "qopt/Plan/Plan.h"

namespace qopt {
namespace plan {

/// A per-tensor quantize of an f32 tensor onto int8 bytes (Int8Quantize.h):
/// element by element in one layout, or from an NCHW f32 tensor straight
/// into NHWC (one row of each channel quantized, then interleaved).
class QuantizeStep : public PlanStep {
public:
  /// `shape`: the logical shape; `toNhwc`: an NCHW input written NHWC.
  QuantizeStep(std::string name, kernels::Isa isa, kernels::QuantizeGrid grid,
               interp::Shape shape, bool toNhwc)
      : PlanStep(Kind::Quantize, std::move(name)), isa(isa), grid(grid),
        shape(std::move(shape)), toNhwc(toNhwc) {
    assert((!toNhwc || this->shape.size() == 4) && "NCHW -> NHWC is 4-D");
    for (int64_t d : this->shape)
      elements *= d;
  }
  /// Rows of pixels (batch * height) to NHWC, else runs of elements.
  int64_t getNumTiles() const override;
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  const kernels::QuantizeGrid &getGrid() const { return grid; }
  const interp::Shape &getShape() const { return shape; }
  bool isToNhwc() const { return toNhwc; }
  llvm::Error writeFields(planfile::PlanEncoder &out) const override;
  llvm::Error verify(const PlanVerifier &check) const override;
  static bool classof(const PlanStep *s) {
    return s->getKind() == Kind::Quantize;
  }

private:
  kernels::Isa isa;
  kernels::QuantizeGrid grid;
  interp::Shape shape;
  bool toNhwc;
  int64_t elements = 1;
};

} // namespace plan
} // namespace qopt

#endif // QOPT_PLAN_STEPS_QUANTIZE_STEP_H
