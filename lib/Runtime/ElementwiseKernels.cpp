//===- ElementwiseKernels.cpp - Reference kernels: elementwise ops --------===//
//
// Elementwise math, activations, comparisons, logic, Cast, variadic folds
// (Min/Max/Sum/Mean), reductions and ArgMax/ArgMin, with ONNX semantics and
// numpy broadcasting. The ONNX reference implementation (onnx/reference/ops)
// is the ground truth where the spec leaves a detail open.
//
// Floats are computed in double and stored with one rounding to the output
// kind (Tensor::setDouble); integers use int64 arithmetic that wraps like the
// narrower ONNX type (uint64 arithmetic where C++ signed overflow would be
// undefined). Nothing here asserts on user input: bad types, shapes and
// attributes are reported through ctx.error().
//
//===----------------------------------------------------------------------===//

#include "ActivationMath.h"
#include "qopt/Runtime/Kernel.h"
#include "qopt/Support/FloatFormat.h"

#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

using namespace qopt;
using namespace qopt::rt;

using llvm::Error;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

//===----------------------------------------------------------------------===//
// Element helpers
//===----------------------------------------------------------------------===//

bool isNumericKind(ElementKind k) { return isFloatKind(k) || isIntegerKind(k); }
bool isUnsignedKind(ElementKind k) {
  return isIntegerKind(k) && !isSignedIntegerKind(k);
}

std::string kindName(ElementKind k) { return getElementKindName(k).str(); }

bool isNaNAt(const Tensor &t, int64_t i) {
  return isFloatKind(t.kind()) && std::isnan(t.getDouble(i));
}

/// Three-way comparison of a[ia] and b[ib] (same kind): -1, 0, 1, or 2 when
/// unordered (a NaN is involved).
int compareAt(const Tensor &a, int64_t ia, const Tensor &b, int64_t ib) {
  ElementKind k = a.kind();
  if (isFloatKind(k)) {
    double x = a.getDouble(ia), y = b.getDouble(ib);
    if (std::isnan(x) || std::isnan(y))
      return 2;
    return (x > y) - (x < y);
  }
  if (k == ElementKind::U64) {
    uint64_t x = static_cast<uint64_t>(a.getInt(ia));
    uint64_t y = static_cast<uint64_t>(b.getInt(ib));
    return (x > y) - (x < y);
  }
  int64_t x = a.getInt(ia), y = b.getInt(ib);
  return (x > y) - (x < y);
}

// Wrapping int64 arithmetic (stores truncate to the element width after).
int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) +
                              static_cast<uint64_t>(b));
}
int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) -
                              static_cast<uint64_t>(b));
}
int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) *
                              static_cast<uint64_t>(b));
}
int64_t wrapNeg(int64_t a) {
  return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
}

/// Integer division truncating toward zero; x / 0 is 0 (numpy's result,
/// and no undefined behaviour), INT64_MIN / -1 wraps.
int64_t intDiv(int64_t a, int64_t b, bool u64) {
  if (b == 0)
    return 0;
  if (u64)
    return static_cast<int64_t>(static_cast<uint64_t>(a) /
                                static_cast<uint64_t>(b));
  if (b == -1)
    return wrapNeg(a);
  return a / b;
}

/// C remainder (sign of the dividend); x % 0 is 0.
int64_t intRem(int64_t a, int64_t b, bool u64) {
  if (b == 0)
    return 0;
  if (u64)
    return static_cast<int64_t>(static_cast<uint64_t>(a) %
                                static_cast<uint64_t>(b));
  if (b == -1)
    return 0;
  return a % b;
}

/// base ** exp with wrapping; negative exponents give the truncated real
/// result (0 unless |base| == 1).
int64_t intPow(int64_t base, int64_t exp, bool expUnsigned) {
  if (exp < 0 && !expUnsigned) {
    if (base == 1)
      return 1;
    if (base == -1)
      return (exp & 1) ? -1 : 1;
    return 0;
  }
  uint64_t e = static_cast<uint64_t>(exp);
  uint64_t r = 1, b = static_cast<uint64_t>(base);
  while (e) {
    if (e & 1)
      r *= b;
    b *= b;
    e >>= 1;
  }
  return static_cast<int64_t>(r);
}

/// Smallest and largest value of an integer or bool kind, as stored by
/// setInt (U64's maximum is all ones, i.e. -1 as int64).
std::pair<int64_t, int64_t> intKindRange(ElementKind k) {
  switch (k) {
  case ElementKind::Bool:
    return {0, 1};
  case ElementKind::I8:
    return {INT8_MIN, INT8_MAX};
  case ElementKind::U8:
    return {0, UINT8_MAX};
  case ElementKind::I16:
    return {INT16_MIN, INT16_MAX};
  case ElementKind::U16:
    return {0, UINT16_MAX};
  case ElementKind::I32:
    return {INT32_MIN, INT32_MAX};
  case ElementKind::U32:
    return {0, UINT32_MAX};
  case ElementKind::U64:
    return {0, -1};
  default:
    return {INT64_MIN, INT64_MAX};
  }
}

//===----------------------------------------------------------------------===//
// Input checks and broadcasting
//===----------------------------------------------------------------------===//

Error requireInput(const KernelContext &ctx, size_t i, const Tensor *&t) {
  t = ctx.input(i);
  if (!t || !t->isValid())
    return ctx.error("missing required input " + llvm::Twine(i));
  return Error::success();
}

Error requireSameKind(const KernelContext &ctx, const Tensor &a,
                      const Tensor &b) {
  if (a.kind() != b.kind())
    return ctx.error("input element types differ: " + kindName(a.kind()) +
                     " and " + kindName(b.kind()));
  return Error::success();
}

