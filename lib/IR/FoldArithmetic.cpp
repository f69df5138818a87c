//===- FoldArithmetic.cpp - Fold hooks: arithmetic, logic, casts ----------===//
//
// The op table's fold hooks for elementwise arithmetic and logic, integer
// reductions and Cast (FoldHooks.cpp has the rest and the rules all hooks
// follow). Integers fold exactly, declining on overflow; f32/f64 compute
// in double and round once to the result type, which for +, -, *, / of
// float operands is the float operation's result bit for bit.
//
//===----------------------------------------------------------------------===//

#include "FoldSupport.h"
#include "OpImpl.h"
#include "qopt/IR/QuantMath.h"

#include <cmath>
#include <cstring>

using namespace qopt;
using namespace qopt::opimpl;
using namespace qopt::opimpl::fold;

//===----------------------------------------------------------------------===//
// Elementwise arithmetic and logic
//===----------------------------------------------------------------------===//

namespace {

/// The broadcast operands of an elementwise node: flat indices per operand
/// for each result element.
struct Broadcast {
  std::vector<int64_t> dims;
  std::vector<const DenseElements *> operands;
  std::vector<std::vector<int64_t>> indices;
};

std::optional<Broadcast> broadcastOperands(FoldContext &ctx,
                                           unsigned firstOperand = 0) {
  auto dims = ctx.getResultDims();
  if (!dims || !allOperandsPlain(ctx) || ctx.getNumOperands() <= firstOperand ||
      !ctx.fits(numElementsOf(*dims)))
    return std::nullopt;
  Broadcast b;
  b.dims = *dims;
  for (unsigned i = firstOperand; i < ctx.getNumOperands(); ++i) {
    const DenseElements *d = ctx.getOperand(i);
    auto idx = broadcastIndices(d->getDims(), *dims);
    if (!idx)
      return std::nullopt;
    b.operands.push_back(d);
    b.indices.push_back(std::move(*idx));
  }
  return b;
}

std::optional<int64_t> applyInt(llvm::StringRef op, int64_t a, int64_t b) {
  int64_t r;
  if (op == "onnx.Add")
    return __builtin_add_overflow(a, b, &r) ? std::nullopt
                                            : std::optional<int64_t>(r);
  if (op == "onnx.Sub")
    return __builtin_sub_overflow(a, b, &r) ? std::nullopt
                                            : std::optional<int64_t>(r);
  if (op == "onnx.Mul")
    return __builtin_mul_overflow(a, b, &r) ? std::nullopt
                                            : std::optional<int64_t>(r);
  if (op == "onnx.Div") {
    if (b == 0 || (a == INT64_MIN && b == -1))
      return std::nullopt;
    return a / b; // ONNX Runtime's integer Div truncates toward zero
  }
  if (op == "onnx.Min")
    return std::min(a, b);
  if (op == "onnx.Max")
    return std::max(a, b);
  return std::nullopt;
}

std::optional<double> applyFloat(llvm::StringRef op, double a, double b) {
  if (op == "onnx.Add")
    return a + b;
  if (op == "onnx.Sub")
    return a - b;
  if (op == "onnx.Mul")
    return a * b;
  if (op == "onnx.Div")
    return a / b;
  // Min/Max: NaN handling differs between runtimes; only ordered values.
  if (std::isnan(a) || std::isnan(b))
    return std::nullopt;
  if (op == "onnx.Min")
    return std::min(a, b);
  if (op == "onnx.Max")
    return std::max(a, b);
  return std::nullopt;
}

} // namespace

bool opimpl::foldArithmetic(FoldContext &ctx) {
  auto b = broadcastOperands(ctx);
  if (!b)
    return false;
  ElementKind kind = b->operands[0]->getKind();
  for (const DenseElements *d : b->operands)
    if (d->getKind() != kind)
      return false;
  llvm::StringRef op = ctx.node.getOp();
  int64_t count = numElementsOf(b->dims);
  if (isIntegerKind(kind)) {
    std::vector<int64_t> values(count);
    for (int64_t e = 0; e < count; ++e) {
      int64_t acc = b->operands[0]->getAsInt(b->indices[0][e]);
      for (size_t i = 1; i < b->operands.size(); ++i) {
        auto r = applyInt(op, acc, b->operands[i]->getAsInt(b->indices[i][e]));
        if (!r)
          return false;
        acc = *r;
      }
      values[e] = acc;
    }
    return setIntResult(ctx, kind, b->dims, values);
  }
  if (!isFoldableFloat(kind))
    return false;
  std::vector<double> values(count);
  for (int64_t e = 0; e < count; ++e) {
    double acc = b->operands[0]->getAsDouble(b->indices[0][e]);
    for (size_t i = 1; i < b->operands.size(); ++i) {
      auto r =
          applyFloat(op, acc, b->operands[i]->getAsDouble(b->indices[i][e]));
      if (!r)
        return false;
      // Each step rounds to the element type, as the op does.
      acc = kind == ElementKind::F32 ? double(float(*r)) : *r;
    }
    values[e] = acc;
  }
  ctx.results.push_back(quant::makeDense(kind, b->dims, values));
  return true;
}

