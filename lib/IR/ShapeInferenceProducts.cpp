//===- ShapeInferenceProducts.cpp - Shapes of matrix products and norms ---===//
//
// The MatMul family (MatMul, QLinearMatMul, MatMulInteger and ONNX
// Runtime's MatMulIntegerToFloat, DynamicQuantizeMatMul and MatMulNBits),
// Gemm, and the normalizations. The rest of the compute ops are in
// ShapeInference.cpp, data movement in ShapeInferenceMovement.cpp.
//
//===----------------------------------------------------------------------===//

#include "OpImpl.h"

using namespace qopt;
using namespace qopt::opimpl;

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

static llvm::Error inferMatMulLike(InferenceContext &ctx, unsigned a,
                                   unsigned b) {
  if (!ctx.hasRank(a) || !ctx.hasRank(b))
    return llvm::Error::success();
  Shape as(ctx.getShape(a).begin(), ctx.getShape(a).end());
  Shape bs(ctx.getShape(b).begin(), ctx.getShape(b).end());
  if (as.empty() || bs.empty())
    return ctx.error("operands must have rank >= 1");
  bool aVector = as.size() == 1, bVector = bs.size() == 1;
  if (aVector)
    as.insert(as.begin(), Dim::fixed(1));
  if (bVector)
    bs.push_back(Dim::fixed(1));
  const Dim &k1 = as.back(), &k2 = bs[bs.size() - 2];
  if (k1.isStatic() && k2.isStatic() && k1.size != k2.size)
    return ctx.error(
        "inner dimensions differ: " + shapeToText(ctx.getShape(a)) + " times " +
        shapeToText(ctx.getShape(b)));
  auto batch = broadcastShapes(ctx, llvm::ArrayRef<Dim>(as).drop_back(2),
                               llvm::ArrayRef<Dim>(bs).drop_back(2));
  if (!batch)
    return batch.takeError();
  Shape out = *batch;
  if (!aVector)
    out.push_back(as[as.size() - 2]);
  if (!bVector)
    out.push_back(bs.back());
  ctx.setResultShape(0, out);
  return llvm::Error::success();
}

llvm::Error opimpl::inferMatMul(InferenceContext &ctx) {
  return inferMatMulLike(ctx, 0, 1);
}
llvm::Error opimpl::inferQLinearMatMul(InferenceContext &ctx) {
  // a's parameters may be per row and b's per column (the kernels say
  // which they support; a 1-D a is one row, a 1-D b one column); the
  // output's are one value each.
  auto dimOr1 = [&](unsigned i, int64_t fromEnd) {
    if (!ctx.hasRank(i))
      return Dim::dynamic();
    llvm::ArrayRef<Dim> shape = ctx.getShape(i);
    return int64_t(shape.size()) >= 2 ? shape[shape.size() - fromEnd]
                                      : Dim::fixed(1);
  };
  Dim rows = dimOr1(0, 2), columns = dimOr1(3, 1);
  const char *names[] = {"",        "a_scale",     "a_zero_point",
                         "",        "b_scale",     "b_zero_point",
                         "y_scale", "y_zero_point"};
  for (unsigned i : {1, 2})
    if (auto err = checkQLinearParam(ctx, i, names[i], rows, "row of a", 2))
      return err;
  for (unsigned i : {4, 5})
    if (auto err =
            checkQLinearParam(ctx, i, names[i], columns, "column of b", 1))
      return err;
  for (unsigned i : {6, 7})
    if (auto err = checkQLinearParam(ctx, i, names[i]))
      return err;
  return inferMatMulLike(ctx, 0, 3);
}
llvm::Error opimpl::inferMatMulInteger(InferenceContext &ctx) {
  return inferMatMulLike(ctx, 0, 1);
}

