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
#include <optional>

namespace qopt {
namespace plan {

/// y [rows x N] (f32) = x [rows x K] (f32, ONNX layout) times a constant
/// 4-bit weight on a block-wise grid (kernels::int4Gemm): a MatMul whose
/// weight is the DequantizeLinear of an int4 or uint4 initializer. Tiles are
/// panels of 32 columns. With int8 activations (a plan option, lossy) x is
/// rounded to int8 per segment of K and multiplied in integers
/// (kernels::int4DotGemm), as ONNX Runtime's MatMulNBits at accuracy
/// level 4 computes.
class Int4GemmStep : public PlanStep {
public:
  /// `int8Activations` needs kernels::Int4DotWeights::canPack(weights).
  Int4GemmStep(std::string name, kernels::Isa isa, int64_t rows,
               kernels::Int4Weights weights, bool int8Activations);
  int64_t getNumTiles() const override { return weights.numPanels(); }
  size_t getScratchBytes() const override;
  size_t getSharedBytes() const override;
  llvm::Error prepare(PlanRun &run, void *shared) const override;
  int64_t getMacs() const override { return rows * weights.k * weights.n; }
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  llvm::Error writeFields(planfile::PlanEncoder &out) const override;
  llvm::Error verify(const PlanVerifier &check) const override;
  bool hasInt8Activations() const { return dotWeights.has_value(); }
  int64_t getRows() const { return rows; }
  static bool classof(const PlanStep *s) {
    return s->getKind() == Kind::Int4Gemm;
  }

private:
  kernels::Isa isa;
  int64_t rows;
  /// The f32 kernel's weights; without codes when dotWeights holds them.
  kernels::Int4Weights weights;
  std::optional<kernels::Int4DotWeights> dotWeights;
};

} // namespace plan
} // namespace qopt

#endif // QOPT_PLAN_STEPS_INT4_GEMM_STEP_H
