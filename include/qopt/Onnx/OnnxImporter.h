//===- OnnxImporter.h - ONNX ModelProto -> qIR ------------------*- C++ -*-===//
//
// Lowers an ONNX model into qIR:
//  - initializers become `onnx.Constant` nodes without a node name;
//  - QuantizeLinear / DequantizeLinear whose scale and zero point are
//    constants become `q.quantize` / `q.dequantize`, with the parameters in
//    the quantized result/operand type; the scale and zero-point constants
//    stay as optional operands so export restores the original initializers;
//  - an integer initializer (or graph input, or opaque integer result) whose
//    DequantizeLinear consumers agree on parameters gets the quantized type;
//  - every other op is kept as an opaque `onnx.X` / `<domain>.X` node with all
//    attributes, so the model loses nothing.
// Nodes are sorted topologically; cycles and malformed input are errors that
// name the node and the reason.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_ONNX_ONNXIMPORTER_H
#define QOPT_ONNX_ONNXIMPORTER_H

#include "qopt/IR/Attributes.h"

#include "llvm/Support/Error.h"

#include <map>
#include <memory>

namespace qopt {

class Context;
class Model;

/// Newest default-domain opset whose Q/DQ semantics qopt knows.
constexpr int64_t kMaxSupportedOpset = 25;

/// Reads and lowers the model at `path`; external data is resolved relative
/// to the model's directory and may not leave it.
llvm::Expected<std::unique_ptr<Model>> importOnnxFile(llvm::StringRef path,
                                                      Context &ctx);

/// importOnnxFile with the graph inputs named in `bound` turned into
/// initializers holding those values first, as if the model had been
/// exported with them (ONNX's node tests keep quantization parameters in
/// graph inputs; bound, they become the parameters in quantized types). A
/// name that is not a graph input is an error.
llvm::Expected<std::unique_ptr<Model>> importOnnxFileWithInputsBound(
    llvm::StringRef path, Context &ctx,
    const std::map<std::string, DenseElementsRef> &bound);

/// Lowers a serialized model held in memory. `baseDir` resolves external
/// data files; empty (stdin, bytes), external data is refused.
llvm::Expected<std::unique_ptr<Model>>
importOnnxBuffer(llvm::StringRef bytes, llvm::StringRef baseDir, Context &ctx);

} // namespace qopt

#endif // QOPT_ONNX_ONNXIMPORTER_H
