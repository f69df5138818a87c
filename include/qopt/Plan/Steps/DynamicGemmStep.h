//===- DynamicGemmStep.h - An int8 MatMul on a runtime grid -----*- C++ -*-===//
//
// The class of one kind of plan step (qopt/Plan/PlanSteps.def); what it does,
// its fields, checks and work are in lib/Plan/Steps/DynamicGemmStep.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PLAN_STEPS_DYNAMIC_GEMM_STEP_H
#define QOPT_PLAN_STEPS_DYNAMIC_GEMM_STEP_H

#include "qopt/Plan/Plan.h"

namespace qopt {
namespace plan {

/// A dynamically quantized MatMul (ONNX Runtime's MatMulIntegerToFloat):
/// y[M x N] (f32) = (x - z_x)(w - z_w) in int32, times s_x * s_w[n], plus
/// bias[n]. x is u8 rows in ONNX layout whose scale s_x (f32) and zero
/// point z_x (u8) are tensors of one element, known only when the plan
/// runs (a dynamic-quantize step's results); w is a constant s8 matrix
/// packed as a gemm step's, its scales the conv epilogue's scale, with the
/// bias there too. Tiles as a gemm step's.
class DynamicGemmStep : public PlanStep {
public:
  DynamicGemmStep(std::string name, kernels::Int8Conv conv)
      : PlanStep(Kind::DynamicGemm, std::move(name)), conv(std::move(conv)) {}
  int64_t getNumTiles() const override { return conv.getNumTiles(); }
  size_t getScratchBytes() const override;
  int64_t getMacs() const override;
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  const kernels::Int8Conv &getConv() const { return conv; }
  llvm::Error writeFields(planfile::PlanEncoder &out) const override;
  llvm::Error verify(const PlanVerifier &check) const override;
  static bool classof(const PlanStep *s) {
    return s->getKind() == Kind::DynamicGemm;
  }

private:
  kernels::Int8Conv conv;
};

} // namespace plan
} // namespace qopt

#endif // QOPT_PLAN_STEPS_DYNAMIC_GEMM_STEP_H
