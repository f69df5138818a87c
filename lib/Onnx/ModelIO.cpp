//===- ModelIO.cpp - Reading and writing models in any format -------------===//

#include "qopt/Onnx/ModelIO.h"
#include "OnnxTypes.h"
#include "qopt/IR/AsmParser.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/Verifier.h"
#include "qopt/Onnx/OnnxExporter.h"
#include "qopt/Onnx/OnnxImporter.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/FileOutput.h"
#include "qopt/Support/ResourceLimits.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace qopt;

/// Text models start with a comment, `model`, an alias or `graph`.
static bool looksLikeQir(llvm::StringRef bytes) {
  llvm::StringRef s = bytes.ltrim();
  return s.startswith("//") || s.startswith("model") || s.startswith("!") ||
         s.startswith("graph");
}

llvm::Expected<std::unique_ptr<Model>> qopt::loadModelFile(llvm::StringRef path,
                                                           Context &ctx) {
  llvm::StringRef ext = llvm::sys::path::extension(path);
  if (path != "-" && ext == ".onnx")
    return importOnnxFile(path, ctx);
  auto buffer = readFileWithinLimit(path);
  if (!buffer)
    return buffer.takeError();
  return loadModelBytes((*buffer)->getBuffer(), path, ctx);
}

llvm::Expected<std::unique_ptr<Model>>
qopt::loadModelBytes(llvm::StringRef bytes, llvm::StringRef path,
                     Context &ctx) {
  llvm::StringRef ext = llvm::sys::path::extension(path);
  if (ext == ".qir" || (ext != ".onnx" && looksLikeQir(bytes))) {
    auto model = parseModel(bytes, path == "-" ? "<stdin>" : path, ctx);
    if (!model)
      return model.takeError();
    // Result types written as tensor<*x?> (or less precise than the
    // operands allow) are inferred, as at ONNX import.
    if (auto err = inferShapes(**model, /*declaredElementsWin=*/true))
      return std::move(err);
    if (auto err = verifyModel(**model))
      return std::move(err);
    return model;
  }
  // The model's folder ("." for a bare file name); none for stdin.
  llvm::SmallString<256> dir;
  if (path != "-") {
    dir = path;
    llvm::sys::path::remove_filename(dir);
    if (dir.empty())
      dir = ".";
  }
  return importOnnxBuffer(bytes, dir, ctx);
}

ModelFormat qopt::formatForPath(llvm::StringRef path) {
  return llvm::sys::path::extension(path) == ".onnx" ? ModelFormat::Onnx
                                                     : ModelFormat::Qir;
}

llvm::Error qopt::saveModelFile(const Model &model, llvm::StringRef path,
                                ModelFormat format,
                                const PrintOptions &printOptions,
                                ExternalData externalData) {
  bool external = format == ModelFormat::Onnx &&
                  (externalData == ExternalData::Always ||
                   getInitializerBytes(model) > kExternalDataAutoThreshold);
  if (external) {
    if (path == "-")
      return makeError("external data needs an output file, not stdout");
    // The model and its data commit together: both are written and
    // flushed before either replaces a file, the data renamed first; if
    // anything fails, neither is replaced (the user's old pair stays).
    OnnxExportOptions options;
    options.externalDataLocation =
        (llvm::sys::path::filename(path) + ".data").str();
    std::string dataPath = (path + ".data").str();
    return writeFilesAtomically(
        {dataPath, path.str()}, [&](llvm::ArrayRef<llvm::raw_ostream *> files) {
          return exportOnnx(model, *files[1], options, files[0]);
        });
  }
  return writeFileAtomically(path, [&](llvm::raw_ostream &os) -> llvm::Error {
    if (format == ModelFormat::Onnx)
      return exportOnnx(model, os);
    printModel(model, os, printOptions);
    return llvm::Error::success();
  });
}

llvm::Expected<DenseElementsRef>
qopt::readTensorProtoFile(llvm::StringRef path) {
  auto buffer = readFileWithinLimit(path);
  if (!buffer)
    return makeError(path + ": " + llvm::toString(buffer.takeError()));
  onnx::TensorProto t;
  if (!t.ParseFromArray((*buffer)->getBufferStart(),
                        static_cast<int>((*buffer)->getBufferSize())))
    return makeError(DiagLocation::file(path), path + ": not a TensorProto");
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  return onnxbridge::tensorFromProto(t, dir, "tensor '" + t.name() + "'");
}
