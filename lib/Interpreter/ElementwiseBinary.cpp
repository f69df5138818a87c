//===- ElementwiseBinary.cpp - Reference kernels: broadcast ops -----------===//
//
// The elementwise ops of several inputs, with numpy broadcasting:
// arithmetic (Add, Sub, Mul, Div, Mod, Pow, BitShift), PRelu, comparisons,
// logic (And, Or, Xor), Where, Clip and the variadic folds Min, Max, Sum
// and Mean.
//
//===----------------------------------------------------------------------===//

#include "ElementwiseUtil.h"
#include "qopt/IR/OpNames.h"
#include "qopt/Kernels/ActivationMath.h"

#include <cfloat>
#include <cstring>

using namespace qopt;
using namespace qopt::interp;
using namespace qopt::kernels;
using namespace qopt::interp::elementwise;

using llvm::Error;

namespace {

//===----------------------------------------------------------------------===//
// Integer arithmetic
//===----------------------------------------------------------------------===//

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

} // namespace

void elementwise::registerBinaryKernels(KernelRegistry &r) {
  // Arithmetic.
  r.add(ops::Add, addKernel);
  r.add(ops::Sub, subKernel);
  r.add(ops::Mul, mulKernel);
  r.add(ops::Div, divKernel);
  r.add(ops::Pow, powKernel);
  r.add(ops::Mod, modKernel);
  r.add(ops::BitShift, bitShiftKernel);
  r.add(ops::Clip, clipKernel);
  // Activations.
  r.add(ops::PRelu, preluKernel);
  // Comparisons, logic and selection.
  r.add(ops::Equal, equalKernel);
  r.add(ops::Greater, greaterKernel);
  r.add(ops::Less, lessKernel);
  r.add(ops::GreaterOrEqual, greaterOrEqualKernel);
  r.add(ops::LessOrEqual, lessOrEqualKernel);
  r.add(ops::And, andKernel);
  r.add(ops::Or, orKernel);
  r.add(ops::Xor, xorKernel);
  r.add(ops::Where, whereKernel);
  // Variadic.
  r.add(ops::Min, minKernel);
  r.add(ops::Max, maxKernel);
  r.add(ops::Sum, sumKernel);
  r.add(ops::Mean, meanKernel);
}
