//===- LowerInt4Gemm.cpp - Weight-only 4-bit MatMuls ----------------------===//
//
//   %w = onnx.Constant : tensor<4096x4096x!quant.uniform<i4:f32:{0:128}, ...>>
//   %b = q.dequantize(%w) : tensor<4096x4096xf32>
//   %y = onnx.MatMul(%x, %b) : tensor<1x4096xf32>           x: 1x4096 f32
//     =>
//   int4 weight-only gemm step   1 row of 4096 by the codes, two a byte
//
// The LLM weight-only form (RTN, AWQ, Model Optimizer's INT4): an int4 or
// uint4 weight [K, N] behind a DequantizeLinear with block-wise parameters
// along K (axis 0, an even block size or one block), one scale per column
// (axis 1) or one for all. The plan builder keeps such a weight's
// q.dequantize from folding (keepsInt4Dequantize), so the codes reach the
// step 4-bit, and lowers no step for it. Anything else, or x not f32 rows
// of K (its leading dims flattened), stays a float MatMul on the folded
// weight. With PlanBuildOptions::int8ActivationsForInt4 the step rounds x
// to int8 (where the blocks are whole groups of 4 rows of K).
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderImpl.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"
#include "qopt/Kernels/Int4Gemm.h"
#include "qopt/Plan/Steps/Int4GemmStep.h"

using namespace qopt;
using namespace qopt::codegen;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

namespace {

/// The static dims of `v`, or none.
std::optional<Shape> knownShape(const Value *v) {
  const TensorType *t = v->getType();
  if (!t->hasRank())
    return std::nullopt;
  Shape shape;
  for (const Dim &d : t->getShape()) {
    if (!d.isStatic())
      return std::nullopt;
    shape.push_back(d.size);
  }
  return shape;
}

/// The 4-bit weight a q.dequantize reads, when the step can take it: a
/// constant [K, N] on a grid with one block size along K.
struct FourBitWeight {
  const DenseElements *codes;
  const QuantType *grid;
  int64_t k, n, block;
};

std::optional<FourBitWeight> fourBitWeight(const Node &dq) {
  if (!dq.isa(ops::QDequantize))
    return std::nullopt;
  const Value *stored = dq.getOperand(0);
  const DenseElements *codes = getConstantData(stored);
  const QuantType *q = stored->getType()->getQuantType();
  if (!codes || !q || codes->getDims().size() != 2 ||
      dq.getResult()->getType()->getStorageKind() != ElementKind::F32 ||
      (q->getStorageKind() != ElementKind::I4 &&
       q->getStorageKind() != ElementKind::U4))
    return std::nullopt;
  int64_t k = codes->getDims()[0], n = codes->getDims()[1], block = k;
  if (q->isBlocked()) {
    if (q->getAxis() != 0)
      return std::nullopt;
    block = q->getBlockSize();
  } else if (q->isPerAxis() && q->getAxis() != 1) {
    return std::nullopt;
  }
  if (k < 1 || n < 1 || (block % 2 && block < k))
    return std::nullopt;
  return FourBitWeight{codes, q, k, n, std::min(block, k)};
}

} // namespace

bool codegen::isInt4WeightOnlyMatMul(const Node &n) {
  if (!n.isa(ops::MatMul) || n.getNumOperands() != 2 || n.getNumResults() != 1)
    return false;
  const Value *x = n.getOperand(0), *b = n.getOperand(1), *y = n.getResult();
  const Node *dq = b ? b->getDefiningNode() : nullptr;
  if (!x || !dq || x->getType()->isQuantized() ||
      x->getType()->getStorageKind() != ElementKind::F32 ||
      y->getType()->getStorageKind() != ElementKind::F32)
    return false;
  auto w = fourBitWeight(*dq);
  auto xShape = knownShape(x), yShape = knownShape(y);
  if (!w || !xShape || !yShape || xShape->empty() || xShape->back() != w->k ||
      shapeNumElements(*xShape).value_or(0) < 1)
    return false; // (an empty x: the float step runs it, on the folded DQ)
  // x [..., K] -> y [..., N]; a 1-D x is one row and y is [N].
  Shape wanted(xShape->begin(), xShape->end() - 1);
  wanted.push_back(w->n);
  return *yShape == wanted;
}

bool codegen::keepsInt4Dequantize(const Node &dq) {
  if (!fourBitWeight(dq) || dq.getResult()->isGraphOutput() ||
      !dq.getResult()->hasUses())
    return false;
  for (const Use &u : dq.getResult()->getUses())
    if (!u.user || u.index != 1 || !isInt4WeightOnlyMatMul(*u.user))
      return false;
  return true;
}

llvm::Expected<bool> PlanBuilder::lowerInt4Gemm(const Node &n) {
  if (!isInt4WeightOnlyMatMul(n))
    return false;
  FourBitWeight w = *fourBitWeight(*n.getOperand(1)->getDefiningNode());
  const QuantType *q = w.grid;
  int64_t blocks = (w.k + w.block - 1) / w.block;
  // Scales and zero points [blocks][N]: per-axis and block-wise grids list
  // them so; one for the tensor is the same for every column.
  std::vector<float> scales(size_t(blocks * w.n));
  std::vector<int64_t> zeros(size_t(blocks * w.n));
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t j = 0; j < w.n; ++j) {
      size_t at = q->isPerAxis() ? size_t(b * w.n + j) : 0;
      scales[size_t(b * w.n + j)] = q->getScales()[at];
      zeros[size_t(b * w.n + j)] = q->getZeroPoints()[at];
    }
  llvm::StringRef bytes = w.codes->getRawBytes();
  Int4Weights packed = Int4Weights::pack(
      reinterpret_cast<const int8_t *>(bytes.data()), w.k, w.n, w.block,
      q->getStorageKind() == ElementKind::I4, scales.data(), zeros.data());
  auto xShape = staticShape(n.getOperand(0));
  if (!xShape)
    return xShape.takeError();
  int64_t rows = shapeNumElements(*xShape).value_or(0) / w.k;
  if (rows < 1)
    return false;
  std::string name = n.getName().str();
  Isa isa = options.isa;
  bool int8Activations =
      options.int8ActivationsForInt4 && Int4DotWeights::canPack(packed);
  return addStepFor(n, {{n.getOperand(0), PlanLayout::Onnx}}, n.getResult(),
                    PlanLayout::Onnx, ElementKind::F32,
                    [&](const PlanTensor &) -> std::unique_ptr<PlanStep> {
                      return std::make_unique<Int4GemmStep>(
                          name, isa, rows, std::move(packed), int8Activations);
                    });
}
