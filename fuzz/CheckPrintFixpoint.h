//===- CheckPrintFixpoint.h - Shared check of the fuzz targets --*- C++ -*-===//
//
// Aborts (so libFuzzer records the input) unless the model prints to text
// that parses back and prints the same again.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_FUZZ_CHECKPRINTFIXPOINT_H
#define QOPT_FUZZ_CHECKPRINTFIXPOINT_H

#include "qopt/IR/AsmParser.h"
#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Graph.h"

#include <cstdlib>

namespace qopt {

inline void checkPrintFixpoint(const Model &model, Context &ctx) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printModel(model, os);
  os.flush();
  auto again = parseModel(text, "<printed>", ctx);
  if (!again) {
    llvm::errs() << "printed IR does not parse: "
                 << llvm::toString(again.takeError()) << "\n"
                 << text;
    std::abort();
  }
  std::string second;
  llvm::raw_string_ostream os2(second);
  printModel(**again, os2);
  if (os2.str() != text) {
    llvm::errs() << "print-parse-print is not a fixpoint:\n"
                 << text << "\n---\n"
                 << second;
    std::abort();
  }
}

} // namespace qopt

#endif // QOPT_FUZZ_CHECKPRINTFIXPOINT_H
