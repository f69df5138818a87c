//===- OnnxExporter.h - qIR -> ONNX ModelProto (QDQ form) -------*- C++ -*-===//
//
// The reverse of the importer: unnamed `onnx.Constant` nodes become
// initializers, q.quantize / q.dequantize become QuantizeLinear /
// DequantizeLinear (reusing their scale/zero-point initializers when the
// node still carries them, otherwise creating new ones), q.requantize becomes
// a DequantizeLinear -> QuantizeLinear pair, and quantized tensor types are
// written as their storage type.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_ONNX_ONNXEXPORTER_H
#define QOPT_ONNX_ONNXEXPORTER_H

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace qopt {

class Model;

/// Serializes `model` as an ONNX protobuf onto `os`.
llvm::Error exportOnnx(const Model &model, llvm::raw_ostream &os);

} // namespace qopt

#endif // QOPT_ONNX_ONNXEXPORTER_H
