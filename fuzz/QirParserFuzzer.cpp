//===- QirParserFuzzer.cpp - libFuzzer target: the .qir parser ------------===//
//
// Any text: parsing fails with a located error or yields a model; a model
// that verifies must print to text that parses back to the same printing.
//
//===----------------------------------------------------------------------===//

#include "CheckPrintFixpoint.h"
#include "qopt/IR/AsmParser.h"
#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/Verifier.h"

#include <cstdlib>

using namespace qopt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Context ctx;
  auto model =
      parseModel(llvm::StringRef(reinterpret_cast<const char *>(data), size),
                 "<fuzz>", ctx);
  if (!model) {
    llvm::consumeError(model.takeError());
    return 0;
  }
  if (llvm::Error err = verifyModel(**model)) {
    llvm::consumeError(std::move(err));
    return 0;
  }
  checkPrintFixpoint(**model, ctx);
  return 0;
}
