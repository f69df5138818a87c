//===- OpsetSpellings.cpp - Opset-dependent spellings of one op -----------===//

#include "qopt/IR/OpsetSpellings.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpNames.h"
#include "qopt/Support/Error.h"

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

namespace {
/// An attribute or operand an op gained after its first version.
struct FeatureSince {
  llvm::StringRef op;
  llvm::StringRef attr; // empty for an operand
  int operand;          // -1 for an attribute
  int64_t since;
};
const FeatureSince kFeatures[] = {
    {"q.quantize", "saturate", -1, 19},
    {"q.quantize", "output_dtype", -1, 21},
    {"q.quantize", "block_size", -1, 21},
    {"q.dequantize", "block_size", -1, 21},
    {"onnx.Pad", "", 3, 18},
    {"onnx.Split", "num_outputs", -1, 18},
    {"onnx.Resize", "axes", -1, 18},
    {"onnx.Resize", "keep_aspect_ratio_policy", -1, 18},
    {"onnx.Resize", "antialias", -1, 18},
    {"onnx.Resize", "cubic_coeff_a", -1, 11},
    {"onnx.Resize", "exclude_outside", -1, 11},
    {"onnx.Resize", "extrapolation_value", -1, 11},
    {"onnx.Shape", "start", -1, 15},
    {"onnx.Shape", "end", -1, 15},
    {"onnx.Reshape", "allowzero", -1, 14},
    {"onnx.ReduceSum", "noop_with_empty_axes", -1, 13},
    {"onnx.ReduceMean", "noop_with_empty_axes", -1, 18},
    {"onnx.ReduceMax", "noop_with_empty_axes", -1, 18},
    {"onnx.ReduceMin", "noop_with_empty_axes", -1, 18},
    {"onnx.ReduceProd", "noop_with_empty_axes", -1, 18},
    {"onnx.ReduceL1", "noop_with_empty_axes", -1, 18},
    {"onnx.ReduceL2", "noop_with_empty_axes", -1, 18},
    {"onnx.ReduceSumSquare", "noop_with_empty_axes", -1, 18},
    {"onnx.ReduceLogSum", "noop_with_empty_axes", -1, 18},
    {"onnx.ReduceLogSumExp", "noop_with_empty_axes", -1, 18},
    {"onnx.MaxPool", "dilations", -1, 10},
    {"onnx.MaxPool", "ceil_mode", -1, 10},
    {"onnx.AveragePool", "ceil_mode", -1, 10},
    {"onnx.AveragePool", "dilations", -1, 19},
    {"onnx.ScatterElements", "reduction", -1, 16},
    {"onnx.ScatterND", "reduction", -1, 16},
    {"onnx.Cast", "saturate", -1, 19},
    {"onnx.CastLike", "saturate", -1, 19},
};
} // namespace

/// The op's name in ONNX: QuantizeLinear for q.quantize, Conv for onnx.Conv.
static std::string onnxOpName(const Node &n) {
  if (n.isa(ops::QQuantize))
    return "QuantizeLinear";
  if (n.isa(ops::QDequantize))
    return "DequantizeLinear";
  return n.getDialect() == "onnx" ? n.getOpType().str() : n.getOp().str();
}

std::string qopt::whyNotExpressibleAtOpset(const Node &n, int64_t opset,
                                           bool target) {
  // The opset asked for (-target-opset) or the one the model has.
  const std::string has =
      target ? ", the target opset is " : ", the model has opset ";
  auto needs = [&](const std::string &what, int64_t since) {
    return what + " needs opset " + std::to_string(since) + has +
           std::to_string(opset);
  };
  // Tensors of the types newer than the opset (an initializer's too).
  for (const Value *v : n.getResults()) {
    const TensorType *t =
        v ? llvm::dyn_cast<TensorType>(v->getType()) : nullptr;
    ElementKind k = t ? t->getStorageKind() : ElementKind::Unknown;
    if (isFloat8Kind(k) && opset < 19)
      return needs("a float8 tensor (" + getElementKindName(k).str() + ", %" +
                       v->getName().str() + ")",
                   19);
    if (k == ElementKind::F4E2M1 && opset < 23)
      return needs("a float4 tensor (f4E2M1, %" + v->getName().str() + ")", 23);
    if ((k == ElementKind::I4 || k == ElementKind::U4) && opset < 21)
      return needs("a 4-bit tensor (" + getElementKindName(k).str() + ", %" +
                       v->getName().str() + ")",
                   21);
  }
  if (const OpDef *def = n.getOpDef()) {
    // Resize is written back as Upsample from opset 7 to 9 (the exporter
    // says what Upsample cannot express).
    int64_t since = n.isa(ops::Resize) ? 7 : def->sinceVersion;
    if (since > opset)
      return needs(onnxOpName(n), since);
  }
  for (const FeatureSince &f : kFeatures) {
    if (f.op != n.getOp() || f.since <= opset)
      continue;
    if (!f.attr.empty() && n.getAttr(f.attr))
      return needs("attribute '" + f.attr.str() + "' of " + onnxOpName(n),
                   f.since);
    if (f.operand >= 0 &&
        static_cast<unsigned>(f.operand) < n.getNumOperands() &&
        n.getOperand(f.operand)) {
      const OpDef *def = n.getOpDef();
      const SignatureSlot *slot = def ? def->operandSlot(f.operand) : nullptr;
      return needs("operand '" +
                       (slot ? slot->name : std::to_string(f.operand)) +
                       "' of " + onnxOpName(n),
                   f.since);
    }
  }
  if (n.getDialect() != "q")
    return {};
  llvm::SmallVector<const QuantType *, 2> quants;
  collectQuantTypes(n, quants);
  if (opset < 10)
    return "QuantizeLinear/DequantizeLinear need opset 10" + has +
           std::to_string(opset);
  for (const QuantType *q : quants) {
    std::string what = typeToString(q);
    if (q->isPerAxis() && opset < 13)
      return "per-axis quantization (" + what + ") needs opset 13" + has +
             std::to_string(opset);
    if (q->getExpressedKind() != ElementKind::F32 && opset < 19)
      return getElementKindName(q->getExpressedKind()).str() + " scales (" +
             what + ") need opset 19" + has + std::to_string(opset);
    ElementKind s = q->getStorageKind();
    if ((s == ElementKind::I16 || s == ElementKind::U16) && opset < 21)
      return "16-bit quantization (" + what + ") needs opset 21" + has +
             std::to_string(opset);
    if ((s == ElementKind::I4 || s == ElementKind::U4) && opset < 21)
      return "4-bit quantization (" + what + ") needs opset 21" + has +
             std::to_string(opset);
    if (isFloat8Kind(s) && opset < 19)
      return "float8 quantization (" + what + ") needs opset 19" + has +
             std::to_string(opset);
    if (s == ElementKind::F4E2M1 && opset < 23)
      return "float4 quantization (" + what + ") needs opset 23" + has +
             std::to_string(opset);
    if (q->isBlocked() && opset < 21)
      return "block-wise quantization (" + what + ") needs opset 21" + has +
             std::to_string(opset);
  }
  return {};
}

