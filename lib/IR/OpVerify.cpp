//===- OpVerify.cpp - Checks of the q dialect beyond the signature --------===//
//
//   q.quantize    float tensor -> quantized; the float type is the quantized
//                 type's expressed type
//   q.dequantize  quantized -> its expressed float type
//   q.requantize  quantized -> quantized with the same expressed type, both
//                 in activation storage (i8, u8, i16, u16)
//   onnx.Split    num_outputs, when given, at least 1 and the result count,
//                 and not with a split operand
//   onnx.Resize   scales or sizes, not both
//
//===----------------------------------------------------------------------===//

#include "OpImpl.h"
#include "qopt/IR/QuantMath.h"

#include "llvm/ADT/StringSwitch.h"

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
  // The recorded ranks of the source's parameter tensors (export writes
  // that many dims of 1): ONNX parameters have a few dims at most.
  for (llvm::StringRef record : {"param_ranks", "scale_param_ranks"})
    for (int64_t r : getIntsAttrOr(n, record))
      if (r < 0 || r > 8)
        return nodeError(n, record.str() + " holds rank " + std::to_string(r) +
                                "; a parameter tensor's rank is 0 to 8");
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

/// Parameters each epilogue activation takes (activation_params).
static std::optional<size_t> activationParamCount(llvm::StringRef act) {
  return llvm::StringSwitch<std::optional<size_t>>(act)
      .Cases("none", "relu", "sigmoid", "tanh", "hard_swish", "silu", 0)
      .Case("leaky_relu", 1)
      .Cases("clip", "hard_sigmoid", 2)
      .Default(std::nullopt);
}

/// The q.* units of fuse<backend> (Ops.def, "Fused units"): quantized data
/// operands, a quantized or float result, a known activation with its
/// parameters, and the i32 bias rule.
llvm::Error opimpl::verifyFusedUnit(const Node &n) {
  const OpDef *def = n.getOpDef();
  bool weighted = n.getNumOperands() >= 2 && def->operands.size() == 4;
  for (unsigned i = 0; i < n.getNumOperands(); ++i) {
    const Value *v = n.getOperand(i);
    if (!v || v->isAbsent())
      continue;
    const SignatureSlot *slot = def->operandSlot(i);
    bool isBias = weighted && i == 2;
    const TensorType *t = v->getType();
    if (!isBias && !t->isQuantized())
      return nodeError(n, "operand " + llvm::Twine(i) + " '" + slot->name +
                              "' must be quantized (an int8 unit reads "
                              "stored values), got " +
                              typeToString(t));
    if (isBias && t->getStorageKind() == ElementKind::I32) {
      const QuantType *b = t->getQuantType();
      if (!b)
        return nodeError(n, "an i32 " + slot->name +
                                " must be quantized (its scale is the "
                                "product grid), got " +
                                typeToString(t));
      const QuantType *x = n.getOperand(0)->getType()->getQuantType();
      const QuantType *w = n.getOperand(1)->getType()->getQuantType();
      if (x && w) {
        std::string why = quant::checkBiasGrid(b, x, w);
        if (!why.empty())
          return nodeError(n, slot->name + ": " + why);
      }
    }
  }
  const TensorType *rt = n.getResult()->getType();
  if (!rt->isQuantized() && rt->getStorageKind() != ElementKind::Unknown &&
      !isFloatKind(rt->getStorageKind()))
    return nodeError(n, "result must be quantized or float, got " +
                            typeToString(rt));
  if (n.isa("q.concat") && !rt->isQuantized())
    return nodeError(n, "result must be quantized, got " + typeToString(rt));
  if (def->lookupAttr("activation")) {
    std::string act = getStringAttrOr(n, "activation", "none");
    std::optional<size_t> count = activationParamCount(act);
    if (!count)
      return nodeError(n, "unknown activation '" + act +
                              "' (expected none, relu, clip, leaky_relu, "
                              "sigmoid, tanh, hard_sigmoid, hard_swish or "
                              "silu)");
    size_t given = 0;
    if (const Attribute *a = n.getAttr("activation_params"))
      if (auto *f = a->getIf<std::vector<float>>())
        given = f->size();
    if (given != *count)
      return nodeError(n, "activation '" + act + "' takes " +
                              llvm::Twine(*count) +
                              " parameter(s) in "
                              "activation_params, got " +
                              llvm::Twine(given));
  }
  return llvm::Error::success();
}

llvm::Error opimpl::verifySplit(const Node &n) {
  std::optional<int64_t> parts = n.getIntAttr("num_outputs");
  if (!parts)
    return llvm::Error::success();
  if (*parts < 1 || *parts != int64_t(n.getNumResults()))
    return nodeError(n, "num_outputs is " + llvm::Twine(*parts) + ", not its " +
                            llvm::Twine(n.getNumResults()) + " results");
  if (n.getNumOperands() > 1 && n.getOperand(1) && !n.getOperand(1)->isAbsent())
    return nodeError(n, "num_outputs and the split operand are both given");
  return llvm::Error::success();
}

llvm::Error opimpl::verifyResize(const Node &n) {
  // An empty tensor stands for an absent input too (exporters write
  // scales=[] beside sizes).
  auto present = [&](unsigned i) {
    if (n.getNumOperands() <= i || !n.getOperand(i) ||
        n.getOperand(i)->isAbsent())
      return false;
    std::optional<int64_t> count = n.getOperand(i)->getType()->getNumElements();
    return !count || *count != 0;
  };
  if (present(2) && present(3))
    return nodeError(n, "scales and sizes are both given (one of them)");
  return llvm::Error::success();
}
