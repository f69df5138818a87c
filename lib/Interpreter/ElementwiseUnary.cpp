//===- ElementwiseUnary.cpp - Reference kernels: one-input ops ------------===//
//
// The elementwise ops of one input: math (Abs, Neg, Sqrt, Exp, Log,
// rounding, trigonometric and hyperbolic functions, Erf), activations (Relu,
// Sigmoid, Tanh, LeakyRelu, HardSigmoid, HardSwish, Softplus, Softsign, Elu,
// Selu, ThresholdedRelu, Celu, Shrink, Mish, Gelu) and the predicates IsNaN,
// IsInf and Not.
//
//===----------------------------------------------------------------------===//

#include "ElementwiseUtil.h"
#include "qopt/IR/OpNames.h"
#include "qopt/Kernels/ActivationMath.h"

using namespace qopt;
using namespace qopt::interp;
using namespace qopt::kernels;
using namespace qopt::interp::elementwise;

using llvm::Error;

namespace {

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

/// Float unary op y = f(x). With allowInt, integer inputs are computed in
/// double and truncated back (Erf).
template <typename F>
Error unaryFloat(KernelContext &ctx, F f, bool allowInt = false) {
  const Tensor *x;
  if (Error e = requireInput(ctx, 0, x))
    return e;
  if (Error e = requireKind(ctx, *x,
                            isFloatKind(x->kind()) ||
                                (allowInt && isIntegerKind(x->kind())),
                            allowInt ? "a numeric" : "a floating-point"))
    return e;
  if (Error e = ctx.allocateOutput(0, x->kind(), x->shape()))
    return e;
  Tensor &y = ctx.outputs[0];
  for (int64_t i = 0, n = x->numElements(); i < n; ++i)
    y.setDouble(i, f(x->getDouble(i)));
  return Error::success();
}

/// Numeric unary op: ff on floats, fi(value, isU64) on integers.
template <typename FF, typename FI>
Error unaryNumeric(KernelContext &ctx, FF ff, FI fi, bool allowUnsigned) {
  const Tensor *x;
  if (Error e = requireInput(ctx, 0, x))
    return e;
  ElementKind k = x->kind();
  if (Error e = requireKind(ctx, *x,
                            isFloatKind(k) || isSignedIntegerKind(k) ||
                                (allowUnsigned && isUnsignedKind(k)),
                            allowUnsigned ? "a numeric" : "a signed numeric"))
    return e;
  if (Error e = ctx.allocateOutput(0, k, x->shape()))
    return e;
  Tensor &y = ctx.outputs[0];
  bool u64 = k == ElementKind::U64;
  for (int64_t i = 0, n = x->numElements(); i < n; ++i) {
    if (isFloatKind(k))
      y.setDouble(i, ff(x->getDouble(i)));
    else
      y.setInt(i, fi(x->getInt(i), u64));
  }
  return Error::success();
}

/// log(1 + exp(x)) without overflow.
double softplus(double x) {
  if (x > 0)
    return x + std::log1p(std::exp(-x));
  return std::log1p(std::exp(x));
}

Error absKernel(KernelContext &ctx) {
  return unaryNumeric(
      ctx, [](double v) { return std::fabs(v); },
      [](int64_t v, bool u64) { return u64 || v >= 0 ? v : wrapNeg(v); },
      /*allowUnsigned=*/true);
}

Error negKernel(KernelContext &ctx) {
  return unaryNumeric(
      ctx, [](double v) { return -v; },
      [](int64_t v, bool) { return wrapNeg(v); }, /*allowUnsigned=*/false);
}

Error signKernel(KernelContext &ctx) {
  return unaryNumeric(
      ctx,
      [](double v) {
        return std::isnan(v) ? v : static_cast<double>((v > 0) - (v < 0));
      },
      [](int64_t v, bool u64) -> int64_t {
        if (u64)
          return v != 0;
        return (v > 0) - (v < 0);
      },
      /*allowUnsigned=*/true);
}

Error reluKernel(KernelContext &ctx) {
  return unaryNumeric(
      ctx, act::relu,
      [](int64_t v, bool u64) -> int64_t { return !u64 && v < 0 ? 0 : v; },
      /*allowUnsigned=*/true);
}

Error sqrtKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return std::sqrt(v); });
}
Error expKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return std::exp(v); });
}
Error logKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return std::log(v); });
}
Error floorKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return std::floor(v); });
}
Error ceilKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return std::ceil(v); });
}
Error roundKernel(KernelContext &ctx) {
  // Half to even, independent of the current rounding mode.
  return unaryFloat(ctx, [](double v) {
    double r = std::round(v); // half away from zero
    if (std::fabs(v - std::trunc(v)) == 0.5)
      r = 2.0 * std::round(v / 2.0);
    return r;
  });
}
Error reciprocalKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return 1.0 / v; });
}
Error sinKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return std::sin(v); });
}
Error cosKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return std::cos(v); });
}
Error tanKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return std::tan(v); });
}
Error asinKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return std::asin(v); });
}
Error acosKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return std::acos(v); });
}
Error atanKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return std::atan(v); });
}
Error sinhKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return std::sinh(v); });
}
Error coshKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return std::cosh(v); });
}
Error asinhKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return std::asinh(v); });
}
Error acoshKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return std::acosh(v); });
}
Error atanhKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return std::atanh(v); });
}
Error tanhKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return std::tanh(v); });
}
Error sigmoidKernel(KernelContext &ctx) {
  return unaryFloat(ctx, act::sigmoid);
}
Error erfKernel(KernelContext &ctx) {
  return unaryFloat(
      ctx, [](double v) { return std::erf(v); }, /*allowInt=*/true);
}
Error softplusKernel(KernelContext &ctx) { return unaryFloat(ctx, softplus); }
Error softsignKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return v / (1.0 + std::fabs(v)); });
}
Error mishKernel(KernelContext &ctx) {
  return unaryFloat(ctx, [](double v) { return v * std::tanh(softplus(v)); });
}

