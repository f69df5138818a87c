//===- OnnxExportParams.cpp - Q/DQ parameters for export ------------------===//

#include "OnnxExportParams.h"
#include "OnnxTypes.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/FloatFormat.h"

#include "llvm/ADT/DenseSet.h"

using namespace qopt;
using namespace qopt::onnxbridge;

/// A scale in ONNX's bytes for `kind` (f32, f16 or bf16).
static void appendScale(std::string &bytes, float f, ElementKind kind) {
  if (kind == ElementKind::F32) {
    bytes.append(reinterpret_cast<const char *>(&f), 4);
    return;
  }
  uint16_t bits =
      kind == ElementKind::F16 ? floatToHalf(f) : floatToBFloat16(f);
  bytes.append(reinterpret_cast<const char *>(&bits), 2);
}

/// A tensor of `kind` shaped for one parameter per channel or block of `q`.
static onnx::TensorProto paramShaped(const QuantType *q, ElementKind kind,
                                     int rank,
                                     llvm::ArrayRef<int64_t> blockedDims) {
  onnx::TensorProto t;
  t.set_data_type(onnxDataTypeOf(kind));
  if (q->isBlocked())
    for (int64_t d : blockedDims)
      t.add_dims(d);
  else if (q->isPerAxis())
    t.add_dims(q->getNumChannels());
  else
    for (int r = 0; r < rank; ++r) // scalar, [1], [1, 1], ...
      t.add_dims(1);
  return t;
}

onnx::TensorProto
onnxbridge::quantParamTensor(const QuantType *q, bool zeroPoint, int rank,
                             llvm::ArrayRef<int64_t> blockedDims) {
  ElementKind kind = zeroPoint ? q->getStorageKind() : q->getExpressedKind();
  onnx::TensorProto t = paramShaped(q, kind, rank, blockedDims);
  std::string bytes;
  unsigned width = getElementByteSize(kind);
  for (size_t i = 0; i < q->getNumChannels(); ++i) {
    if (zeroPoint) {
      int64_t zp = q->getZeroPoints()[i];
      bytes.append(reinterpret_cast<const char *>(&zp), width);
    } else {
      appendScale(bytes, q->getScales()[i], kind);
    }
  }
  if (zeroPoint && isPackedInOnnx(kind))
    bytes = packNibbles(bytes);
  t.set_raw_data(bytes);
  return t;
}

onnx::TensorProto
onnxbridge::scaleCodesTensor(const QuantType *q,
                             llvm::ArrayRef<int64_t> blockedDims) {
  ElementKind kind = q->getScaleStorageKind();
  onnx::TensorProto t =
      paramShaped(q, kind, q->isPerAxis() ? 1 : 0, blockedDims);
  std::string bytes(q->getScaleCodes().begin(), q->getScaleCodes().end());
  if (isPackedInOnnx(kind))
    bytes = packNibbles(bytes);
  t.set_raw_data(bytes);
  return t;
}

onnx::TensorProto onnxbridge::scaleZeroPointTensor(const QuantType *q,
                                                   int rank) {
  onnx::TensorProto t;
  t.set_data_type(onnxDataTypeOf(q->getScaleStorageKind()));
  for (int r = 0; r < rank; ++r)
    t.add_dims(1);
  t.set_raw_data(std::string(1, '\0'));
  return t;
}

onnx::TensorProto onnxbridge::scaleOfScalesTensor(const QuantType *q,
                                                  int rank) {
  onnx::TensorProto t;
  t.set_data_type(onnxDataTypeOf(q->getExpressedKind()));
  for (int r = 0; r < rank; ++r)
    t.add_dims(1);
  std::string bytes;
  appendScale(bytes, q->getScaleOfScales(), q->getExpressedKind());
  t.set_raw_data(bytes);
  return t;
}

llvm::Error onnxbridge::checkQuantParamsRecorded(const Graph &g) {
  llvm::DenseSet<const Value *> recorded;
  auto movesData = [](const Node &n) {
    return hasTrait(n, OpTrait::DataMovement) ||
           hasTrait(n, OpTrait::Monotonic);
  };
  for (const Node &n : g.getNodes()) {
    bool fromQ = n.isa(ops::QQuantize) || n.isa(ops::QRequantize) ||
                 (movesData(n) && n.getNumOperands() && n.getOperand(0) &&
                  recorded.count(n.getOperand(0)));
    if (fromQ)
      for (const Value *r : n.getResults())
        recorded.insert(r);
    if (n.isa(ops::QDequantize) || n.isa(ops::QRequantize))
      recorded.insert(n.getOperand(0));
  }
  std::vector<const Node *> reversed;
  for (const Node &n : g.getNodes())
    reversed.push_back(&n);
  for (auto it = reversed.rbegin(); it != reversed.rend(); ++it) {
    const Node &n = **it;
    if (!movesData(n) || !n.getNumOperands() || !n.getOperand(0))
      continue;
    // Every data operand of a variadic op (Concat) shares the grid.
    const OpDef *def = n.getOpDef();
    bool variadic =
        def && !def->operands.empty() && def->operands.front().variadic;
    for (const Value *r : n.getResults())
      if (recorded.count(r) && r->getType()->isQuantized()) {
        // Also any other operand on the result's grid (a Pad's
        // constant_value): the same Q/DQ records its parameters.
        const QuantType *grid = r->getType()->getQuantType();
        for (unsigned i = 0; i < n.getNumOperands(); ++i) {
          const Value *v = n.getOperand(i);
          if (v &&
              ((variadic || i == 0) || v->getType()->getQuantType() == grid))
            recorded.insert(v);
        }
      }
  }
  auto check = [&](const Value *v, const std::string &where) -> llvm::Error {
    if (!v->getType()->isQuantized() || recorded.count(v))
      return llvm::Error::success();
    // A block-wise type lists thousands of scales: the line names it.
    std::string type = typeToString(v->getType()->getQuantType());
    if (type.size() > 120)
      type = type.substr(0, 100) + "...";
    return makeError(where + ": '" + v->getName() +
                     "' has the quantized type " + type +
                     ", but no QuantizeLinear or DequantizeLinear in the "
                     "exported model records its parameters");
  };
  for (const Value *in : g.getInputs())
    if (auto err = check(in, "graph input"))
      return err;
  for (const Node &n : g.getNodes())
    for (const Value *r : n.getResults())
      if (auto err = check(r, n.describe()))
        return err;
  return llvm::Error::success();
}