llvm::Error opimpl::inferMatMulNBits(InferenceContext &ctx) {
  // A [..., K] -> Y [..., N]; B holds the weight packed, K and N say it.
  if (!ctx.hasRank(0))
    return llvm::Error::success();
  Shape out(ctx.getShape(0).begin(), ctx.getShape(0).end());
  int64_t k = ctx.getInt("K"), n = ctx.getInt("N");
  if (out.empty() || k < 1 || n < 1)
    return ctx.error("needs A of rank >= 1 and K, N of at least 1");
  if (out.back().isStatic() && out.back().size != k)
    return ctx.error("A's last dimension " + llvm::Twine(out.back().size) +
                     " is not K = " + llvm::Twine(k));
  out.back() = Dim::fixed(n);
  ctx.setResultShape(0, out);
  return llvm::Error::success();
}

llvm::Error opimpl::inferGemm(InferenceContext &ctx) {
  if (!ctx.hasRank(0) || !ctx.hasRank(1))
    return llvm::Error::success();
  llvm::ArrayRef<Dim> as = ctx.getShape(0), bs = ctx.getShape(1);
  if (as.size() != 2 || bs.size() != 2)
    return ctx.error("operands must be 2-D, got " + shapeToText(as) + " and " +
                     shapeToText(bs));
  bool ta = ctx.getInt("transA") != 0, tb = ctx.getInt("transB") != 0;
  const Dim &m = as[ta ? 1 : 0], &k1 = as[ta ? 0 : 1];
  const Dim &k2 = bs[tb ? 1 : 0], &n = bs[tb ? 0 : 1];
  if (k1.isStatic() && k2.isStatic() && k1.size != k2.size)
    return ctx.error("inner dimensions differ: " + shapeToText(as) +
                     (ta ? " (transposed)" : "") + " times " + shapeToText(bs) +
                     (tb ? " (transposed)" : ""));
  Shape out{m, n};
  if (ctx.getOperand(2) && ctx.hasRank(2)) {
    auto b = broadcastShapes(ctx, out, ctx.getShape(2));
    if (!b)
      return b.takeError();
    if (b->size() != 2 ||
        ((*b)[0].isStatic() && m.isStatic() && (*b)[0].size != m.size) ||
        ((*b)[1].isStatic() && n.isStatic() && (*b)[1].size != n.size))
      return ctx.error("C " + shapeToText(ctx.getShape(2)) +
                       " does not broadcast to the result " + shapeToText(out));
  }
  ctx.setResultShape(0, out);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

llvm::Error opimpl::inferBatchNorm(InferenceContext &ctx) {
  ctx.setResultShapeLike(0, 0);
  if (ctx.hasRank(0) && ctx.getRank(0) >= 2) {
    Dim c = ctx.getShape(0)[1];
    for (unsigned i = 1; i < 5; ++i)
      if (ctx.hasRank(i) && (ctx.getRank(i) != 1 ||
                             (c.isStatic() && ctx.getShape(i)[0].isStatic() &&
                              ctx.getShape(i)[0].size != c.size)))
        return ctx.error("operand " + llvm::Twine(i) + " " +
                         operandShapeText(ctx, i) + " does not match " +
                         llvm::Twine(c.isStatic() ? c.size : -1) + " channels");
    for (unsigned i = 1; i < ctx.getNumResults(); ++i)
      ctx.setResultShape(i, {c});
  }
  return llvm::Error::success();
}

llvm::Error opimpl::inferLayerNorm(InferenceContext &ctx) {
  ctx.setResultShapeLike(0, 0);
  if (!ctx.hasRank(0))
    return llvm::Error::success();
  auto axis = normalizeAxis(ctx, ctx.getInt("axis"), ctx.getRank(0), "axis");
  if (!axis)
    return axis.takeError();
  Shape stats(ctx.getShape(0).begin(), ctx.getShape(0).end());
  for (size_t i = *axis; i < stats.size(); ++i)
    stats[i] = Dim::fixed(1);
  for (unsigned i = 1; i < ctx.getNumResults(); ++i)
    ctx.setResultShape(i, stats);
  return llvm::Error::success();
}
