//===- GemmStep.h - An int8 Gemm/MatMul unit over rows ----------*- C++ -*-===//
//
// The class of one kind of plan step (qopt/Plan/PlanSteps.def); what it does,
// its fields, checks and work are in lib/Plan/Steps/GemmStep.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PLAN_STEPS_GEMM_STEP_H
#define QOPT_PLAN_STEPS_GEMM_STEP_H

#include "qopt/Plan/Plan.h"

namespace qopt {
namespace plan {

/// An int8 Gemm/MatMul unit on row-major operands in ONNX layout:
/// y[M x N] = epilogue(x[M x K] * w), x's leading dims flattened into M. It
/// runs as a 1x1 conv over M pixels of K channels (batch 1, M x 1 pixels),
/// whose kernel takes u8: s8 operands (stored as they are in ONNX layout)
/// are flipped to u8 around it, a chunk of rows at a time in scratch.
class GemmStep : public PlanStep {
public:
  GemmStep(std::string name, kernels::Int8Conv conv)
      : PlanStep(Kind::Gemm, std::move(name)), conv(std::move(conv)) {}
  /// Whether `s` is the conv of a Gemm: 1x1 over an M x 1 image, batch 1,
  /// no stride, pad, dilation or groups.
  static bool isGemmShape(const kernels::Int8ConvShape &s);
  /// The shape of a product of M x K and K x N.
  static kernels::Int8ConvShape makeShape(int64_t m, int64_t k, int64_t n);
  /// The conv's: groups of x's rows (M) times, when they are few (a batch
  /// of one), blocks of output channels.
  int64_t getNumTiles() const override { return conv.getNumTiles(); }
  size_t getScratchBytes() const override;
  int64_t getMacs() const override;
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  const kernels::Int8Conv &getConv() const { return conv; }
  llvm::Error writeFields(planfile::PlanEncoder &out) const override;
  llvm::Error verify(const PlanVerifier &check) const override;
  static bool classof(const PlanStep *s) { return s->getKind() == Kind::Gemm; }

private:
  kernels::Int8Conv conv;
};

} // namespace plan
} // namespace qopt

#endif // QOPT_PLAN_STEPS_GEMM_STEP_H
