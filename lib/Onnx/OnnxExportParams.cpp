//===- OnnxExportParams.cpp - Q/DQ parameter tensors for export -----------===//

#include "OnnxExportParams.h"
#include "OnnxTypes.h"
#include "qopt/Support/FloatFormat.h"

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