const char *qopt::resize10NearestMode(const Value *scales) {
  const DenseElements *d = getConstantData(scales);
  if (!d)
    return nullptr;
  bool up = false, down = false;
  for (int64_t i = 0; i < d->getNumElements(); ++i) {
    double s = d->getAsDouble(i);
    up |= s > 1;
    down |= s < 1;
  }
  return up && down ? nullptr : down ? "ceil" : "floor";
}

/// Softmax, LogSoftmax and Hardmax before opset 13 work on the input
/// flattened to 2-D at `axis` (default 1); from 13 on one axis (default -1).
/// The two agree only when that axis is the last one.
static std::string retargetSoftmax(Node &n, int64_t from, int64_t to) {
  if (!n.isa("onnx.Softmax") && !n.isa("onnx.LogSoftmax") &&
      !n.isa("onnx.Hardmax"))
    return {};
  if ((from < 13) == (to < 13))
    return {};
  const Value *x = n.getNumOperands() ? n.getOperand(0) : nullptr;
  if (!x || !x->getType()->hasRank())
    return "the meaning of its axis changes at opset 13 and the input rank "
           "is unknown";
  int64_t rank = x->getType()->getRank();
  // The attribute as written: the table's default is the newest one.
  int64_t axis = n.getIntAttr("axis").value_or(from < 13 ? 1 : -1);
  if (axis < 0)
    axis += rank;
  if (axis != rank - 1)
    return "before opset 13 it normalizes over every axis from " +
           std::to_string(axis) +
           " on, from 13 over that one axis only; they agree only on the "
           "last axis";
  n.setAttr("axis", Attribute(static_cast<int64_t>(rank - 1)));
  return {};
}

llvm::Error qopt::retargetOpset(Model &model, int64_t opset) {
  int64_t from = model.getDefaultOpsetVersion();
  for (Node &n : model.getGraph().getNodes()) {
    std::string why = whyNotExpressibleAtOpset(n, opset, /*target=*/true);
    if (why.empty())
      why = retargetSoftmax(n, from, opset);
    if (why.empty() && n.isa("onnx.Resize") && from < 11 && opset >= 11 &&
        getStringAttrOr(n, "mode", "nearest") == "nearest" &&
        !n.getAttr("nearest_mode"))
      why = "Resize-10 rounds nearest neighbours by the direction of its "
            "scales, which are computed or mixed here; no nearest_mode of "
            "opset " +
            std::to_string(opset) + " says the same";
    for (const AttrOperandSpelling &sp : getAttrOperandSpellings(n.getOp()))
      if (why.empty() && opset < sp.operandSince &&
          sp.operandIndex < n.getNumOperands() &&
          n.getOperand(sp.operandIndex) &&
          !getConstantData(n.getOperand(sp.operandIndex)))
        why = "opset " + std::to_string(opset) + " needs '" +
              sp.attrName.str() +
              "' as an attribute, but it is computed, not a constant";
    if (!why.empty())
      return makeError(DiagLocation::node(n.getName()),
                       n.describe() + ": " + why);
  }
  for (OpsetImport &o : model.opsetImports)
    if (o.domain.empty() || o.domain == "ai.onnx") {
      o.version = opset;
      return llvm::Error::success();
    }
  model.opsetImports.insert(model.opsetImports.begin(), {"", opset});
  return llvm::Error::success();
}
