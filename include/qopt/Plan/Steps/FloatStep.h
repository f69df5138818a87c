//===- FloatStep.h - An op on a reference kernel ----------------*- C++ -*-===//
//
// The class of one kind of plan step (qopt/Plan/PlanSteps.def); its fields,
// checks and work are in lib/Plan/Steps/FloatStep.cpp, what it does in
// FloatStepRun.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PLAN_STEPS_FLOAT_STEP_H
#define QOPT_PLAN_STEPS_FLOAT_STEP_H

#include "qopt/Plan/Plan.h"

namespace qopt {
namespace plan {

/// An op the plan runs with the reference interpreter's kernel, on tensors
/// in ONNX layout; or, for an elementwise op whose operands all have the
/// result's shape (or one element), on NHWC tensors read as flat arrays
/// (int8 ones turned back into s8 around the kernel).
class FloatStep : public PlanStep {
public:
  FloatStep(std::string name, interp::KernelOp op, interp::KernelFn fn,
            int64_t opset);
  using PlanStep::getNumTiles;
  /// Runs of elements where its arithmetic runs without the kernel (see
  /// sameShapeElements), else 1.
  int64_t getNumTiles(const PlanRun &run) const override;
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  /// None of the loops below takes the step.
  bool runsReferenceKernel(const PlanRun &run) const override;
  /// Products (Gemm, MatMul), transcendental functions (Erf, Exp, Tanh,
  /// Sigmoid, Softmax) and row statistics (LayerNorm).
  bool isComputeBound(const PlanRun &run) const override;
  const interp::KernelOp &getOp() const { return op; }
  int64_t getOpset() const { return opset; }
  llvm::Error writeFields(planfile::PlanEncoder &out) const override;
  llvm::Error verify(const PlanVerifier &check) const override;
  uint64_t getWork(const Plan &plan) const override;
  /// The multiply-accumulates of a float step of a conv, matmul or gemm
  /// (and a pool's window taps), from its tensors' shapes in `plan`; none
  /// for other ops.
  std::optional<uint64_t> getFloatMacs(const Plan &plan) const;
  static bool classof(const PlanStep *s) { return s->getKind() == Kind::Float; }

  /// The attribute (an int, 1) that puts a Relu after an Add, Sub, Mul or
  /// Div of the step (the plan pass fuse-relu-into-float-arithmetic sets
  /// it): each result element is relu of the op's f32 result, as the two
  /// steps would give it, in the same pass.
  static constexpr const char *kReluAfter = "qopt.relu_after";
  bool hasReluAfter() const { return reluAfter; }
  /// Removes kReluAfter from the op's attributes, wherever it is.
  static void removeReluAfter(interp::KernelOp &op);

private:
  /// The elements of an Add, Sub, Mul or Div of two f32 tensors (of the
  /// result's shape and layout, or one of them a single value or, in ONNX
  /// layout, the result's trailing dims), or of a unary activation of one
  /// of the result's shape and layout, which runs as the kernel's
  /// arithmetic without its copies; 0 for any other step.
  int64_t sameShapeElements(const PlanRun &run) const;
  /// That arithmetic on elements [begin, end).
  void runSameShapeArithmetic(PlanRun &run, int64_t begin, int64_t end) const;
  /// For an Add, Sub, Mul or Div of an f32 NHWC tensor of the result's
  /// shape and an f32 [N, C, 1, 1] one (an SE block's scale), the index
  /// of the latter (0 or 1); -1 otherwise.
  int channelOperand(const PlanRun &run) const;
  /// That arithmetic on pixels [begin, end).
  void runChannelArithmetic(PlanRun &run, int channel, int64_t begin,
                            int64_t end) const;
  /// f(op), op the f32 operation of an Add, Sub, Mul or Div step (a
  /// std::plus<float>, ...: the bits of the reference's double operation
  /// rounded once); nothing for any other arithmetic.
  template <typename F> void withBinaryOp(F &&f) const;

