//===- Error.cpp - Plain-text errors --------------------------------------===//

#include "qopt/Support/Error.h"

llvm::Error qopt::makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

llvm::Error qopt::makeOneLineError(const llvm::Twine &msg) {
  std::string text = msg.str();
  for (char &c : text)
    if (c == '\n' || c == '\r')
      c = ' ';
  return makeError(text);
}