Error requireKind(const KernelContext &ctx, const Tensor &t, bool ok,
                  llvm::StringRef what) {
  if (!ok)
    return ctx.error("expects " + what + " input, got " + kindName(t.kind()));
  return Error::success();
}

/// Inputs broadcast to a common shape; offsets[k] maps each output element
/// to its element of input k (empty when input k already has the shape).
struct Broadcast {
  Shape shape;
  int64_t count = 0;
  std::vector<std::vector<int64_t>> offsets;
  int64_t at(size_t k, int64_t i) const {
    return offsets[k].empty() ? i : offsets[k][i];
  }
};

llvm::Expected<Broadcast> broadcastAll(const KernelContext &ctx,
                                       llvm::ArrayRef<const Tensor *> ins) {
  Broadcast b;
  b.shape = ins[0]->shape();
  for (size_t k = 1; k < ins.size(); ++k) {
    auto s = broadcastShapes(b.shape, ins[k]->shape());
    if (!s)
      return ctx.error("shapes " + shapeToString(b.shape) + " and " +
                       shapeToString(ins[k]->shape()) + " do not broadcast");
    b.shape = std::move(*s);
  }
  auto n = shapeNumElements(b.shape);
  if (!n || *n > (int64_t(1) << 31))
    return ctx.error("broadcast shape " + shapeToString(b.shape) +
                     " is too large");
  b.count = *n;
  for (const Tensor *t : ins) {
    if (t->shape() == b.shape)
      b.offsets.emplace_back();
    else
      b.offsets.push_back(BroadcastIndexer(t->shape(), b.shape).offsets());
  }
  return b;
}

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

//===----------------------------------------------------------------------===//
// Binary ops
//===----------------------------------------------------------------------===//

/// Two inputs of the same kind, broadcast.
Error binaryInputs(KernelContext &ctx, const Tensor *&a, const Tensor *&b,
                   Broadcast &bc) {
  if (Error e = requireInput(ctx, 0, a))
    return e;
  if (Error e = requireInput(ctx, 1, b))
    return e;
  if (Error e = requireSameKind(ctx, *a, *b))
    return e;
  auto r = broadcastAll(ctx, {a, b});
  if (!r)
    return r.takeError();
  bc = std::move(*r);
  return Error::success();
}

/// Numeric binary op: ff on floats, fi(a, b, isU64) on integers.
template <typename FF, typename FI>
Error binaryArith(KernelContext &ctx, FF ff, FI fi) {
  const Tensor *a, *b;
  Broadcast bc;
  if (Error e = binaryInputs(ctx, a, b, bc))
    return e;
  ElementKind k = a->kind();
  if (Error e = requireKind(ctx, *a, isNumericKind(k), "a numeric"))
    return e;
  if (Error e = ctx.allocateOutput(0, k, bc.shape))
    return e;
  Tensor &y = ctx.outputs[0];
  bool u64 = k == ElementKind::U64;
  for (int64_t i = 0; i < bc.count; ++i) {
    int64_t ia = bc.at(0, i), ib = bc.at(1, i);
    if (isFloatKind(k))
      y.setDouble(i, ff(a->getDouble(ia), b->getDouble(ib)));
    else
      y.setInt(i, fi(a->getInt(ia), b->getInt(ib), u64));
  }
  return Error::success();
}

Error addKernel(KernelContext &ctx) {
  return binaryArith(
      ctx, [](double x, double y) { return x + y; },
      [](int64_t x, int64_t y, bool) { return wrapAdd(x, y); });
}

Error subKernel(KernelContext &ctx) {
  return binaryArith(
      ctx, [](double x, double y) { return x - y; },
      [](int64_t x, int64_t y, bool) { return wrapSub(x, y); });
}

Error mulKernel(KernelContext &ctx) {
  return binaryArith(
      ctx, [](double x, double y) { return x * y; },
      [](int64_t x, int64_t y, bool) { return wrapMul(x, y); });
}

Error divKernel(KernelContext &ctx) {
  return binaryArith(
      ctx, [](double x, double y) { return x / y; }, intDiv);
}

Error modKernel(KernelContext &ctx) {
  bool fmod = ctx.getInt("fmod", 0) != 0;
  return binaryArith(
      ctx,
      [=](double x, double y) {
        double r = std::fmod(x, y);
        // The reference applies nan_to_num when fmod=0 on floats.
        return !fmod && std::isnan(r) ? 0.0 : r;
      },
      [=](int64_t x, int64_t y, bool u64) {
        int64_t r = intRem(x, y, u64);
        // Python-style modulo: the result takes the divisor's sign.
        if (!fmod && !u64 && r != 0 && ((r < 0) != (y < 0)))
          r += y;
        return r;
      });
}

Error powKernel(KernelContext &ctx) {
  const Tensor *a, *b;
  if (Error e = requireInput(ctx, 0, a))
    return e;
  if (Error e = requireInput(ctx, 1, b))
    return e;
  ElementKind ka = a->kind(), kb = b->kind();
  if (Error e = requireKind(ctx, *a, isNumericKind(ka), "a numeric base"))
    return e;
  if (Error e = requireKind(ctx, *b, isNumericKind(kb), "a numeric exponent"))
    return e;
  auto bc = broadcastAll(ctx, {a, b});
  if (!bc)
    return bc.takeError();
  if (Error e = ctx.allocateOutput(0, ka, bc->shape))
    return e;
  Tensor &y = ctx.outputs[0];
  bool intPath = isIntegerKind(ka) && isIntegerKind(kb);
  bool expU64 = kb == ElementKind::U64;
  for (int64_t i = 0; i < bc->count; ++i) {
    int64_t ia = bc->at(0, i), ib = bc->at(1, i);
    if (intPath)
      y.setInt(i, intPow(a->getInt(ia), b->getInt(ib), expU64));
    else
      y.setDouble(i, std::pow(a->getDouble(ia), b->getDouble(ib)));
  }
  return Error::success();
}

