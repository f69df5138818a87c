//===- PlanBuilder.h - Lowering a fused graph to a CPU plan -----*- C++ -*-===//
//
// Builds the INT8 CPU plan (qopt/Plan/Plan.h) of a graph, normally one
// that went through default<cpu>: each q.conv unit the int8 kernels can run
// becomes a conv step (weights packed once, bias, scales, activation,
// residual and output grid bound into its epilogue), every other node a
// float step running the reference interpreter's kernel, with layout
// changes where an NHWC int8 tensor meets an ONNX-layout consumer. Every
// tensor gets its place in the arena by liveness.
//
// The plan needs static shapes; a value without one is an error naming it.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_CODEGEN_PLANBUILDER_H
#define QOPT_CODEGEN_PLANBUILDER_H

#include "qopt/CodeGen/PlanPasses.h"
#include "qopt/IR/InputShapes.h" // bindStaticInputShapes, for the plan's callers
#include "qopt/Plan/Plan.h"

#include <map>

namespace qopt {
class Model;

struct PlanBuildOptions {
  /// The int8 kernels' instruction set.
  kernels::Isa isa = kernels::Isa::Scalar;
  /// The plan passes after lowering: which to skip, what to print and time.
  PlanPassOptions passes;
  /// Build a plan whose arithmetic is mostly float (plan::checkMostlyInt8)
  /// instead of refusing it. The tools' -allow-float-plan.
  bool allowFloatPlan = true;
  /// Round the f32 rows a weight-only 4-bit MatMul reads to int8 per
  /// segment of K and multiply in integers (kernels::int4DotGemm): faster,
  /// and a different function (ONNX Runtime's MatMulNBits at accuracy
  /// level 4). The tools' -int4-activations=int8.
  bool int8ActivationsForInt4 = false;
};

/// Largest constant (in elements) the plan builder folds: 2^26, 256 MiB of
/// f32, beyond any weight of the networks the plan runs.
constexpr int64_t kMaxFoldedElements = int64_t(1) << 26;

/// Lowers `model` to a plan. The graph is changed first as a lowering
/// changes it (LLVM's CodeGenPrepare): constant subgraphs fold, a weight's
/// Q/DQ read by a float step included; the values it computes stay
/// the same, so the model still serves as the plan's reference.
llvm::Expected<std::unique_ptr<plan::Plan>>
buildPlan(Model &model, const PlanBuildOptions &options);

} // namespace qopt

#endif // QOPT_CODEGEN_PLANBUILDER_H
