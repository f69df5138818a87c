//===- FuseDynamicMatMul.cpp - quantize_dynamic's chain as one op ---------===//
//
// Exact. ONNX Runtime's quantize_dynamic writes each MatMul as an integer
// product scaled to float by four nodes; its optimizer runs them as one
// kernel, com.microsoft MatMulIntegerToFloat, and so does qopt's plan (a
// dynamic int8 gemm step):
//
//   %acc = onnx.MatMulInteger(%q, %w, %z, %wz)      %q, %s, %z: a
//   %f = onnx.Cast(%acc) {to = FLOAT}                DynamicQuantizeLinear's
//   %p = onnx.Mul(%s, %ws)                           results (or any u8/i8
//   %y = onnx.Mul(%f, %p)                            tensor and its scale)
//   [%y2 = onnx.Add(%y, %bias)]
//   =>
//   %y2 = com.microsoft.MatMulIntegerToFloat(%q, %w, %s, %ws, %z, %wz, %bias)
//
// MatMulIntegerToFloat computes float(acc) * (s * ws[n]) + bias[n], the
// chain's arithmetic in its order (multiplication and addition commute
// exactly), so outputs are bit-identical. The scale product must be a Mul
// of a one-element float (the input's scale) and a constant of one value or
// one per column (the weight's), read by nothing else; every intermediate
// value must have one user and be no graph output.
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/IR/OpNames.h"
#include "qopt/Passes/QdqUtils.h"

using namespace qopt;

/// Whether `v` is a float tensor of one element (a static shape).
static bool isOneFloat(const Value *v) {
  const TensorType *t = v ? v->getType() : nullptr;
  if (!t || t->isQuantized() || t->getStorageKind() != ElementKind::F32 ||
      !t->hasRank())
    return false;
  for (const Dim &d : t->getShape())
    if (!d.isStatic() || d.size != 1)
      return false;
  return true;
}

/// Whether `v` is a float constant of one value or one per column.
static bool isColumnConstant(const Value *v, int64_t columns) {
  const DenseElements *d = v ? getConstantData(v) : nullptr;
  return d && d->getKind() == ElementKind::F32 &&
         (d->getNumElements() == 1 || d->getNumElements() == columns) &&
         d->getDims().size() <= 1;
}

static bool fuseChain(PatternRewriter &r, Node &mm) {
  if (mm.getNumOperands() < 2 || mm.getNumResults() != 1)
    return false;
  const DenseElements *w = getConstantData(mm.getOperand(1));
  if (!w || w->getDims().size() != 2)
    return false;
  int64_t columns = w->getDims()[1];
  Node *cast = getSoleUserOfKind(mm.getResult(), ops::Cast);
  if (!cast ||
      cast->getResult()->getType()->getStorageKind() != ElementKind::F32)
    return false;
  Node *mul = getSoleUserOfKind(cast->getResult(), ops::Mul);
  Value *product = mul ? getOtherOperand(*mul, cast->getResult()) : nullptr;
  Node *productNode = product ? product->getDefiningNode() : nullptr;
  if (!productNode || !productNode->isa(ops::Mul) || !product->hasOneUse() ||
      product->isGraphOutput() || productNode->getNumOperands() != 2)
    return false;
  Value *inputScale = nullptr, *weightScale = nullptr;
  for (unsigned i = 0; i < 2; ++i)
    if (isOneFloat(productNode->getOperand(i)) &&
        !getConstantData(productNode->getOperand(i)) &&
        isColumnConstant(productNode->getOperand(1 - i), columns)) {
      inputScale = productNode->getOperand(i);
      weightScale = productNode->getOperand(1 - i);
    }
  if (!inputScale)
    return false;
  Value *out = mul->getResult();
  Node *add = getSoleUserOfKind(out, ops::Add);
  Value *bias = add ? getOtherOperand(*add, out) : nullptr;
  const DenseElements *biasData = bias ? getConstantData(bias) : nullptr;
  if (biasData && biasData->getKind() == ElementKind::F32 &&
      biasData->getDims().size() == 1 && biasData->getNumElements() == columns)
    out = add->getResult();
  else
    add = nullptr, bias = nullptr;
  // The fused result keeps the chain's last type: the same shape as the
  // integer product's.
  auto operand = [&](unsigned i) {
    return mm.getNumOperands() > i ? mm.getOperand(i) : nullptr;
  };
  std::vector<Value *> operands{operand(0), operand(1), inputScale, weightScale,
                                operand(2), operand(3), bias};
  while (!operands.back())
    operands.pop_back();
  Node *last = add ? add : mul;
  r.setInsertionPoint(last);
  r.setRoot(last);
  Node *fused = r.create(ops::MsMatMulIntegerToFloat, operands,
                         {{out->getType(), ""}}, {}, mm.getName().str());
  std::string name = out->getName().str();
  r.replaceNode(*last, {fused->getResult()});
  // The fused result takes the chain's name (a graph output's is kept by
  // replaceNode already).
  Value *result = fused->getResult();
  if (result->getName() != name && !r.getGraph().lookupValue(name))
    result->setName(name);
  if (add)
    r.eraseNode(*mul);
  r.eraseNode(*cast);
  r.eraseNode(mm);
  r.eraseNode(*productNode);
  return true;
}

PreservedAnalyses FuseDynamicMatMulPass::run(Graph &g, AnalysisManager &) {
  PatternRewriter r(g);
  std::vector<Node *> products;
  for (Node &n : g.getNodes())
    if (n.isa(ops::MatMulInteger))
      products.push_back(&n);
  bool changed = false;
  for (Node *mm : products)
    changed |= fuseChain(r, *mm);
  return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
