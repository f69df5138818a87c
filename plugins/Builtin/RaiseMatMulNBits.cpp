//===- RaiseMatMulNBits.cpp - MatMulNBits back to its QDQ form ------------===//
//
// Part of raise-qoperator, the inverse of to-matmul-nbits: ONNX Runtime's
// 4-bit weight-only MatMul becomes the DequantizeLinear of a constant int4
// weight with block-wise scales along K, and a MatMul, the form TensorRT 10
// and qopt's plan take (exact: the node computes that chain):
//
//   %y = com.microsoft.MatMulNBits(%x, %B, %scales[, %zero_points])
//          {K, N, bits = 4, block_size = B}
//     =>
//   %w = onnx.Constant : tensor<KxNx!quant.uniform<i4:f32:{0:B}, ...>>
//   %b = q.dequantize(%w) : tensor<KxNxf32>
//   %y = onnx.MatMul(%x, %b)
//
// Without zero points (each one 8) the codes become int4 q = u - 8 with
// zero point 0; with u8-packed zero points they stay uint4 with theirs.
// Nodes with float zero points, g_idx, a bias, other bit widths or
// parameters that are not constants stay as they are.
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/IR/OpNames.h"
#include "qopt/Passes/QdqUtils.h"

using namespace qopt;

namespace {

bool raise(Node &n, PatternRewriter &rewriter) {
  int64_t k = getIntAttrOr(n, "K", 0), cols = getIntAttrOr(n, "N", 0);
  int64_t block = getIntAttrOr(n, "block_size", 0);
  if (getIntAttrOr(n, "bits", 4) != 4 || k < 1 || cols < 1 || block < 16 ||
      (block & (block - 1)) || n.getNumOperands() < 3 ||
      n.getNumOperands() > 4 || n.getNumResults() != 1)
    return false;
  Value *x = n.getOperand(0);
  const DenseElements *b = getConstantData(n.getOperand(1));
  const DenseElements *s = getConstantData(n.getOperand(2));
  const DenseElements *z = n.getNumOperands() > 3 && n.getOperand(3)
                               ? getConstantData(n.getOperand(3))
                               : nullptr;
  bool zerosGiven = n.getNumOperands() > 3 && n.getOperand(3);
  int64_t blocks = (k + block - 1) / block, blob = block / 2;
  if (!x || x->getType()->getStorageKind() != ElementKind::F32 || !b || !s ||
      b->getKind() != ElementKind::U8 ||
      b->getNumElements() != cols * blocks * blob ||
      s->getKind() != ElementKind::F32 ||
      s->getNumElements() != cols * blocks ||
      (zerosGiven && (!z || z->getKind() != ElementKind::U8 ||
                      z->getNumElements() != cols * ((blocks + 1) / 2))))
    return false;
  // Parameters [blocks][N] (the DequantizeLinear's order), codes [K][N].
  std::vector<float> scales(size_t(blocks * cols));
  std::vector<int64_t> zeros(size_t(blocks * cols), 8);
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      scales[size_t(blk * cols + j)] = float(s->getAsDouble(j * blocks + blk));
      if (z)
        zeros[size_t(blk * cols + j)] =
            (z->getAsInt(j * ((blocks + 1) / 2) + blk / 2) >> (4 * (blk % 2))) &
            0xF;
    }
  bool symmetric = llvm::all_of(zeros, [](int64_t v) { return v == 8; });
  std::string codes(size_t(k * cols), '\0');
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t p = 0; p < k; ++p) {
      int64_t byte =
          b->getAsInt((j * blocks + p / block) * blob + (p % block) / 2);
      int64_t u = (byte >> (4 * (p % 2))) & 0xF;
      codes[size_t(p * cols + j)] = char(symmetric ? u - 8 : u);
    }
  if (symmetric)
    std::fill(zeros.begin(), zeros.end(), 0);
  Context &ctx = rewriter.getGraph().getContext();
  ElementKind storage = symmetric ? ElementKind::I4 : ElementKind::U4;
  const QuantType *grid =
      ctx.getQuantType(storage, ElementKind::F32, 0, scales, zeros, block);
  rewriter.setInsertionPoint(&n);
  rewriter.setRoot(&n);
  std::string base = n.getResult()->getName().str();
  Value *w = createConstant(rewriter,
                            DenseElements(storage, {k, cols}, std::move(codes)),
                            grid, base + "_weight");
  Node *dq =
      rewriter.create(ops::QDequantize, {w},
                      {{ctx.getTensorType(llvm::ArrayRef<int64_t>{k, cols},
                                          ctx.getElementType(ElementKind::F32)),
                        ""}});
  Node *mm =
      rewriter.create(ops::MatMul, {x, dq->getResult()},
                      {{n.getResult()->getType(), ""}}, {}, n.getName().str());
  Value *oldB = n.getOperand(1), *oldS = n.getOperand(2);
  Value *oldZ = zerosGiven ? n.getOperand(3) : nullptr;
  std::string name = n.getResult()->getName().str();
  bool output = n.getResult()->isGraphOutput();
  rewriter.replaceNode(n, {mm->getResult()});
  // The MatMul's result keeps the node's name (other tools' intermediates
  // are matched by name); a graph output kept it already.
  if (!output && !rewriter.getGraph().lookupValue(name))
    mm->getResult()->setName(name);
  for (Value *v : {oldB, oldS, oldZ})
    if (v)
      eraseIfDead(rewriter, v);
  return true;
}

} // namespace

unsigned qopt::raiseMatMulNBits(Graph &g) {
  PatternRewriter rewriter(g);
  std::vector<Node *> nodes;
  for (Node &n : g.getNodes())
    if (n.isa(ops::MsMatMulNBits))
      nodes.push_back(&n);
  unsigned raised = 0;
  for (Node *n : nodes)
    raised += raise(*n, rewriter);
  return raised;
}