Error leakyReluKernel(KernelContext &ctx) {
  double alpha = ctx.getFloat("alpha", 0.01f);
  return unaryFloat(ctx, [=](double v) { return act::leakyRelu(v, alpha); });
}

Error eluKernel(KernelContext &ctx) {
  double alpha = ctx.getFloat("alpha", 1.0f);
  return unaryFloat(
      ctx, [=](double v) { return v < 0 ? alpha * (std::exp(v) - 1.0) : v; });
}

Error seluKernel(KernelContext &ctx) {
  double alpha = ctx.getFloat("alpha", 1.67326319217681884765625f);
  double gamma = ctx.getFloat("gamma", 1.05070102214813232421875f);
  return unaryFloat(ctx, [=](double v) {
    return v <= 0 ? gamma * (alpha * std::exp(v) - alpha) : gamma * v;
  });
}

Error thresholdedReluKernel(KernelContext &ctx) {
  double alpha = ctx.getFloat("alpha", 1.0f);
  return unaryFloat(ctx, [=](double v) { return v > alpha ? v : 0.0; });
}

Error celuKernel(KernelContext &ctx) {
  double alpha = ctx.getFloat("alpha", 1.0f);
  if (alpha == 0)
    return ctx.error("alpha must be nonzero");
  return unaryFloat(ctx, [=](double v) {
    return std::max(0.0, v) + std::min(0.0, alpha * std::expm1(v / alpha));
  });
}

Error shrinkKernel(KernelContext &ctx) {
  double lambd = ctx.getFloat("lambd", 0.5f);
  double bias = ctx.getFloat("bias", 0.0f);
  return unaryFloat(
      ctx,
      [=](double v) {
        return v < -lambd ? v + bias : (v > lambd ? v - bias : 0.0);
      },
      /*allowInt=*/true);
}

Error hardSigmoidKernel(KernelContext &ctx) {
  double alpha = ctx.getFloat("alpha", 0.2f);
  double beta = ctx.getFloat("beta", 0.5f);
  return unaryFloat(ctx,
                    [=](double v) { return act::hardSigmoid(v, alpha, beta); });
}

Error hardSwishKernel(KernelContext &ctx) {
  return unaryFloat(ctx, act::hardSwish);
}

