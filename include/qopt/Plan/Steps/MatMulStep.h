//===- MatMulStep.h - Int8 MatMul of two activations ------------*- C++ -*-===//
//
// The class of one kind of plan step (qopt/Plan/PlanSteps.def); what it does,
// its fields, checks and work are in lib/Plan/Steps/MatMulStep.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PLAN_STEPS_MAT_MUL_STEP_H
#define QOPT_PLAN_STEPS_MAT_MUL_STEP_H

#include "qopt/Plan/Plan.h"

namespace qopt {
namespace plan {

/// An int8 MatMul of two activations (attention's Q K^T and softmax V):
/// for each of `batches` products (the result's leading dims, each
/// operand's size-1 dims broadcast as numpy does), an M x K by K x N
/// product of the stored values minus their zero points, exact in s32
/// (qopt/Kernels/Int8MatMul.h), times lhs scale * rhs scale in double, rounded
/// to f32, then quantized onto `output` as q.quantize does or kept as f32. The
/// operands are i8 or u8 of the result's rank in either layout; the result is
/// in ONNX layout.
class MatMulStep : public PlanStep {
public:
  struct Params {
    int64_t batches = 1, m = 1, k = 1, n = 1;
    float lhsScale = 1, rhsScale = 1;
    int32_t lhsZero = 0, rhsZero = 0;
    /// The result's grid, or none for an f32 result.
    std::optional<kernels::QuantizeGrid> output;
  };
  /// Rows of one product a tile computes.
  static constexpr int64_t kRowsPerTile = 32;
  /// Largest K: the s32 sums cannot overflow (255 * 255 * K < 2^31).
  static constexpr int64_t kMaxDepth = int64_t(1) << 15;
  /// Whether each size is at least 1, K at most kMaxDepth, and the rest
  /// such that no size computed from them overflows (the verifier checks
  /// them against the tensors).
  static bool isGeometryInRange(const Params &p) {
    constexpr int64_t kMaxSize = int64_t(1) << 31;
    return p.batches >= 1 && p.m >= 1 && p.k >= 1 && p.n >= 1 &&
           p.batches <= kMaxSize && p.m <= kMaxSize && p.k <= kMaxDepth &&
           p.n <= kMaxSize;
  }

  MatMulStep(std::string name, kernels::Isa isa, Params params)
      : PlanStep(Kind::MatMul, std::move(name)), isa(isa), params(params),
        kernel(isa, params.k, params.n) {}
  const Params &getParams() const { return params; }
  int64_t getNumTiles() const override {
    return params.batches * ((params.m + kRowsPerTile - 1) / kRowsPerTile);
  }
  size_t getScratchBytes() const override;
  int64_t getMacs() const override {
    return params.batches * params.m * params.k * params.n;
  }
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  llvm::Error writeFields(planfile::PlanEncoder &out) const override;
  llvm::Error verify(const PlanVerifier &check) const override;
  static bool classof(const PlanStep *s) {
    return s->getKind() == Kind::MatMul;
  }

private:
  kernels::Isa isa;
  Params params;
  kernels::Int8MatMul kernel;
};

} // namespace plan
} // namespace qopt

#endif // QOPT_PLAN_STEPS_MAT_MUL_STEP_H