Error bitShiftKernel(KernelContext &ctx) {
  std::string dir = ctx.getString("direction", "");
  if (dir != "LEFT" && dir != "RIGHT")
    return ctx.error("direction must be LEFT or RIGHT, got '" + dir + "'");
  bool left = dir == "LEFT";
  const Tensor *a, *b;
  Broadcast bc;
  if (Error e = binaryInputs(ctx, a, b, bc))
    return e;
  ElementKind k = a->kind();
  if (Error e = requireKind(ctx, *a, isUnsignedKind(k), "an unsigned integer"))
    return e;
  if (Error e = ctx.allocateOutput(0, k, bc.shape))
    return e;
  Tensor &y = ctx.outputs[0];
  uint64_t width = 8 * getElementByteSize(k);
  for (int64_t i = 0; i < bc.count; ++i) {
    uint64_t x = static_cast<uint64_t>(a->getInt(bc.at(0, i)));
    uint64_t s = static_cast<uint64_t>(b->getInt(bc.at(1, i)));
    uint64_t r = s >= width ? 0 : (left ? x << s : x >> s);
    y.setInt(i, static_cast<int64_t>(r));
  }
  return Error::success();
}

Error preluKernel(KernelContext &ctx) {
  const Tensor *x, *slope;
  if (Error e = requireInput(ctx, 0, x))
    return e;
  if (Error e = requireInput(ctx, 1, slope))
    return e;
  if (Error e = requireSameKind(ctx, *x, *slope))
    return e;
  ElementKind k = x->kind();
  if (Error e = requireKind(ctx, *x, isNumericKind(k), "a numeric"))
    return e;
  auto s = broadcastShapes(x->shape(), slope->shape());
  if (!s || *s != x->shape())
    return ctx.error("slope of shape " + shapeToString(slope->shape()) +
                     " does not broadcast to " + shapeToString(x->shape()));
  if (Error e = ctx.allocateOutput(0, k, x->shape()))
    return e;
  Tensor &y = ctx.outputs[0];
  std::vector<int64_t> off;
  if (slope->shape() != x->shape())
    off = BroadcastIndexer(slope->shape(), x->shape()).offsets();
  bool unsig = isUnsignedKind(k);
  for (int64_t i = 0, n = x->numElements(); i < n; ++i) {
    int64_t is = off.empty() ? i : off[i];
    if (isFloatKind(k)) {
      double v = x->getDouble(i);
      y.setDouble(i, v < 0 ? slope->getDouble(is) * v : v);
    } else {
      int64_t v = x->getInt(i);
      y.setInt(i, !unsig && v < 0 ? wrapMul(slope->getInt(is), v) : v);
    }
  }
  return Error::success();
}

/// Comparison with a bool output; pred gets compareAt's result.
template <typename P>
Error compareKernel(KernelContext &ctx, P pred, bool allowBoolAndString) {
  const Tensor *a, *b;
  Broadcast bc;
  if (Error e = binaryInputs(ctx, a, b, bc))
    return e;
  ElementKind k = a->kind();
  bool ok = isNumericKind(k) ||
            (allowBoolAndString &&
             (k == ElementKind::Bool || k == ElementKind::String));
  if (Error e = requireKind(ctx, *a, ok,
                            allowBoolAndString ? "a numeric, bool or string"
                                               : "a numeric"))
    return e;
  if (Error e = ctx.allocateOutput(0, ElementKind::Bool, bc.shape))
    return e;
  Tensor &y = ctx.outputs[0];
  for (int64_t i = 0; i < bc.count; ++i) {
    int64_t ia = bc.at(0, i), ib = bc.at(1, i);
    int c;
    if (k == ElementKind::String) {
      int r = a->strings()[ia].compare(b->strings()[ib]);
      c = (r > 0) - (r < 0);
    } else {
      c = compareAt(*a, ia, *b, ib);
    }
    y.setInt(i, pred(c));
  }
  return Error::success();
}

Error equalKernel(KernelContext &ctx) {
  return compareKernel(
      ctx, [](int c) { return c == 0; }, /*allowBoolAndString=*/true);
}
Error greaterKernel(KernelContext &ctx) {
  return compareKernel(
      ctx, [](int c) { return c == 1; }, false);
}
Error lessKernel(KernelContext &ctx) {
  return compareKernel(
      ctx, [](int c) { return c == -1; }, false);
}
Error greaterOrEqualKernel(KernelContext &ctx) {
  return compareKernel(
      ctx, [](int c) { return c == 1 || c == 0; }, false);
}
Error lessOrEqualKernel(KernelContext &ctx) {
  return compareKernel(
      ctx, [](int c) { return c == -1 || c == 0; }, false);
}

template <typename F> Error logicKernel(KernelContext &ctx, F f) {
  const Tensor *a, *b;
  Broadcast bc;
  if (Error e = binaryInputs(ctx, a, b, bc))
    return e;
  if (Error e = requireKind(ctx, *a, a->kind() == ElementKind::Bool, "a bool"))
    return e;
  if (Error e = ctx.allocateOutput(0, ElementKind::Bool, bc.shape))
    return e;
  for (int64_t i = 0; i < bc.count; ++i)
    ctx.outputs[0].setInt(
        i, f(a->getInt(bc.at(0, i)) != 0, b->getInt(bc.at(1, i)) != 0));
  return Error::success();
}

