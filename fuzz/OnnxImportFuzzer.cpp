//===- OnnxImportFuzzer.cpp - libFuzzer target: ONNX import ---------------===//
//
// Any bytes: import must either fail with an llvm::Error or produce a model
// that verifies, prints, re-parses to the same text and exports.
//
//===----------------------------------------------------------------------===//

#include "CheckPrintFixpoint.h"
#include "qopt/IR/AsmParser.h"
#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/Verifier.h"
#include "qopt/Onnx/OnnxExporter.h"
#include "qopt/Onnx/OnnxImporter.h"

#include <cstdlib>

using namespace qopt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Context ctx;
  // External data resolves in a directory that does not exist.
  auto model = importOnnxBuffer(
      llvm::StringRef(reinterpret_cast<const char *>(data), size),
      "/nonexistent-qopt-fuzz-dir", ctx);
  if (!model) {
    llvm::consumeError(model.takeError());
    return 0;
  }
  if (llvm::Error err = verifyModel(**model)) {
    llvm::errs() << "import produced unverifiable IR: "
                 << llvm::toString(std::move(err)) << "\n";
    std::abort();
  }
  checkPrintFixpoint(**model, ctx);
  std::string bytes;
  llvm::raw_string_ostream bs(bytes);
  if (llvm::Error err = exportOnnx(**model, bs))
    llvm::consumeError(std::move(err));
  return 0;
}
