//===- ModelIO.h - Reading and writing models in any format -----*- C++ -*-===//
//
// Tools read .onnx or .qir (or stdin, sniffed) and write either format,
// atomically. Error messages are one line without the tool prefix.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_ONNX_MODELIO_H
#define QOPT_ONNX_MODELIO_H

#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Attributes.h"

#include "llvm/Support/Error.h"

#include <memory>

namespace qopt {

class Context;
class Model;

enum class ModelFormat { Qir, Onnx };

/// Loads `path` ("-" = stdin). The format comes from the extension (.onnx,
/// .qir); otherwise from the content. The result is verified.
llvm::Expected<std::unique_ptr<Model>> loadModelFile(llvm::StringRef path,
                                                     Context &ctx);

/// The same on `bytes`, the whole content of `path` read by the caller (a
/// pipe or a FIFO can be read once: whoever sniffs it reads it whole).
llvm::Expected<std::unique_ptr<Model>>
loadModelBytes(llvm::StringRef bytes, llvm::StringRef path, Context &ctx);

/// Format implied by an output path's extension (qir unless ".onnx").
ModelFormat formatForPath(llvm::StringRef path);

/// How an ONNX model's weights are written.
enum class ExternalData {
  /// Inline, unless they pass protobuf's 2 GiB limit (then as Always).
  Auto,
  /// Initializers of 1 KiB or more go to "<model file name>.data" next to
  /// the model (ONNX external data).
  Always,
};

/// Writes atomically (the model and its external data file); "-" is stdout.
llvm::Error saveModelFile(const Model &model, llvm::StringRef path,
                          ModelFormat format,
                          const PrintOptions &printOptions = {},
                          ExternalData externalData = ExternalData::Auto);

/// Reads a serialized onnx::TensorProto (the ONNX test-data .pb files).
llvm::Expected<DenseElementsRef> readTensorProtoFile(llvm::StringRef path);

} // namespace qopt

#endif // QOPT_ONNX_MODELIO_H