bool opimpl::foldComparison(FoldContext &ctx) {
  auto b = broadcastOperands(ctx);
  if (!b || b->operands.size() != 2 ||
      b->operands[0]->getKind() != b->operands[1]->getKind())
    return false;
  ElementKind kind = b->operands[0]->getKind();
  if (!isIntegral(kind) && !isFoldableFloat(kind))
    return false;
  llvm::StringRef op = ctx.node.getOp();
  int64_t count = numElementsOf(b->dims);
  std::vector<int64_t> values(count);
  for (int64_t e = 0; e < count; ++e) {
    const DenseElements *x = b->operands[0], *y = b->operands[1];
    int64_t i = b->indices[0][e], j = b->indices[1][e];
    int c;
    if (isIntegral(kind)) {
      int64_t p = x->getAsInt(i), q = y->getAsInt(j);
      c = p < q ? -1 : p > q ? 1 : 0;
      if (op == "onnx.And" || op == "onnx.Or" || op == "onnx.Xor") {
        bool pb = p != 0, qb = q != 0;
        values[e] = op == "onnx.And"  ? (pb && qb)
                    : op == "onnx.Or" ? (pb || qb)
                                      : (pb != qb);
        continue;
      }
    } else {
      double p = x->getAsDouble(i), q = y->getAsDouble(j);
      if (std::isnan(p) || std::isnan(q)) {
        values[e] = 0; // every comparison with NaN is false
        continue;
      }
      c = p < q ? -1 : p > q ? 1 : 0;
    }
    if (op == "onnx.Equal")
      values[e] = c == 0;
    else if (op == "onnx.Less")
      values[e] = c < 0;
    else if (op == "onnx.Greater")
      values[e] = c > 0;
    else if (op == "onnx.LessOrEqual")
      values[e] = c <= 0;
    else if (op == "onnx.GreaterOrEqual")
      values[e] = c >= 0;
    else
      return false;
  }
  return setIntResult(ctx, ElementKind::Bool, b->dims, values);
}

bool opimpl::foldWhere(FoldContext &ctx) {
  auto b = broadcastOperands(ctx);
  if (!b || b->operands.size() != 3 ||
      b->operands[0]->getKind() != ElementKind::Bool ||
      b->operands[1]->getKind() != b->operands[2]->getKind())
    return false;
  int64_t count = numElementsOf(b->dims);
  // Two sources: pick per element from x's bytes or y's.
  const DenseElements *x = b->operands[1], *y = b->operands[2];
  size_t size = *DenseElements::byteSizeFor(x->getKind(), 1);
  std::string bytes(count * size, '\0');
  for (int64_t e = 0; e < count; ++e) {
    bool takeX = b->operands[0]->getAsInt(b->indices[0][e]) != 0;
    const DenseElements *src = takeX ? x : y;
    int64_t i = b->indices[takeX ? 1 : 2][e];
    std::memcpy(&bytes[e * size], src->getRawBytes().data() + i * size, size);
  }
  ctx.results.push_back(
      std::make_shared<DenseElements>(x->getKind(), b->dims, std::move(bytes)));
  return true;
}

bool opimpl::foldUnary(FoldContext &ctx) {
  const DenseElements *x = ctx.getOperand(0);
  if (!isPlainData(x) || !ctx.fits(x->getNumElements()))
    return false;
  std::vector<int64_t> dims(x->getDims().begin(), x->getDims().end());
  llvm::StringRef op = ctx.node.getOp();
  ElementKind kind = x->getKind();
  int64_t count = x->getNumElements();
  if (isIntegral(kind)) {
    std::vector<int64_t> values(count);
    for (int64_t e = 0; e < count; ++e) {
      int64_t v = x->getAsInt(e);
      if (op == "onnx.Not")
        v = v == 0;
      else if ((op == "onnx.Neg" || op == "onnx.Abs") && v == INT64_MIN)
        return false;
      else if (op == "onnx.Neg")
        v = -v;
      else if (op == "onnx.Abs")
        v = v < 0 ? -v : v;
      values[e] = v; // Floor, Ceil: integers are their own
    }
    return setIntResult(ctx, kind, dims, values);
  }
  if (!isFoldableFloat(kind) || op == "onnx.Not")
    return false;
  std::vector<double> values(count);
  for (int64_t e = 0; e < count; ++e) {
    double v = x->getAsDouble(e);
    values[e] = op == "onnx.Neg"     ? -v
                : op == "onnx.Abs"   ? std::fabs(v)
                : op == "onnx.Floor" ? std::floor(v)
                                     : std::ceil(v);
  }
  ctx.results.push_back(quant::makeDense(kind, dims, values));
  return true;
}

