//===- PlanVerifier.h - Checks a plan's steps rely on -----------*- C++ -*-===//
//
// The checks verifyPlan makes of the whole plan (tensors, ids, the arena),
// and the ones each kind of step's verify() (lib/Plan/Steps/) makes of its
// own tensors and parameters through them.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_PLAN_PLANVERIFIER_H
#define QOPT_LIB_PLAN_PLANVERIFIER_H

#include "qopt/Plan/Plan.h"
#include "qopt/Plan/Steps/PoolStep.h"

#include "llvm/ADT/Twine.h"

namespace qopt {
namespace plan {

class PlanVerifier {
public:
  /// Largest tensor or arena a plan may describe (1 TiB): far beyond any
  /// model, small enough that no size computed from it overflows.
  static constexpr uint64_t kMaxPlanBytes = uint64_t(1) << 40;
  /// Largest geometry parameter (a dimension, stride, pad, ...).
  static constexpr int64_t kMaxGeometry = int64_t(1) << 31;

  static bool isInt8Kind(ElementKind kind) {
    return kind == ElementKind::I8 || kind == ElementKind::U8;
  }

  PlanVerifier(const Plan &plan, bool requirePlacement)
      : plan(plan), requirePlacement(requirePlacement) {}

  /// The whole plan: tensors, graph inputs and outputs, each step (its
  /// verify()), then the budget.
  llvm::Error verify();

  const Plan &getPlan() const { return plan; }

  /// Tensor `id` exists; `role` names it in the error.
  llvm::Error checkId(int id, const llvm::Twine &role) const;
  /// The step reads `inputs` and writes `outputs` tensors, each an id of
  /// the plan (-1, absent, allowed when `optional`), no result a constant.
  llvm::Error checkOperands(const PlanStep &s, size_t inputs, size_t outputs,
                            bool optional = false) const;
  /// checkOperands without the counts.
  llvm::Error checkIds(const PlanStep &s, bool optional) const;
  /// Tensor `id` is NHWC with `shape`, i8 or u8 (`int8`) or else f32.
  llvm::Error expectNhwc(int id, const interp::Shape &shape, bool int8,
                         const llvm::Twine &role) const;
  /// Tensor `id` is `rows` x `columns` in ONNX layout (its last dim the
  /// columns), int8 or f32.
  llvm::Error expectRows(int id, int64_t rows, int64_t columns, bool int8,
                         const llvm::Twine &role) const;
  /// A quantize grid onto int8 tensor `y`: a positive finite scale, a zero
  /// point of y's type, y's signedness and stored flip.
  llvm::Error checkGrid(const kernels::QuantizeGrid &g,
                        const PlanTensor &y) const;
  /// A pool window's parameters in range, no window wholly in the padding.
  static llvm::Error checkWindow(const PoolStep::Window &w);

private:
  llvm::Error verifyTensor(int id) const;

  const Plan &plan;
  bool requirePlacement;
  std::vector<bool> referenced;
};

} // namespace plan
} // namespace qopt

#endif // QOPT_LIB_PLAN_PLANVERIFIER_H
