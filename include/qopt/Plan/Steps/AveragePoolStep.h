//===- AveragePoolStep.h - Average pooling over NHWC tensors ----*- C++ -*-===//
//
// The class of one kind of plan step (qopt/Plan/PlanSteps.def); what it does,
// its fields, checks and work are in lib/Plan/Steps/AveragePoolStep.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PLAN_STEPS_AVERAGE_POOL_STEP_H
#define QOPT_PLAN_STEPS_AVERAGE_POOL_STEP_H

#include "qopt/Plan/Plan.h"
#include "qopt/Plan/Steps/PoolStep.h"

namespace qopt {
namespace plan {

/// Average pooling of an NHWC tensor, int8 (q.pool's average and global
/// average modes) or f32 (AveragePool, GlobalAveragePool): each result is
/// the mean of the window's values (f32, or each stored byte's value from
/// `values`), summed in double in the reference's tap order and divided as
/// the reference divides, rounded to f32, then quantized onto `output` as
/// q.quantize does, or kept as f32. So the bytes are the reference's.
class AveragePoolStep : public PlanStep {
public:
  struct Params {
    PoolStep::Window window;
    /// The pads after the input (count_include_pad counts them).
    int64_t padBottom = 0, padRight = 0;
    bool countIncludePad = false;
    /// The value of each stored input byte (256), or none for f32 input.
    std::vector<float> values;
    /// The result's grid, or none for an f32 result.
    std::optional<kernels::QuantizeGrid> output;
  };
  AveragePoolStep(std::string name, kernels::Isa isa, Params params)
      : PlanStep(Kind::AveragePool, std::move(name)), isa(isa),
        params(std::move(params)) {}
  int64_t getNumTiles() const override {
    return params.window.batch * params.window.outH;
  }
  size_t getScratchBytes() const override {
    return size_t(params.window.channels) * (sizeof(double) + sizeof(float));
  }
  const Params &getParams() const { return params; }
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  llvm::Error writeFields(planfile::PlanEncoder &out) const override;
  llvm::Error verify(const PlanVerifier &check) const override;
  uint64_t getWork(const Plan &plan) const override;
  static bool classof(const PlanStep *s) {
    return s->getKind() == Kind::AveragePool;
  }

private:
  kernels::Isa isa;
  Params params;
};

} // namespace plan
} // namespace qopt

#endif // QOPT_PLAN_STEPS_AVERAGE_POOL_STEP_H