bool opimpl::foldIntegerReduce(FoldContext &ctx) {
  const DenseElements *x = ctx.getOperand(0);
  auto dims = ctx.getResultDims();
  if (!x || !isIntegerKind(x->getKind()) || !dims ||
      !ctx.fits(x->getNumElements()))
    return false;
  llvm::ArrayRef<int64_t> xd = x->getDims();
  int64_t rank = xd.size();
  std::vector<bool> reduced(rank, false);
  std::optional<std::vector<int64_t>> axes;
  if (ctx.getNumOperands() > 1 && ctx.getOperandType(1)) {
    axes = getConstantInts(ctx.node.getOperand(1));
    if (!axes)
      return false;
  }
  if (!axes || axes->empty()) {
    if (getIntAttrOr(ctx.node, "noop_with_empty_axes", 0)) {
      ctx.results.push_back(ctx.getOperandRef(0));
      return true;
    }
    reduced.assign(rank, true);
  } else {
    for (int64_t a : *axes) {
      a = wrapAxis(a, rank);
      if (a < 0 || a >= rank)
        return false;
      reduced[a] = true;
    }
  }
  // Results indexed over the kept axes, in order.
  std::vector<int64_t> keptDims;
  for (int64_t a = 0; a < rank; ++a)
    if (!reduced[a])
      keptDims.push_back(xd[a]);
  int64_t outCount = numElementsOf(keptDims);
  if (outCount != numElementsOf(*dims))
    return false;
  llvm::StringRef op = ctx.node.getOp();
  std::vector<std::optional<int64_t>> acc(outCount);
  std::vector<int64_t> coord(rank, 0);
  for (int64_t e = 0; e < x->getNumElements(); ++e) {
    int64_t out = 0;
    for (int64_t a = 0; a < rank; ++a)
      if (!reduced[a])
        out = out * xd[a] + coord[a];
    int64_t v = x->getAsInt(e);
    std::optional<int64_t> &slot = acc[out];
    if (!slot) {
      slot = v;
    } else if (op == "onnx.ReduceProd") {
      if (__builtin_mul_overflow(*slot, v, &*slot))
        return false;
    } else if (op == "onnx.ReduceSum") {
      if (__builtin_add_overflow(*slot, v, &*slot))
        return false;
    } else {
      slot = op == "onnx.ReduceMin" ? std::min(*slot, v) : std::max(*slot, v);
    }
    for (int64_t a = rank; a-- > 0;) {
      if (++coord[a] < xd[a])
        break;
      coord[a] = 0;
    }
  }
  std::vector<int64_t> values(outCount);
  for (int64_t i = 0; i < outCount; ++i) {
    if (!acc[i]) {
      // An empty reduction: the identity of the op (min/max have none).
      if (op == "onnx.ReduceProd")
        values[i] = 1;
      else if (op == "onnx.ReduceSum")
        values[i] = 0;
      else
        return false;
    } else {
      values[i] = *acc[i];
    }
  }
  return setIntResult(ctx, x->getKind(), *dims, values);
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

bool opimpl::foldCast(FoldContext &ctx) {
  DenseElementsRef in = ctx.getOperandRef(0);
  ElementKind to = ctx.getResultKind();
  if (!in || !isPlainData(in.get()) || to == ElementKind::Unknown ||
      to == ElementKind::String || !ctx.fits(in->getNumElements()))
    return false;
  ElementKind from = in->getKind();
  if (from == to) {
    ctx.results.push_back(std::move(in));
    return true;
  }
  std::vector<int64_t> dims(in->getDims().begin(), in->getDims().end());
  int64_t count = in->getNumElements();
  bool fromFloat = !isIntegral(from);
  if (isIntegral(to)) {
    std::vector<int64_t> values(count);
    for (int64_t e = 0; e < count; ++e) {
      if (!fromFloat) {
        int64_t v = in->getAsInt(e);
        values[e] = to == ElementKind::Bool ? v != 0 : v;
        continue;
      }
      double v = in->getAsDouble(e);
      if (to == ElementKind::Bool) {
        values[e] = v != 0; // NaN is true
        continue;
      }
      // Truncation toward zero; NaN, infinities and values past int64 are
      // undefined in ONNX: not folded.
      if (!std::isfinite(v) || std::fabs(v) >= 9.2e18)
        return false;
      values[e] = static_cast<int64_t>(v);
    }
    return setIntResult(ctx, to, dims, values);
  }
  // f16 and bf16 results only from f32 (one rounding, as the runtimes
  // do); from f64 or integers the runtimes round twice, through f32.
  if (!isFloatKind(to) ||
      ((to == ElementKind::F16 || to == ElementKind::BF16) &&
       from != ElementKind::F32))
    return false;
  std::vector<double> values(count);
  for (int64_t e = 0; e < count; ++e) {
    if (fromFloat) {
      values[e] = in->getAsDouble(e);
      continue;
    }
    int64_t v = in->getAsInt(e);
    // Exact in double, so the one rounding to `to` is the cast's.
    if (v > (int64_t(1) << 53) || v < -(int64_t(1) << 53))
      return false;
    values[e] = static_cast<double>(v);
  }
  ctx.results.push_back(quant::makeDense(to, dims, values));
  return true;
}
