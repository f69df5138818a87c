//===- OnnxExporter.h - qIR -> ONNX ModelProto (QDQ form) -------*- C++ -*-===//
//
// The reverse of the importer: unnamed `onnx.Constant` nodes become
// initializers, q.quantize / q.dequantize become QuantizeLinear /
// DequantizeLinear (their scale/zero-point initializers named as the
// param_names record says, or new ones), q.requantize becomes
// a DequantizeLinear -> QuantizeLinear pair, and quantized tensor types are
// written as their storage type.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_ONNX_ONNXEXPORTER_H
#define QOPT_ONNX_ONNXEXPORTER_H

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

namespace qopt {

class Model;

struct OnnxExportOptions {
  /// Where the external data file is, relative to the model file (the
  /// TensorProto `location`); used when exportOnnx gets an external stream.
  std::string externalDataLocation;
  /// Initializers at least this large go external (ONNX's usual 1 KiB).
  uint64_t externalDataMinBytes = 1024;
};

/// Serializes `model` as an ONNX protobuf onto `os`. With `externalData`,
/// large initializers are written there instead (ONNX external data), which
/// models whose weights pass protobuf's 2 GiB limit need.
llvm::Error exportOnnx(const Model &model, llvm::raw_ostream &os,
                       const OnnxExportOptions &options = {},
                       llvm::raw_ostream *externalData = nullptr);

/// Bytes of all constant payloads, to decide whether a model needs external
/// data.
uint64_t getInitializerBytes(const Model &model);

/// Above this many bytes of weights, saveModelFile writes external data:
/// protobuf cannot hold a message of 2 GiB.
constexpr uint64_t kExternalDataAutoThreshold =
    (uint64_t(1) << 31) - (64 << 20);

} // namespace qopt

#endif // QOPT_ONNX_ONNXEXPORTER_H
