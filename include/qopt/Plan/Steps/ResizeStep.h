//===- ResizeStep.h - Nearest resize over NHWC tensors ----------*- C++ -*-===//
//
// The class of one kind of plan step (qopt/Plan/PlanSteps.def); what it does,
// its fields, checks and work are in lib/Plan/Steps/ResizeStep.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PLAN_STEPS_RESIZE_STEP_H
#define QOPT_PLAN_STEPS_RESIZE_STEP_H

#include "qopt/Plan/Plan.h"

namespace qopt {
namespace plan {

/// Nearest-neighbour Resize (or Upsample) over NHWC tensors: output pixel
/// (oh, ow) of each image is input pixel (sourceRows[oh], sourceCols[ow]),
/// all its channels copied. The builder reads both maps off the reference
/// kernel, so every coordinate and rounding mode it runs is the same here.
class ResizeStep : public PlanStep {
public:
  struct Geometry {
    int64_t batch, channels, inH, inW, outH, outW;
  };
  ResizeStep(std::string name, Geometry geometry,
             std::vector<int64_t> sourceRows, std::vector<int64_t> sourceCols)
      : PlanStep(Kind::Resize, std::move(name)), geometry(geometry),
        sourceRows(std::move(sourceRows)), sourceCols(std::move(sourceCols)) {}
  /// Output rows (batch * outH).
  int64_t getNumTiles() const override {
    return geometry.batch * geometry.outH;
  }
  const Geometry &getGeometry() const { return geometry; }
  llvm::ArrayRef<int64_t> getSourceRows() const { return sourceRows; }
  llvm::ArrayRef<int64_t> getSourceCols() const { return sourceCols; }
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  llvm::Error writeFields(planfile::PlanEncoder &out) const override;
  llvm::Error verify(const PlanVerifier &check) const override;
  static bool classof(const PlanStep *s) {
    return s->getKind() == Kind::Resize;
  }

private:
  Geometry geometry;
  std::vector<int64_t> sourceRows, sourceCols;
};

} // namespace plan
} // namespace qopt

#endif // QOPT_PLAN_STEPS_RESIZE_STEP_H
