//===- OpsetSpellings.cpp - Opset-dependent spellings of one op -----------===//

#include "qopt/IR/OpsetSpellings.h"
#include "qopt/IR/Graph.h"

using namespace qopt;

static const AttrOperandSpelling kSpellings[] = {
    {"onnx.Reshape", 5, 1, "shape", AttrKind::Ints},
    {"onnx.Pad", 11, 1, "pads", AttrKind::Ints},
    {"onnx.Pad", 11, 2, "value", AttrKind::Float},
    {"onnx.Split", 13, 1, "split", AttrKind::Ints},
    {"onnx.Squeeze", 13, 1, "axes", AttrKind::Ints},
    {"onnx.Unsqueeze", 13, 1, "axes", AttrKind::Ints},
    {"onnx.Slice", 10, 1, "starts", AttrKind::Ints},
    {"onnx.Slice", 10, 2, "ends", AttrKind::Ints},
    {"onnx.Slice", 10, 3, "axes", AttrKind::Ints},
    {"onnx.Clip", 11, 1, "min", AttrKind::Float},
    {"onnx.Clip", 11, 2, "max", AttrKind::Float},
    {"onnx.ReduceSum", 13, 1, "axes", AttrKind::Ints},
    {"onnx.ReduceMean", 18, 1, "axes", AttrKind::Ints},
    {"onnx.ReduceMax", 18, 1, "axes", AttrKind::Ints},
    {"onnx.ReduceMin", 18, 1, "axes", AttrKind::Ints},
    {"onnx.ReduceProd", 18, 1, "axes", AttrKind::Ints},
    {"onnx.ReduceL1", 18, 1, "axes", AttrKind::Ints},
    {"onnx.ReduceL2", 18, 1, "axes", AttrKind::Ints},
    {"onnx.ReduceSumSquare", 18, 1, "axes", AttrKind::Ints},
    {"onnx.ReduceLogSum", 18, 1, "axes", AttrKind::Ints},
    {"onnx.ReduceLogSumExp", 18, 1, "axes", AttrKind::Ints},
};

llvm::ArrayRef<AttrOperandSpelling>
qopt::getAttrOperandSpellings(llvm::StringRef op) {
  llvm::ArrayRef<AttrOperandSpelling> all(kSpellings);
  size_t begin = 0;
  while (begin < all.size() && all[begin].op != op)
    ++begin;
  size_t end = begin;
  while (end < all.size() && all[end].op == op)
    ++end;
  return all.slice(begin, end - begin);
}

/// The quantized types a Q/DQ-like node reads or writes.
static void collectQuantTypes(const Node &n,
                              llvm::SmallVectorImpl<const QuantType *> &out) {
  for (const Value *v : n.getOperands())
    if (v && v->getType()->getQuantType())
      out.push_back(v->getType()->getQuantType());
  for (const Value *v : n.getResults())
    if (v->getType()->getQuantType())
      out.push_back(v->getType()->getQuantType());
}

std::string qopt::whyNotExpressibleAtOpset(const Node &n, int64_t opset) {
  if (const OpDef *def = lookupOpDef(n.getOp()))
    if (def->sinceVersion > opset)
      return n.getOp().str() + " needs opset " +
             std::to_string(def->sinceVersion) + ", the model has opset " +
             std::to_string(opset);
  if (n.getDialect() != "q")
    return {};
  llvm::SmallVector<const QuantType *, 2> quants;
  collectQuantTypes(n, quants);
  if (opset < 10)
    return "QuantizeLinear/DequantizeLinear need opset 10, the model has "
           "opset " +
           std::to_string(opset);
  for (const QuantType *q : quants) {
    std::string what = typeToString(q);
    if (q->isPerAxis() && opset < 13)
      return "per-axis quantization (" + what +
             ") needs opset 13, the model has opset " + std::to_string(opset);
    if (q->getExpressedKind() != ElementKind::F32 && opset < 19)
      return getElementKindName(q->getExpressedKind()).str() +
             " scales (" + what + ") need opset 19, the model has opset " +
             std::to_string(opset);
    ElementKind s = q->getStorageKind();
    if ((s == ElementKind::I16 || s == ElementKind::U16) && opset < 21)
      return "16-bit quantization (" + what +
             ") needs opset 21, the model has opset " + std::to_string(opset);
  }
  return {};
}