  interp::KernelOp op;
  interp::KernelFn fn;
  int64_t opset;
  /// The op's arithmetic when it is one runSameShapeArithmetic knows: the
  /// reference kernel's function of each element's double, rounded once.
  enum class Arithmetic {
    None,
    Add,
    Sub,
    Mul,
    Div,
    Relu,
    LeakyRelu,
    Sigmoid,
    Tanh,
    HardSigmoid,
    HardSwish,
    Erf,
    Sqrt,
    Exp,
    LayerNorm,
    Transpose,
    Softmax,
    Gemm,
    Pow,
    ReduceMean,
    MatMul,
  } arithmetic;
  /// kReluAfter on an Add, Sub, Mul or Div.
  bool reluAfter = false;
  /// LeakyRelu's and HardSigmoid's attributes (LayerNormalization's
  /// epsilon in alpha, its axis in axis), as the kernels read them.
  double alpha = 0, beta = 0;
  int64_t axis = -1;
  /// For a LayerNormalization its loop takes: the rows (the dims before
  /// the axis) and each row's elements; 0 rows otherwise.
  std::pair<int64_t, int64_t> layerNormRows(const PlanRun &run) const;
  void runLayerNorm(PlanRun &run, int64_t inner, int64_t begin,
                    int64_t end) const;
  /// For a Softmax its loop takes (contiguous rows in ONNX layout): the
  /// rows and each row's elements; 0 rows otherwise.
  std::pair<int64_t, int64_t> softmaxRows(const PlanRun &run) const;
  /// For a ReduceMean over the last axis alone of an f32 tensor in ONNX
  /// layout (axis holds it): the rows and each row's elements; 0 rows
  /// otherwise.
  std::pair<int64_t, int64_t> meanRows(const PlanRun &run) const;
  /// For a Transpose of 4-byte elements in ONNX layout that swaps two
  /// blocks of trailing dims (perm [0..p), [q..r), [p..q)): the batch
  /// count, then the rows and columns of each batch's 2-D transpose; 0
  /// batches otherwise.
  std::array<int64_t, 3> transposeBlocks(const PlanRun &run) const;
  /// For any other Transpose of 4-byte elements in ONNX layout: the
  /// result's rows (all dims but the last), 0 otherwise; its tiles (blocks
  /// of rows) and running tiles [tileBegin, tileEnd) of it
  /// (FloatStepTranspose.cpp, with transposeBlocks).
  int64_t permutedRows(const PlanRun &run) const;
  int64_t permuteTiles(const PlanRun &run) const;
  void runPermute(PlanRun &run, int64_t tileBegin, int64_t tileEnd) const;
  std::vector<int64_t> perm;
  /// For a Gemm of f32 A (not transposed) by a constant f32 B, C none or
  /// constant along the rows: its weights as gemmColumns reads them, made
  /// on first use; null otherwise.
  struct GemmWeights;
  const GemmWeights *gemmWeights(const PlanRun &run) const;
  /// The tiles of such a Gemm (blocks of output columns), 0 otherwise;
  /// running tiles [tileBegin, tileEnd) of it (FloatStepGemm.cpp).
  int64_t gemmTiles(const PlanRun &run) const;
  void runGemm(PlanRun &run, int64_t tileBegin, int64_t tileEnd) const;
  /// For a MatMul of two f32 tensors in ONNX layout, both of rank 2 or
  /// more, whose batch dims broadcast: the result's batches (the product
  /// of its batch dims), and each batch's rows, inner size and columns; 0
  /// batches otherwise. Its tiles are blocks of a batch's rows; running
  /// tiles [tileBegin, tileEnd) of it (FloatStepGemm.cpp).
  struct MatMulShape {
    int64_t batches = 0, m = 0, k = 0, n = 0;
  };
  MatMulShape matmulShape(const PlanRun &run) const;
  int64_t matmulTiles(const PlanRun &run) const;
  void runMatMul(PlanRun &run, const MatMulShape &shape, int64_t tileBegin,
                 int64_t tileEnd) const;
  bool gemmTransB = false;
  mutable std::once_flag gemmOnce;
  mutable std::shared_ptr<const GemmWeights> gemm;
};

} // namespace plan
} // namespace qopt

#endif // QOPT_PLAN_STEPS_FLOAT_STEP_H