Error andKernel(KernelContext &ctx) {
  return logicKernel(ctx, [](bool x, bool y) { return x && y; });
}
Error orKernel(KernelContext &ctx) {
  return logicKernel(ctx, [](bool x, bool y) { return x || y; });
}
Error xorKernel(KernelContext &ctx) {
  return logicKernel(ctx, [](bool x, bool y) { return x != y; });
}

Error whereKernel(KernelContext &ctx) {
  const Tensor *c, *x, *y;
  if (Error e = requireInput(ctx, 0, c))
    return e;
  if (Error e = requireInput(ctx, 1, x))
    return e;
  if (Error e = requireInput(ctx, 2, y))
    return e;
  if (Error e = requireKind(ctx, *c, c->kind() == ElementKind::Bool,
                            "a bool condition"))
    return e;
  if (Error e = requireSameKind(ctx, *x, *y))
    return e;
  ElementKind k = x->kind();
  if (k == ElementKind::Unknown)
    return ctx.error("input element type is unknown");
  auto bc = broadcastAll(ctx, {c, x, y});
  if (!bc)
    return bc.takeError();
  if (Error e = ctx.allocateOutput(0, k, bc->shape))
    return e;
  Tensor &out = ctx.outputs[0];
  size_t sz = getElementByteSize(k);
  for (int64_t i = 0; i < bc->count; ++i) {
    bool cond = c->getInt(bc->at(0, i)) != 0;
    const Tensor &src = cond ? *x : *y;
    int64_t j = bc->at(cond ? 1 : 2, i);
    if (k == ElementKind::String)
      out.strings()[i] = src.strings()[j];
    else
      std::memcpy(out.bytes() + i * sz, src.bytes() + j * sz, sz);
  }
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Clip
//===----------------------------------------------------------------------===//

Error clipKernel(KernelContext &ctx) {
  const Tensor *x;
  if (Error e = requireInput(ctx, 0, x))
    return e;
  ElementKind k = x->kind();
  // Bounds as stored in a one-element tensor of the input's kind, so that
  // comparisons use compareAt (exact for every kind).
  std::optional<Tensor> lo, hi;
  bool boundInputs = ctx.input(1) || ctx.input(2);
  if (ctx.opset < 11 && !boundInputs) {
    // Clip-6: float attributes, defaulting to the float range.
    if (Error e = requireKind(ctx, *x, isFloatKind(k), "a floating-point"))
      return e;
    lo = Tensor::scalar(ElementKind::F64, ctx.getFloat("min", -FLT_MAX));
    hi = Tensor::scalar(ElementKind::F64, ctx.getFloat("max", FLT_MAX));
  } else {
    // Clip-11+: optional scalar inputs of the input's type.
    if (Error e = requireKind(ctx, *x, isNumericKind(k), "a numeric"))
      return e;
    for (size_t i : {1, 2}) {
      const Tensor *t = ctx.input(i);
      if (!t)
        continue;
      if (Error e = requireSameKind(ctx, *x, *t))
        return e;
      if (t->numElements() != 1)
        return ctx.error(llvm::Twine(i == 1 ? "min" : "max") +
                         " must be a scalar, got shape " +
                         shapeToString(t->shape()));
      (i == 1 ? lo : hi) = t->reshaped({});
    }
  }
  if (Error e = ctx.allocateOutput(0, k, x->shape()))
    return e;
  Tensor &y = ctx.outputs[0];
  if (isFloatKind(k)) {
    // np.clip: minimum(maximum(x, lo), hi); NaN propagates from any side.
    double l = lo ? lo->getDouble(0) : -kInf;
    double h = hi ? hi->getDouble(0) : kInf;
    for (int64_t i = 0, n = x->numElements(); i < n; ++i) {
      y.setDouble(i, act::clip(x->getDouble(i), l, h));
    }
    return Error::success();
  }
  for (int64_t i = 0, n = x->numElements(); i < n; ++i) {
    int64_t v = x->getInt(i);
    if (lo && compareAt(*x, i, *lo, 0) < 0)
      v = lo->getInt(0);
    if (hi && compareAt(*x, i, *hi, 0) > 0)
      v = hi->getInt(0);
    // min > max: everything becomes max (np.clip applies max last).
    if (lo && hi && compareAt(*lo, 0, *hi, 0) > 0)
      v = hi->getInt(0);
    y.setInt(i, v);
  }
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Variadic Min / Max / Sum / Mean
//===----------------------------------------------------------------------===//

enum class Fold { Min, Max, Sum, Mean };

Error variadicKernel(KernelContext &ctx, Fold op) {
  std::vector<const Tensor *> ins;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    const Tensor *t;
    if (Error e = requireInput(ctx, i, t))
      return e;
    ins.push_back(t);
  }
  if (ins.empty())
    return ctx.error("expects at least one input");
  ElementKind k = ins[0]->kind();
  for (const Tensor *t : ins)
    if (Error e = requireSameKind(ctx, *ins[0], *t))
      return e;
  bool intsOk = op == Fold::Min || op == Fold::Max;
  if (Error e = requireKind(ctx, *ins[0],
                            isFloatKind(k) || (intsOk && isIntegerKind(k)),
                            intsOk ? "a numeric" : "a floating-point"))
    return e;
  auto bc = broadcastAll(ctx, ins);
  if (!bc)
    return bc.takeError();
  if (Error e = ctx.allocateOutput(0, k, bc->shape))
    return e;
  Tensor &y = ctx.outputs[0];
  for (int64_t i = 0; i < bc->count; ++i) {
    if (isFloatKind(k)) {
      double acc = ins[0]->getDouble(bc->at(0, i));
      for (size_t j = 1; j < ins.size(); ++j) {
        double v = ins[j]->getDouble(bc->at(j, i));
        if (op == Fold::Sum || op == Fold::Mean)
          acc += v;
        else if (std::isnan(acc) || std::isnan(v))
          acc = kNaN;
        else
          acc = op == Fold::Min ? std::min(acc, v) : std::max(acc, v);
      }
      if (op == Fold::Mean)
        acc /= static_cast<double>(ins.size());
      y.setDouble(i, acc);
      continue;
    }
    size_t best = 0;
    for (size_t j = 1; j < ins.size(); ++j) {
      int c = compareAt(*ins[j], bc->at(j, i), *ins[best], bc->at(best, i));
      if (op == Fold::Min ? c < 0 : c > 0)
        best = j;
    }
    y.setInt(i, ins[best]->getInt(bc->at(best, i)));
  }
  return Error::success();
}

Error minKernel(KernelContext &ctx) { return variadicKernel(ctx, Fold::Min); }
Error maxKernel(KernelContext &ctx) { return variadicKernel(ctx, Fold::Max); }
Error sumKernel(KernelContext &ctx) { return variadicKernel(ctx, Fold::Sum); }
Error meanKernel(KernelContext &ctx) { return variadicKernel(ctx, Fold::Mean); }

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

/// Whether the decimal `text` reads back as v in the float kind k.
bool readsBackAs(const char *text, double v, ElementKind k) {
  switch (k) {
  case ElementKind::F32:
    return std::strtof(text, nullptr) == static_cast<float>(v);
  case ElementKind::F16:
    return halfToFloat(
               floatToHalf(roundToFloatOdd(std::strtod(text, nullptr)))) == v;
  case ElementKind::BF16:
    return bfloat16ToFloat(floatToBFloat16(
               roundToFloatOdd(std::strtod(text, nullptr)))) == v;
  default:
    return std::strtod(text, nullptr) == v;
  }
}

/// numpy's str() of a float scalar of kind k: the shortest digits that read
/// back, positional for 1e-4 <= |v| < 1e16 ("0.5", "3.0"), else scientific
/// ("1e-05", "1.5e+16"); "nan", "inf", "-inf".
std::string formatFloatLikeNumpy(double v, ElementKind k) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  char buf[64];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof(buf), "%.*e", p - 1, v);
    if (readsBackAs(buf, v, k))
      break;
  }
  // buf is "[-]d[.ddd]e[+-]XX".
  std::string text = buf;
  bool neg = text[0] == '-';
  size_t ePos = text.find('e');
  std::string digits;
  for (size_t i = neg ? 1 : 0; i < ePos; ++i)
    if (text[i] != '.')
      digits += text[i];
  int exp = std::atoi(text.c_str() + ePos + 1);
  while (digits.size() > 1 && digits.back() == '0')
    digits.pop_back();
  std::string out = neg ? "-" : "";
  double a = std::fabs(v);
  if (a == 0 || (a >= 1e-4 && a < 1e16)) {
    if (a == 0) {
      out += "0.0";
    } else if (exp >= 0) {
      size_t intLen = static_cast<size_t>(exp) + 1;
      std::string ip = digits.substr(0, std::min(intLen, digits.size()));
      ip.resize(intLen, '0');
      std::string fp = digits.size() > intLen ? digits.substr(intLen) : "0";
      out += ip + "." + fp;
    } else {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1)
    out += "." + digits.substr(1);
  int ae = std::abs(exp);
  out += std::string("e") + (exp < 0 ? "-" : "+") + (ae < 10 ? "0" : "") +
         std::to_string(ae);
  return out;
}

