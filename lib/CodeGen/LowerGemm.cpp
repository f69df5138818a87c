//===- LowerGemm.cpp - q.gemm and q.matmul to an int8 gemm step -----------===//
//
//   %y = q.gemm(%x, %w, %c) {alpha = 0.5, transB = 1, activation = "relu"}
//        : tensor<8x1000x!q.i8<0.1:4>>          x: 8x512, w: 1000x512
//     =>
//   int8 gemm step  x: 8 rows of 512 in ONNX layout (s8 flipped to u8
//                   around the kernel), w packed for the ISA as 1000
//                   channels of a 1x1 conv,
//                   epilogue: scale[n] = alpha * s_x * s_w[n],
//                   bias[n] = beta * DQ(c)[n], relu, output grid 0.1 : 4
//
//   %y = q.matmul(%x, %w, %b) : tensor<1x77x768x!q.u8<...>>
//        x: 1x77x512, w: 512x768
//     =>
//   int8 gemm step over 77 rows (x's leading dims flattened)
//
// The step runs the unit when the weights are a constant 2-D s8 or u8
// tensor (per tensor, or per output column), x is not transposed, the bias
// (Gemm's C times beta, or MatMul's addend) is constant with one value or
// one per output column, and the result has x's rows and N columns.
//
//   %s = q.matmul(%q, %k) : tensor<1x4x65x65xf32>   q: 1x4x65x32, k: 1x4x32x65
//     =>
//   int8 matmul step  4 products of 65x32 by 32x65, both operands
//                     activations on per-tensor grids, read in the layout
//                     they live in; the result f32 or on its grid
//
// A q.matmul of two int8 activations (attention's Q K^T and softmax V)
// without bias, residual or activation, of operands of the result's rank,
// takes the int8 matmul step. Any other form runs as a float step.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderImpl.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"

using namespace qopt;
using namespace qopt::codegen;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

llvm::Expected<bool> PlanBuilder::lowerGemm(const Node &n) {
  constexpr bool none = false;
  bool gemm = n.isa(ops::QGemm);
  bool transB = gemm && n.getIntAttr("transB").value_or(0) != 0;
  if (gemm && n.getIntAttr("transA").value_or(0) != 0)
    return none;
  // Weights K x N (Gemm's transB: N x K), per output column.
  std::optional<WeightedUnit> u = getWeightedUnit(n, 2, transB ? 0 : 1);
  if (!u && !gemm)
    return lowerActivationMatMul(n);
  if (!u || !u->x->getType()->hasRank() || u->x->getType()->getRank() < 2 ||
      (gemm && u->x->getType()->getRank() != 2))
    return none;
  auto shapes = staticShapes({u->x, u->y});
  if (!shapes)
    return shapes.takeError();
  const Shape &xShape = (*shapes)[0], &yShape = (*shapes)[1];
  int64_t k = xShape.back();
  int64_t columns = transB ? u->wDims[0] : u->wDims[1];
  if ((transB ? u->wDims[1] : u->wDims[0]) != k || k < 1 || columns < 1)
    return none;
  Shape wanted(xShape.begin(), xShape.end() - 1);
  wanted.push_back(columns);
  if (yShape != wanted)
    return none;
  int64_t rows = shapeNumElements(xShape).value_or(0) / k;
  if (rows < 1)
    return none;

  double alpha = gemm ? getFloatAttrOr(n, "alpha", 1.0f) : 1.0;
  double beta = gemm ? getFloatAttrOr(n, "beta", 1.0f) : 1.0;
  Int8Epilogue e = u->epilogue;
  for (int64_t c = 0, count = u->wq->isPerAxis() ? columns : 1; c < count;
       ++c) {
    e.scale.push_back(
        float(alpha * u->xq->getScale() * quant::getChannelScale(u->wq, c)));
    if (!u->weightZeros.empty())
      e.weightZero.push_back(u->weightZeros[c]);
  }
  if (u->bias) {
    auto bias = getColumnBias(u->bias, columns, beta);
    if (!bias)
      return none;
    e.bias = std::move(*bias);
  }
  Int8ConvShape s = GemmStep::makeShape(rows, k, columns);
  if (auto err = Int8Conv::checkParams(s, e)) {
    llvm::consumeError(std::move(err)); // the float step runs it
    return none;
  }
  // The kernel's weights: N channels of K.
  std::vector<int8_t> weights(columns * k);
  for (int64_t c = 0; c < columns; ++c)
    for (int64_t i = 0; i < k; ++i)
      weights[c * k + i] = u->weights[transB ? c * k + i : i * columns + c];
  return addWeightedStep(
      n, *u, PlanLayout::Onnx,
      std::make_unique<GemmStep>(
          n.getName().str(),
          Int8Conv(options.isa, s, weights.data(), std::move(e))));
}

llvm::Expected<bool> PlanBuilder::lowerActivationMatMul(const Node &n) {
  constexpr bool none = false;
  auto present = [&](unsigned i) {
    return n.getNumOperands() > i && n.getOperand(i) &&
           !n.getOperand(i)->isAbsent();
  };
  if (present(2) || present(3) || n.getNumOperands() > 4 ||
      n.getNumResults() != 1)
    return none;
  if (const Attribute *a = n.getAttr("activation"))
    if (!a->isString() || *a->getIf<std::string>() != "none")
      return none;
  const Value *x = n.getOperand(0), *w = n.getOperand(1), *y = n.getResult();
  const QuantType *xq = getActivationGrid(x), *wq = getActivationGrid(w);
  const QuantType *yq = getActivationGrid(y);
  if (!xq || !wq ||
      (!yq && (y->getType()->isQuantized() ||
               y->getType()->getStorageKind() != ElementKind::F32)) ||
      !isDequantizedFinite(*xq, 255) || !isDequantizedFinite(*wq, 255))
    return none;
  auto shapes = staticShapes({x, w, y});
  if (!shapes)
    return shapes.takeError();
  const Shape &xShape = (*shapes)[0], &wShape = (*shapes)[1],
              &yShape = (*shapes)[2];
  size_t rank = yShape.size();
  if (rank < 2 || xShape.size() != rank || wShape.size() != rank)
    return none;
  MatMulStep::Params p;
  p.m = xShape[rank - 2];
  p.k = xShape[rank - 1];
  p.n = wShape[rank - 1];
  if (wShape[rank - 2] != p.k || yShape[rank - 2] != p.m ||
      yShape[rank - 1] != p.n)
    return none;
  for (size_t i = 0; i + 2 < rank; ++i) {
    int64_t d = yShape[i];
    if ((xShape[i] != d && xShape[i] != 1) ||
        (wShape[i] != d && wShape[i] != 1))
      return none;
    p.batches *= d;
  }
  if (!MatMulStep::isGeometryInRange(p))
    return none;
  p.lhsScale = xq->getScale();
  p.lhsZero = int32_t(xq->getZeroPoint());
  p.rhsScale = wq->getScale();
  p.rhsZero = int32_t(wq->getZeroPoint());
  return addStepFor(
      n, {{x, homeLayout(x)}, {w, homeLayout(w)}}, y, PlanLayout::Onnx,
      yq ? yq->getStorageKind() : ElementKind::F32,
      [&](const PlanTensor &result) {
        if (yq)
          p.output = getQuantizeGrid(*yq, result.getStoredFlip());
        return std::make_unique<MatMulStep>(n.getName().str(), plan.isa, p);
      });
}
