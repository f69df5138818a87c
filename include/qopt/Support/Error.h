//===- Error.h - Plain-text errors ------------------------------*- C++ -*-===//
//
// qopt reports failures as llvm::Error values holding one message and no
// error code (inconvertibleErrorCode): the text is all a caller shows.
// makeError is the one way to make such an error from a message.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_SUPPORT_ERROR_H
#define QOPT_SUPPORT_ERROR_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

namespace qopt {

/// An error carrying `msg` as its text (inconvertibleErrorCode).
llvm::Error makeError(const llvm::Twine &msg);

/// makeError with each line break of `msg` made a space: for messages that
/// quote names from a file (which may hold line breaks) and must stay one
/// line.
llvm::Error makeOneLineError(const llvm::Twine &msg);

/// `text` as one printable line for a terminal or a log: a line break, tab
/// or other control byte (a NUL, an escape sequence's ESC) written as \n,
/// \t or \xNN, and a text over `limit` bytes cut in its middle with the
/// count of bytes left out, so a name quoted from a file can neither forge
/// a second "error:" line nor flood the output.
std::string toPrintableLine(llvm::StringRef text, size_t limit = 2048);

} // namespace qopt

#endif // QOPT_SUPPORT_ERROR_H