std::string elementToString(const Tensor &t, int64_t i) {
  ElementKind k = t.kind();
  if (isFloatKind(k))
    return formatFloatLikeNumpy(t.getDouble(i), k);
  if (k == ElementKind::Bool)
    return t.getInt(i) ? "True" : "False";
  if (k == ElementKind::U64)
    return std::to_string(static_cast<uint64_t>(t.getInt(i)));
  return std::to_string(t.getInt(i));
}

/// Parses a string element into element i of `out` (a numeric or bool
/// tensor). Accepts plain and scientific notation, "inf", "-INF", "NaN";
/// integers parse exactly, other text is truncated like float-to-int.
bool parseStringElement(const std::string &s, Tensor &out, int64_t i) {
  std::string text = llvm::StringRef(s).trim().str();
  if (text.empty())
    return false;
  const char *begin = text.c_str();
  const char *end = begin + text.size();
  char *stop = nullptr;
  ElementKind k = out.kind();
  if (k == ElementKind::Bool) {
    std::string lower = llvm::StringRef(text).lower();
    if (lower == "true" || lower == "false") {
      out.setInt(i, lower == "true");
      return true;
    }
  }
  if (isIntegerKind(k) || k == ElementKind::Bool) {
    errno = 0;
    if (k == ElementKind::U64 && text[0] != '-') {
      unsigned long long u = std::strtoull(begin, &stop, 10);
      if (stop == end && errno == 0) {
        out.setInt(i, static_cast<int64_t>(u));
        return true;
      }
    } else {
      long long v = std::strtoll(begin, &stop, 10);
      if (stop == end && errno == 0) {
        out.setInt(i, v);
        return true;
      }
    }
  }
  if (k == ElementKind::F32) {
    float f = std::strtof(begin, &stop);
    if (stop != end)
      return false;
    out.setDouble(i, f);
    return true;
  }
  double d = std::strtod(begin, &stop);
  if (stop != end)
    return false;
  out.setDouble(i, d);
  return true;
}

