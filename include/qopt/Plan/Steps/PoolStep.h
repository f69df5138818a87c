//===- PoolStep.h - Max pooling over NHWC tensors ---------------*- C++ -*-===//
//
// The class of one kind of plan step (qopt/Plan/PlanSteps.def); what it does,
// its fields, checks and work are in lib/Plan/Steps/PoolStep.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PLAN_STEPS_POOL_STEP_H
#define QOPT_PLAN_STEPS_POOL_STEP_H

#include "qopt/Plan/Plan.h"

namespace qopt {
namespace plan {

/// MaxPool over an NHWC tensor (u8 as stored, or f32); the window skips
/// padding, as ONNX's MaxPool does.
class PoolStep : public PlanStep {
public:
  struct Window {
    int64_t batch, channels, inH, inW, outH, outW;
    int64_t kernelH, kernelW, strideH, strideW, dilationH, dilationW;
    int64_t padTop, padLeft;
  };
  PoolStep(std::string name, Window window, bool isFloat)
      : PlanStep(Kind::Pool, std::move(name)), window(window),
        isFloat(isFloat) {}
  /// The window of MaxPool `op` on an NCHW input of `inShape` (the
  /// interpreter's rules for auto_pad, pads and ceil_mode), checked against
  /// the result shape `outShape`; the pads after the input go to `padEnd`
  /// when given.
  static llvm::Expected<Window> getWindow(const interp::KernelOp &op,
                                          const interp::Shape &inShape,
                                          const interp::Shape &outShape,
                                          interp::Shape *padEnd = nullptr);
  /// Whether every window of `w` (each parameter already in range) starts
  /// before the input ends and ends after it begins: none lies wholly in
  /// the padding, as ONNX Runtime requires (pads smaller than the window,
  /// no window starting in the end padding). getWindow and the plan
  /// verifier both check it.
  static llvm::Error checkGeometry(const Window &w);
  int64_t getNumTiles() const override { return window.batch * window.outH; }
  const Window &getWindow() const { return window; }
  bool isFloatPool() const { return isFloat; }
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  llvm::Error writeFields(planfile::PlanEncoder &out) const override;
  llvm::Error verify(const PlanVerifier &check) const override;
  uint64_t getWork(const Plan &plan) const override;
  /// The outputs of `w` times its taps inside the input (saturating).
  static uint64_t getWindowWork(const Window &w);
  static bool classof(const PlanStep *s) { return s->getKind() == Kind::Pool; }

private:
  Window window;
  bool isFloat;
};

} // namespace plan
} // namespace qopt

#endif // QOPT_PLAN_STEPS_POOL_STEP_H
