//===- ReformatStep.h - A tensor between ONNX layout and NHWC ---*- C++ -*-===//
//
// The class of one kind of plan step (qopt/Plan/PlanSteps.def); what it does,
// its fields, checks and work are in lib/Plan/Steps/ReformatStep.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PLAN_STEPS_REFORMAT_STEP_H
#define QOPT_PLAN_STEPS_REFORMAT_STEP_H

#include "qopt/Plan/Plan.h"

namespace qopt {
namespace plan {

/// The same 4-D tensor between the ONNX layout and NHWC (u8 for int8).
class ReformatStep : public PlanStep {
public:
  explicit ReformatStep(std::string name)
      : PlanStep(Kind::Reformat, std::move(name)) {}
  int64_t getNumTiles() const override;
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  llvm::Error writeFields(planfile::PlanEncoder &out) const override;
  llvm::Error verify(const PlanVerifier &check) const override;
  static bool classof(const PlanStep *s) {
    return s->getKind() == Kind::Reformat;
  }
  /// Set by the builder: the logical NCHW shape.
  interp::Shape shape;
  /// Into ONNX layout only: where the N * C rows of H * W elements lie in
  /// the result tensor (a part of a Concat, written in place). Row (n, c)
  /// is its row n * batchRows + firstRow + c (batchRows 0: C), rows
  /// rowStride elements apart, from element columnOffset of the row on.
  /// rowStride 0: the result is the NCHW tensor itself.
  int64_t rowStride = 0, columnOffset = 0, firstRow = 0, batchRows = 0;
};

} // namespace plan
} // namespace qopt

#endif // QOPT_PLAN_STEPS_REFORMAT_STEP_H
