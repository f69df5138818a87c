//===- ReduceKernels.cpp - Reference kernels: reductions ------------------===//
//
// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
// ReduceL2, ReduceSumSquare, ReduceLogSum and ReduceLogSumExp over the
// given axes (keepdims, noop_with_empty_axes), and ArgMax / ArgMin.
//
//===----------------------------------------------------------------------===//

#include "ElementwiseUtil.h"
#include "qopt/IR/OpNames.h"

#include <cstdint>

using namespace qopt;
using namespace qopt::interp;
using namespace qopt::interp::elementwise;

using llvm::Error;

namespace {

//===----------------------------------------------------------------------===//
// Element helpers
//===----------------------------------------------------------------------===//

bool isNaNAt(const Tensor &t, int64_t i) {
  return isFloatKind(t.kind()) && std::isnan(t.getDouble(i));
}

/// Smallest and largest value of an integer or bool kind, as stored by
/// setInt (U64's maximum is all ones, i.e. -1 as int64).
std::pair<int64_t, int64_t> intKindRange(ElementKind k) {
  switch (k) {
  case ElementKind::Bool:
    return {0, 1};
  case ElementKind::I4:
  case ElementKind::U4:
    return getIntegerRange(k);
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

void elementwise::registerReduceKernels(KernelRegistry &r) {
  // Reductions.
  r.add(ops::ReduceSum, reduceSumKernel);
  r.add(ops::ReduceMean, reduceMeanKernel);
  r.add(ops::ReduceMax, reduceMaxKernel);
  r.add(ops::ReduceMin, reduceMinKernel);
  r.add(ops::ReduceProd, reduceProdKernel);
  r.add(ops::ReduceL1, reduceL1Kernel);
  r.add(ops::ReduceL2, reduceL2Kernel);
  r.add(ops::ReduceSumSquare, reduceSumSquareKernel);
  r.add(ops::ReduceLogSum, reduceLogSumKernel);
  r.add(ops::ReduceLogSumExp, reduceLogSumExpKernel);
  r.add(ops::ArgMax, argMaxKernel);
  r.add(ops::ArgMin, argMinKernel);
}
