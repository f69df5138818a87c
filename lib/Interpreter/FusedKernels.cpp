//===- FusedKernels.cpp - Reference kernels: the q.* fused units ----------===//
//
// A fused unit (Ops.def, "Fused units") runs the fake-quant chain it
// replaces, step by step, through the kernels of the ops in that chain:
// the quantized operands are dequantized, the anchor's ONNX kernel runs on
// them (the unit node carries the ONNX op's attributes), the epilogue
// follows in its order (bias, residual, activation), and a quantized result
// type quantizes the result. Every intermediate value is stored in the
// expressed float kind, as between the chain's nodes, and each activation
// uses the same arithmetic as its ONNX kernel (ActivationMath.h), so
// fuse<backend> leaves the interpreter's outputs bit-identical.
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/OpNames.h"
#include "qopt/Interpreter/NNUtil.h"
#include "qopt/Kernels/ActivationMath.h"

#include <deque>

using namespace qopt;
using namespace qopt::interp;
using namespace qopt::kernels;

namespace {

/// The unit's operands as the chain's float ops saw them: quantized ones
/// dequantized (kept alive here), float ones as they are.
class FloatOperands {
public:
  explicit FloatOperands(const KernelContext &ctx) : ctx(ctx) {}

  /// Operand i, or null when absent.
  llvm::Expected<const Tensor *> get(unsigned i) {
    const Tensor *t = ctx.input(i);
    if (!t)
      return nullptr;
    const QuantType *q = ctx.op.getOperandQuantType(i);
    if (!q)
      return t;
    owned.emplace_back();
    if (auto err = dequantizeTensor(ctx, *t, q, owned.back()))
      return std::move(err);
    return &owned.back();
  }

private:
  const KernelContext &ctx;
  std::deque<Tensor> owned;
};

/// Runs the ONNX kernel `op` on `inputs` with the unit node's attributes;
/// returns its first result.
llvm::Expected<Tensor> runOnnxKernel(const KernelContext &ctx,
                                     llvm::StringRef op,
                                     std::vector<const Tensor *> inputs) {
  KernelFn fn = KernelRegistry::get().lookup(op);
  if (!fn)
    return ctx.error("no kernel for " + op);
  KernelContext inner(ctx.op, std::move(inputs), ctx.opset);
  if (auto err = fn(inner))
    return std::move(err);
  return std::move(inner.outputs[0]);
}

/// y = f(y) element by element, as a unary float kernel computes it.
template <typename F> void applyEach(Tensor &y, F f) {
  for (int64_t i = 0, n = y.numElements(); i < n; ++i)
    y.setDouble(i, f(y.getDouble(i)));
}

/// The `activation` attribute applied to `y` in place.
llvm::Error applyActivation(const KernelContext &ctx, Tensor &y) {
  std::string name = ctx.getString("activation", "none");
  if (name == "none")
    return llvm::Error::success();
  if (!isFloatKind(y.kind()))
    return ctx.error("activation on a non-float tensor");
  std::vector<float> p = ctx.getFloats("activation_params");
  auto param = [&](size_t i) { return i < p.size() ? double(p[i]) : 0.0; };
  if (name == "relu") {
    applyEach(y, act::relu);
  } else if (name == "leaky_relu") {
    double alpha = param(0);
    applyEach(y, [=](double v) { return act::leakyRelu(v, alpha); });
  } else if (name == "clip") {
    double lo = param(0), hi = param(1);
    applyEach(y, [=](double v) { return act::clip(v, lo, hi); });
  } else if (name == "sigmoid") {
    applyEach(y, act::sigmoid);
  } else if (name == "tanh") {
    applyEach(y, [](double v) { return std::tanh(v); });
  } else if (name == "hard_sigmoid") {
    double alpha = param(0), beta = param(1);
    applyEach(y, [=](double v) { return act::hardSigmoid(v, alpha, beta); });
  } else if (name == "hard_swish") {
    applyEach(y, act::hardSwish);
  } else if (name == "silu") {
    // Mul(x, Sigmoid(x)): the sigmoid is stored before the product.
    Tensor s = y;
    applyEach(s, act::sigmoid);
    for (int64_t i = 0, n = y.numElements(); i < n; ++i)
      y.setDouble(i, y.getDouble(i) * s.getDouble(i));
  } else {
    return ctx.error("unknown activation '" + name + "'");
  }
  return llvm::Error::success();
}

/// The result: quantized onto the result type's grid, or float.
llvm::Error writeResult(KernelContext &ctx, Tensor y) {
  const QuantType *q = ctx.op.getResultQuantType();
  if (!q) {
    ctx.outputs[0] = std::move(y);
    return llvm::Error::success();
  }
  return quantizeTensor(ctx, y, q, ctx.outputs[0]);
}

/// Activation, then the result (the int8 ops without a residual).
llvm::Error finish(KernelContext &ctx, llvm::Expected<Tensor> y) {
  if (!y)
    return y.takeError();
  if (auto err = applyActivation(ctx, *y))
    return err;
  return writeResult(ctx, std::move(*y));
}

/// q.conv, q.conv_transpose, q.gemm, q.matmul: operands x, w, bias (the
/// anchor's own for Conv/Gemm, added after the product for MatMul),
/// residual.
llvm::Error weightedUnit(KernelContext &ctx, llvm::StringRef anchor,
                         bool biasIsAnchorOperand) {
  FloatOperands in(ctx);
  std::vector<const Tensor *> args;
  for (unsigned i = 0; i < 4; ++i) {
    auto t = in.get(i);
    if (!t)
      return t.takeError();
    args.push_back(*t);
  }
  if (!args[0] || !args[1])
    return ctx.error("missing input or weight");
  std::vector<const Tensor *> anchorArgs{args[0], args[1]};
  if (biasIsAnchorOperand && args[2])
    anchorArgs.push_back(args[2]);
  auto y = runOnnxKernel(ctx, anchor, anchorArgs);
  if (!y)
    return y.takeError();
  if (!biasIsAnchorOperand && args[2]) {
    y = runOnnxKernel(ctx, ops::Add, {&*y, args[2]});
    if (!y)
      return y.takeError();
  }
  const Tensor *residual = args[3];
  bool residualLast = ctx.getInt("residual_after_activation", 0) != 0;
  if (residual && !residualLast) {
    y = runOnnxKernel(ctx, ops::Add, {&*y, residual});
    if (!y)
      return y.takeError();
  }
  if (auto err = applyActivation(ctx, *y))
    return err;
  if (residual && residualLast) {
    y = runOnnxKernel(ctx, ops::Add, {&*y, residual});
    if (!y)
      return y.takeError();
  }
  return writeResult(ctx, std::move(*y));
}

llvm::Error qConvKernel(KernelContext &ctx) {
  return weightedUnit(ctx, ops::Conv, true);
}
llvm::Error qConvTransposeKernel(KernelContext &ctx) {
  return weightedUnit(ctx, ops::ConvTranspose, true);
}
llvm::Error qGemmKernel(KernelContext &ctx) {
  return weightedUnit(ctx, ops::Gemm, true);
}
llvm::Error qMatMulKernel(KernelContext &ctx) {
  return weightedUnit(ctx, ops::MatMul, false);
}

/// An int8 op over all its operands: DQ each, the ONNX kernel, activation,
/// result.
llvm::Error int8Unit(KernelContext &ctx, llvm::StringRef op) {
  FloatOperands in(ctx);
  std::vector<const Tensor *> args;
  for (unsigned i = 0; i < ctx.numInputs(); ++i) {
    auto t = in.get(i);
    if (!t)
      return t.takeError();
    if (!*t)
      return ctx.error("missing input " + llvm::Twine(i));
    args.push_back(*t);
  }
  return finish(ctx, runOnnxKernel(ctx, op, std::move(args)));
}

llvm::Error qAddKernel(KernelContext &ctx) { return int8Unit(ctx, ops::Add); }
llvm::Error qSubKernel(KernelContext &ctx) { return int8Unit(ctx, ops::Sub); }
llvm::Error qMulKernel(KernelContext &ctx) { return int8Unit(ctx, ops::Mul); }
llvm::Error qSoftmaxKernel(KernelContext &ctx) {
  return int8Unit(ctx, ops::Softmax);
}
llvm::Error qConcatKernel(KernelContext &ctx) {
  return int8Unit(ctx, ops::Concat);
}

llvm::Error qPoolKernel(KernelContext &ctx) {
  std::string mode = ctx.getString("mode", "");
  if (mode == "average")
    return int8Unit(ctx, ops::AveragePool);
  if (mode == "global_average")
    return int8Unit(ctx, ops::GlobalAveragePool);
  return ctx.error("unknown pooling mode '" + mode + "'");
}

llvm::Error qActivationKernel(KernelContext &ctx) {
  FloatOperands in(ctx);
  auto x = in.get(0);
  if (!x)
    return x.takeError();
  if (!*x)
    return ctx.error("missing input");
  return finish(ctx, Tensor(**x));
}

} // namespace

void interp::registerFusedKernels(KernelRegistry &r) {
  r.add(ops::QConv, qConvKernel);
  r.add(ops::QConvTranspose, qConvTransposeKernel);
  r.add(ops::QGemm, qGemmKernel);
  r.add(ops::QMatmul, qMatMulKernel);
  r.add(ops::QAdd, qAddKernel);
  r.add(ops::QSub, qSubKernel);
  r.add(ops::QMul, qMulKernel);
  r.add(ops::QPool, qPoolKernel);
  r.add(ops::QActivation, qActivationKernel);
  r.add(ops::QSoftmax, qSoftmaxKernel);
  r.add(ops::QConcat, qConcatKernel);
}
