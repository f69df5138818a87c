//===- Error.cpp - Plain-text errors --------------------------------------===//

#include "qopt/Support/Error.h"

llvm::Error qopt::makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}
