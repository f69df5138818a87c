//===- OpVerify.cpp - Checks of the q dialect beyond the signature --------===//
//
//   q.quantize    float tensor -> quantized; the float type is the quantized
//                 type's expressed type
//   q.dequantize  quantized -> its expressed float type
//   q.requantize  quantized -> quantized with the same expressed type, both
//                 in activation storage (i8, u8, i16, u16)
//
//===----------------------------------------------------------------------===//

#include "OpImpl.h"

using namespace qopt;
using namespace qopt::opimpl;

/// The float side and the quantized side of a Q or DQ.
static llvm::Error checkFloatQuantPair(const Node &n, const TensorType *floatT,
                                       const TensorType *quantT,
                                       llvm::StringRef floatSide,
                                       llvm::StringRef quantSide) {
  const QuantType *q = quantT->getQuantType();
  if (!q)
    return nodeError(n, quantSide + " must have a quantized type, got " +
                            typeToString(quantT));
  ElementKind fk = floatT->getStorageKind();
  if (floatT->isQuantized() || (fk != ElementKind::Unknown && !isFloatKind(fk)))
    return nodeError(n, floatSide + " must be a float tensor, got " +
                            typeToString(floatT));
  if (fk != ElementKind::Unknown && fk != q->getExpressedKind())
    return nodeError(n, "float type " + typeToString(floatT) +
                            " differs from the expressed type of " +
                            typeToString(q));
  return llvm::Error::success();
}

llvm::Error opimpl::verifyQuantize(const Node &n) {
  return checkFloatQuantPair(n, n.getOperand(0)->getType(),
                             n.getResult()->getType(), "input", "result");
}

llvm::Error opimpl::verifyDequantize(const Node &n) {
  return checkFloatQuantPair(n, n.getResult()->getType(),
                             n.getOperand(0)->getType(), "result", "input");
}

llvm::Error opimpl::verifyRequantize(const Node &n) {
  const TensorType *in = n.getOperand(0)->getType();
  const TensorType *out = n.getResult()->getType();
  const QuantType *qi = in->getQuantType(), *qo = out->getQuantType();
  if (!qi || !qo)
    return nodeError(n, "input and result must be quantized, got " +
                            typeToString(in) + " -> " + typeToString(out));
  if (qi->getExpressedKind() != qo->getExpressedKind())
    return nodeError(n, "expressed type changes from " +
                            getElementKindName(qi->getExpressedKind()) +
                            " to " +
                            getElementKindName(qo->getExpressedKind()) + " (" +
                            typeToString(qi) + " -> " + typeToString(qo) +
                            "); requantize keeps the expressed type");
  return llvm::Error::success();
}
