//===- AsmParser.h - The .qir text form: parsing ----------------*- C++ -*-===//
//
// Reads what AsmPrinter writes. Errors come back as a ParseError whose text
// is "file:line:col: error: message" followed by the source line and a caret.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_IR_ASMPARSER_H
#define QOPT_IR_ASMPARSER_H

#include "llvm/Support/Error.h"

#include <memory>

namespace qopt {

class Context;
class Model;
class Type;

/// A located parse error; message() is the full multi-line diagnostic.
class ParseError : public llvm::ErrorInfo<ParseError> {
public:
  static char ID;
  explicit ParseError(std::string diagnostic)
      : diagnostic(std::move(diagnostic)) {}
  void log(llvm::raw_ostream &os) const override { os << diagnostic; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }

private:
  std::string diagnostic;
};

/// Parses a whole .qir file into a model. The graph is not verified here.
llvm::Expected<std::unique_ptr<Model>>
parseModel(llvm::StringRef text, llvm::StringRef bufferName, Context &ctx);

/// Parses one type ("tensor<1x3x!quant.uniform<i8:f32, 0.5>>", "f32", ...).
llvm::Expected<const Type *> parseType(llvm::StringRef text, Context &ctx);

} // namespace qopt

#endif // QOPT_IR_ASMPARSER_H