Error castTo(KernelContext &ctx, const Tensor &x, ElementKind to) {
  ElementKind from = x.kind();
  if (from == ElementKind::Unknown)
    return ctx.error("input element type is unknown");
  if (Error e = ctx.allocateOutput(0, to, x.shape()))
    return e;
  Tensor &y = ctx.outputs[0];
  int64_t n = x.numElements();
  if (from == to) {
    y = x;
    return Error::success();
  }
  if (to == ElementKind::String) {
    for (int64_t i = 0; i < n; ++i)
      y.strings()[i] = elementToString(x, i);
    return Error::success();
  }
  if (from == ElementKind::String) {
    for (int64_t i = 0; i < n; ++i)
      if (!parseStringElement(x.strings()[i], y, i))
        return ctx.error("cannot parse '" + x.strings()[i] + "' as " +
                         kindName(to));
    return Error::success();
  }
  bool intFrom = isIntegerKind(from) || from == ElementKind::Bool;
  for (int64_t i = 0; i < n; ++i) {
    if (intFrom && (isIntegerKind(to) || to == ElementKind::Bool)) {
      // Integer to integer wraps (two's complement), like numpy's astype.
      y.setInt(i, x.getInt(i));
    } else if (intFrom && to == ElementKind::F32 &&
               (from == ElementKind::I64 || from == ElementKind::U64)) {
      // One rounding from 64-bit integers.
      int64_t v = x.getInt(i);
      y.data<float>()[i] = from == ElementKind::U64
                               ? static_cast<float>(static_cast<uint64_t>(v))
                               : static_cast<float>(v);
    } else {
      // Float to integer truncates toward zero; floats round once.
      y.setDouble(i, x.getDouble(i));
    }
  }
  return Error::success();
}

Error castKernel(KernelContext &ctx) {
  const Tensor *x;
  if (Error e = requireInput(ctx, 0, x))
    return e;
  if (!ctx.hasAttr("to"))
    return ctx.error("missing attribute 'to'");
  int64_t t = ctx.getInt("to", 0);
  auto to = elementKindFromOnnxDataType(t);
  if (!to)
    return ctx.error("unsupported Cast target type " + llvm::Twine(t));
  return castTo(ctx, *x, *to);
}

Error castLikeKernel(KernelContext &ctx) {
  const Tensor *x, *like;
  if (Error e = requireInput(ctx, 0, x))
    return e;
  if (Error e = requireInput(ctx, 1, like))
    return e;
  return castTo(ctx, *x, like->kind());
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

enum class Reduce {
  Sum,
  Mean,
  Max,
  Min,
  Prod,
  L1,
  L2,
  SumSquare,
  LogSum,
  LogSumExp
};

/// Reduces over `axes` (attribute before the op took them as input 1; the
/// input wins when present), with keepdims and noop_with_empty_axes.
Error reduceKernel(KernelContext &ctx, Reduce op) {
  const Tensor *x;
  if (Error e = requireInput(ctx, 0, x))
    return e;
  ElementKind k = x->kind();
  bool boolOk = op == Reduce::Max || op == Reduce::Min;
  if (Error e = requireKind(
          ctx, *x, isNumericKind(k) || (boolOk && k == ElementKind::Bool),
          "a numeric"))
    return e;
  std::vector<int64_t> axes;
  if (const Tensor *a = ctx.input(1)) {
    if (!isIntegerKind(a->kind()) || a->rank() > 1)
      return ctx.error("axes must be a 1-D integer tensor");
    axes = a->toInts();
  } else {
    axes = ctx.getInts("axes");
  }
  bool keepdims = ctx.getInt("keepdims", 1) != 0;
  if (axes.empty() && ctx.getInt("noop_with_empty_axes", 0) != 0) {
    ctx.outputs[0] = *x;
    return Error::success();
  }
  int64_t rank = x->rank();
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    auto ax = normalizeAxis(ctx, a, rank);
    if (!ax)
      return ax.takeError();
    if (*ax >= rank)
      return ctx.error("axis " + llvm::Twine(a) + " is out of range for rank " +
                       llvm::Twine(rank));
    if (reduced[*ax])
      return ctx.error("axis " + llvm::Twine(a) + " is repeated");
    reduced[*ax] = true;
  }
  Shape keepShape, outShape;
  double groupSize = 1; // elements per output (double: cannot overflow)
  for (int64_t d = 0; d < rank; ++d) {
    keepShape.push_back(reduced[d] ? 1 : x->dim(d));
    if (reduced[d])
      groupSize *= static_cast<double>(x->dim(d));
    else
      outShape.push_back(x->dim(d));
  }
  if (Error e = ctx.allocateOutput(0, k, keepdims ? keepShape : outShape))
    return e;
  Tensor &y = ctx.outputs[0];
  int64_t nOut = y.numElements(), n = x->numElements();
  std::vector<int64_t> map = BroadcastIndexer(keepShape, x->shape()).offsets();

  // Integer Sum/Prod/L1/SumSquare/Max/Min stay exact in wrapping int64 (and
  // bool for Max/Min); everything else accumulates in double.
  bool intPath =
      !isFloatKind(k) &&
      (op == Reduce::Sum || op == Reduce::Prod || op == Reduce::L1 ||
       op == Reduce::SumSquare || op == Reduce::Max || op == Reduce::Min);
  if (intPath) {
    auto range = intKindRange(k);
    int64_t init = op == Reduce::Prod  ? 1
                   : op == Reduce::Max ? range.first
                   : op == Reduce::Min ? range.second
                                       : 0;
    Tensor acc(k, {nOut});
    for (int64_t o = 0; o < nOut; ++o)
      acc.setInt(o, init);
    bool u64 = k == ElementKind::U64;
    for (int64_t i = 0; i < n; ++i) {
      int64_t o = map[i], v = x->getInt(i), cur = acc.getInt(o);
      switch (op) {
      case Reduce::Sum:
        cur = wrapAdd(cur, v);
        break;
      case Reduce::Prod:
        cur = wrapMul(cur, v);
        break;
      case Reduce::L1:
        cur = wrapAdd(cur, u64 || v >= 0 ? v : wrapNeg(v));
        break;
      case Reduce::SumSquare:
        cur = wrapAdd(cur, wrapMul(v, v));
        break;
      default: {
        int c = compareAt(*x, i, acc, o);
        if (op == Reduce::Max ? c > 0 : c < 0)
          cur = v;
        break;
      }
      }
      acc.setInt(o, cur);
    }
    for (int64_t o = 0; o < nOut; ++o)
      y.setInt(o, acc.getInt(o));
    return Error::success();
  }

  std::vector<double> acc(nOut);
  std::vector<double> maxv; // LogSumExp: per-group maximum
  if (op == Reduce::LogSumExp) {
    maxv.assign(nOut, -kInf);
    for (int64_t i = 0; i < n; ++i) {
      double v = x->getDouble(i);
      double &m = maxv[map[i]];
      if (std::isnan(v) || std::isnan(m))
        m = kNaN;
      else
        m = std::max(m, v);
    }
  }
  double init = op == Reduce::Prod  ? 1.0
                : op == Reduce::Max ? -kInf
                : op == Reduce::Min ? kInf
                                    : 0.0;
  std::fill(acc.begin(), acc.end(), init);
  for (int64_t i = 0; i < n; ++i) {
    double v = x->getDouble(i);
    double &a = acc[map[i]];
    switch (op) {
    case Reduce::Sum:
    case Reduce::Mean:
    case Reduce::LogSum:
      a += v;
      break;
    case Reduce::Prod:
      a *= v;
      break;
    case Reduce::L1:
      a += std::fabs(v);
      break;
    case Reduce::L2:
    case Reduce::SumSquare:
      a += v * v;
      break;
    case Reduce::Max:
    case Reduce::Min:
      if (std::isnan(v) || std::isnan(a))
        a = kNaN;
      else
        a = op == Reduce::Max ? std::max(a, v) : std::min(a, v);
      break;
    case Reduce::LogSumExp: {
      double m = maxv[map[i]];
      if (std::isfinite(m))
        a += std::exp(v - m);
      break;
    }
    }
  }
  for (int64_t o = 0; o < nOut; ++o) {
    double r = acc[o];
    switch (op) {
    case Reduce::Mean:
      r = r / groupSize;
      break;
    case Reduce::L2:
      r = std::sqrt(r);
      break;
    case Reduce::LogSum:
      r = std::log(r);
      break;
    case Reduce::LogSumExp: {
      double m = maxv[o];
      // Empty group or all -inf: -inf; any +inf: +inf; NaN stays NaN.
      r = std::isfinite(m) ? m + std::log(r) : m;
      break;
    }
    default:
      break;
    }
    y.setDouble(o, r);
  }
  return Error::success();
}