Error geluKernel(KernelContext &ctx) {
  std::string approx = ctx.getString("approximate", "none");
  if (approx == "none")
    return unaryFloat(ctx, [](double v) {
      return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    });
  if (approx == "tanh")
    return unaryFloat(ctx, [](double v) {
      const double k = 0.7978845608028654; // sqrt(2 / pi)
      return 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)));
    });
  return ctx.error("unsupported approximate '" + approx + "'");
}

/// Float predicate y = f(x) with a bool output.
template <typename F> Error floatPredicate(KernelContext &ctx, F f) {
  const Tensor *x;
  if (Error e = requireInput(ctx, 0, x))
    return e;
  if (Error e =
          requireKind(ctx, *x, isFloatKind(x->kind()), "a floating-point"))
    return e;
  if (Error e = ctx.allocateOutput(0, ElementKind::Bool, x->shape()))
    return e;
  Tensor &y = ctx.outputs[0];
  for (int64_t i = 0, n = x->numElements(); i < n; ++i)
    y.setInt(i, f(x->getDouble(i)));
  return Error::success();
}

Error isNaNKernel(KernelContext &ctx) {
  return floatPredicate(ctx, [](double v) { return std::isnan(v); });
}

Error isInfKernel(KernelContext &ctx) {
  bool neg = ctx.getInt("detect_negative", 1) != 0;
  bool pos = ctx.getInt("detect_positive", 1) != 0;
  return floatPredicate(
      ctx, [=](double v) { return std::isinf(v) && (v > 0 ? pos : neg); });
}

Error notKernel(KernelContext &ctx) {
  const Tensor *x;
  if (Error e = requireInput(ctx, 0, x))
    return e;
  if (Error e = requireKind(ctx, *x, x->kind() == ElementKind::Bool, "a bool"))
    return e;
  if (Error e = ctx.allocateOutput(0, ElementKind::Bool, x->shape()))
    return e;
  for (int64_t i = 0, n = x->numElements(); i < n; ++i)
    ctx.outputs[0].setInt(i, x->getInt(i) == 0);
  return Error::success();
}

} // namespace

void elementwise::registerUnaryKernels(KernelRegistry &r) {
  // Math.
  r.add(ops::Neg, negKernel);
  r.add(ops::Abs, absKernel);
  r.add(ops::Sign, signKernel);
  r.add(ops::Reciprocal, reciprocalKernel);
  r.add(ops::Sqrt, sqrtKernel);
  r.add(ops::Exp, expKernel);
  r.add(ops::Log, logKernel);
  r.add(ops::Floor, floorKernel);
  r.add(ops::Ceil, ceilKernel);
  r.add(ops::Round, roundKernel);
  r.add(ops::Erf, erfKernel);
  r.add(ops::Sin, sinKernel);
  r.add(ops::Cos, cosKernel);
  r.add(ops::Tan, tanKernel);
  r.add(ops::Asin, asinKernel);
  r.add(ops::Acos, acosKernel);
  r.add(ops::Atan, atanKernel);
  r.add(ops::Sinh, sinhKernel);
  r.add(ops::Cosh, coshKernel);
  r.add(ops::Asinh, asinhKernel);
  r.add(ops::Acosh, acoshKernel);
  r.add(ops::Atanh, atanhKernel);
  // Activations.
  r.add(ops::Relu, reluKernel);
  r.add(ops::Sigmoid, sigmoidKernel);
  r.add(ops::Tanh, tanhKernel);
  r.add(ops::LeakyRelu, leakyReluKernel);
  r.add(ops::HardSigmoid, hardSigmoidKernel);
  r.add(ops::HardSwish, hardSwishKernel);
  r.add(ops::Softplus, softplusKernel);
  r.add(ops::Softsign, softsignKernel);
  r.add(ops::Elu, eluKernel);
  r.add(ops::Selu, seluKernel);
  r.add(ops::ThresholdedRelu, thresholdedReluKernel);
  r.add(ops::Celu, celuKernel);
  r.add(ops::Shrink, shrinkKernel);
  r.add(ops::Mish, mishKernel);
  r.add(ops::Gelu, geluKernel);
  // Predicates and logic.
  r.add(ops::Not, notKernel);
  r.add(ops::IsNaN, isNaNKernel);
  r.add(ops::IsInf, isInfKernel);
}
