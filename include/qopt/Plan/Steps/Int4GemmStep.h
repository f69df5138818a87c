//===- Int4GemmStep.h - A weight-only 4-bit MatMul --------------*- C++ -*-===//
//
// The class of one kind of plan step (qopt/Plan/PlanSteps.def); what it does,
// its fields, checks and work are in lib/Plan/Steps/Int4GemmStep.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PLAN_STEPS_INT4_GEMM_STEP_H
#define QOPT_PLAN_STEPS_INT4_GEMM_STEP_H

#include "qopt/Kernels/CpuFeatures.h"
#include "qopt/Kernels/Int4Weights.h"
#include "qopt/Plan/Plan.h"

namespace qopt {
namespace plan {

/// y [rows x N] (f32) = x [rows x K] (f32, ONNX layout) times a constant
/// 4-bit weight on a block-wise grid (kernels::int4Gemm): a MatMul whose
/// weight is the DequantizeLinear of an int4 or uint4 initializer. Tiles are
/// panels of 32 columns.
class Int4GemmStep : public PlanStep {
public:
  Int4GemmStep(std::string name, kernels::Isa isa, int64_t rows,
               kernels::Int4Weights weights)
      : PlanStep(Kind::Int4Gemm, std::move(name)), isa(isa), rows(rows),
        weights(std::move(weights)) {}
  int64_t getNumTiles() const override { return weights.numPanels(); }
  size_t getScratchBytes() const override;
  int64_t getMacs() const override { return rows * weights.k * weights.n; }
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  llvm::Error writeFields(planfile::PlanEncoder &out) const override;
  llvm::Error verify(const PlanVerifier &check) const override;
  const kernels::Int4Weights &getWeights() const { return weights; }
  int64_t getRows() const { return rows; }
  static bool classof(const PlanStep *s) {
    return s->getKind() == Kind::Int4Gemm;
  }

private:
  kernels::Isa isa;
  int64_t rows;
  kernels::Int4Weights weights;
};

} // namespace plan
} // namespace qopt

#endif // QOPT_PLAN_STEPS_INT4_GEMM_STEP_H