Error reduceSumKernel(KernelContext &ctx) {
  return reduceKernel(ctx, Reduce::Sum);
}
Error reduceMeanKernel(KernelContext &ctx) {
  return reduceKernel(ctx, Reduce::Mean);
}
Error reduceMaxKernel(KernelContext &ctx) {
  return reduceKernel(ctx, Reduce::Max);
}
Error reduceMinKernel(KernelContext &ctx) {
  return reduceKernel(ctx, Reduce::Min);
}
Error reduceProdKernel(KernelContext &ctx) {
  return reduceKernel(ctx, Reduce::Prod);
}
Error reduceL1Kernel(KernelContext &ctx) {
  return reduceKernel(ctx, Reduce::L1);
}
Error reduceL2Kernel(KernelContext &ctx) {
  return reduceKernel(ctx, Reduce::L2);
}
Error reduceSumSquareKernel(KernelContext &ctx) {
  return reduceKernel(ctx, Reduce::SumSquare);
}
Error reduceLogSumKernel(KernelContext &ctx) {
  return reduceKernel(ctx, Reduce::LogSum);
}
Error reduceLogSumExpKernel(KernelContext &ctx) {
  return reduceKernel(ctx, Reduce::LogSumExp);
}

//===----------------------------------------------------------------------===//
// ArgMax / ArgMin
//===----------------------------------------------------------------------===//

/// Index of the max/min along `axis`; NaN counts as the extreme (numpy),
/// ties go to the first index, or the last with select_last_index.
Error argKernel(KernelContext &ctx, bool isMax) {
  const Tensor *x;
  if (Error e = requireInput(ctx, 0, x))
    return e;
  if (Error e = requireKind(ctx, *x, isNumericKind(x->kind()), "a numeric"))
    return e;
  int64_t rank = x->rank();
  if (rank == 0)
    return ctx.error("expects an input of rank >= 1");
  auto axis = normalizeAxis(ctx, ctx.getInt("axis", 0), rank);
  if (!axis)
    return axis.takeError();
  bool keepdims = ctx.getInt("keepdims", 1) != 0;
  bool last = ctx.getInt("select_last_index", 0) != 0;
  Shape outShape;
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis || keepdims)
      outShape.push_back(d == *axis ? 1 : x->dim(d));
  if (Error e = ctx.allocateOutput(0, ElementKind::I64, outShape))
    return e;
  // outer * inner is the output's element count, so nothing overflows.
  int64_t outer = 1, inner = 1, len = x->dim(*axis);
  for (int64_t d = 0; d < rank; ++d) {
    if (d < *axis)
      outer *= x->dim(d);
    if (d > *axis)
      inner *= x->dim(d);
  }
  if (len == 0 && outer * inner != 0)
    return ctx.error("cannot take an arg-extreme over an empty axis");
  int64_t *y = ctx.outputs[0].data<int64_t>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      int64_t base = o * len * inner + in;
      int64_t best = 0;
      bool bestNaN = isNaNAt(*x, base);
      for (int64_t j = 1; j < len; ++j) {
        int64_t idx = base + j * inner;
        bool nan = isNaNAt(*x, idx);
        bool take;
        if (bestNaN)
          take = nan && last;
        else if (nan)
          take = true;
        else {
          int c = compareAt(*x, idx, *x, base + best * inner);
          take = (isMax ? c > 0 : c < 0) || (c == 0 && last);
        }
        if (take) {
          best = j;
          bestNaN = nan;
        }
      }
      y[o * inner + in] = best;
    }
  }
  return Error::success();
}

Error argMaxKernel(KernelContext &ctx) { return argKernel(ctx, true); }
Error argMinKernel(KernelContext &ctx) { return argKernel(ctx, false); }

} // namespace

void rt::registerElementwiseKernels(KernelRegistry &r) {
  // Arithmetic.
  r.add("onnx.Add", addKernel);
  r.add("onnx.Sub", subKernel);
  r.add("onnx.Mul", mulKernel);
  r.add("onnx.Div", divKernel);
  r.add("onnx.Pow", powKernel);
  r.add("onnx.Mod", modKernel);
  r.add("onnx.BitShift", bitShiftKernel);
  r.add("onnx.Neg", negKernel);
  r.add("onnx.Abs", absKernel);
  r.add("onnx.Sign", signKernel);
  r.add("onnx.Reciprocal", reciprocalKernel);
  r.add("onnx.Sqrt", sqrtKernel);
  r.add("onnx.Exp", expKernel);
  r.add("onnx.Log", logKernel);
  r.add("onnx.Floor", floorKernel);
  r.add("onnx.Ceil", ceilKernel);
  r.add("onnx.Round", roundKernel);
  r.add("onnx.Erf", erfKernel);
  r.add("onnx.Sin", sinKernel);
  r.add("onnx.Cos", cosKernel);
  r.add("onnx.Tan", tanKernel);
  r.add("onnx.Asin", asinKernel);
  r.add("onnx.Acos", acosKernel);
  r.add("onnx.Atan", atanKernel);
  r.add("onnx.Sinh", sinhKernel);
  r.add("onnx.Cosh", coshKernel);
  r.add("onnx.Asinh", asinhKernel);
  r.add("onnx.Acosh", acoshKernel);
  r.add("onnx.Atanh", atanhKernel);
  r.add("onnx.Clip", clipKernel);
  // Activations.
  r.add("onnx.Relu", reluKernel);
  r.add("onnx.Sigmoid", sigmoidKernel);
  r.add("onnx.Tanh", tanhKernel);
  r.add("onnx.LeakyRelu", leakyReluKernel);
  r.add("onnx.HardSigmoid", hardSigmoidKernel);
  r.add("onnx.HardSwish", hardSwishKernel);
  r.add("onnx.Softplus", softplusKernel);
  r.add("onnx.Softsign", softsignKernel);
  r.add("onnx.Elu", eluKernel);
  r.add("onnx.Selu", seluKernel);
  r.add("onnx.ThresholdedRelu", thresholdedReluKernel);
  r.add("onnx.Celu", celuKernel);
  r.add("onnx.Shrink", shrinkKernel);
  r.add("onnx.Mish", mishKernel);
  r.add("onnx.Gelu", geluKernel);
  r.add("onnx.PRelu", preluKernel);
  // Comparisons, logic and selection.
  r.add("onnx.Equal", equalKernel);
  r.add("onnx.Greater", greaterKernel);
  r.add("onnx.Less", lessKernel);
  r.add("onnx.GreaterOrEqual", greaterOrEqualKernel);
  r.add("onnx.LessOrEqual", lessOrEqualKernel);
  r.add("onnx.Not", notKernel);
  r.add("onnx.And", andKernel);
  r.add("onnx.Or", orKernel);
  r.add("onnx.Xor", xorKernel);
  r.add("onnx.IsNaN", isNaNKernel);
  r.add("onnx.IsInf", isInfKernel);
  r.add("onnx.Where", whereKernel);
  // Variadic.
  r.add("onnx.Min", minKernel);
  r.add("onnx.Max", maxKernel);
  r.add("onnx.Sum", sumKernel);
  r.add("onnx.Mean", meanKernel);
  // Conversion.
  r.add("onnx.Cast", castKernel);
  r.add("onnx.CastLike", castLikeKernel);
  // Reductions.
  r.add("onnx.ReduceSum", reduceSumKernel);
  r.add("onnx.ReduceMean", reduceMeanKernel);
  r.add("onnx.ReduceMax", reduceMaxKernel);
  r.add("onnx.ReduceMin", reduceMinKernel);
  r.add("onnx.ReduceProd", reduceProdKernel);
  r.add("onnx.ReduceL1", reduceL1Kernel);
  r.add("onnx.ReduceL2", reduceL2Kernel);
  r.add("onnx.ReduceSumSquare", reduceSumSquareKernel);
  r.add("onnx.ReduceLogSum", reduceLogSumKernel);
  r.add("onnx.ReduceLogSumExp", reduceLogSumExpKernel);
  r.add("onnx.ArgMax", argMaxKernel);
  r.add("onnx.ArgMin", argMinKernel);
}
