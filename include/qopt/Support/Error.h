//===- Error.h - qopt's one diagnostic type ---------------------*- C++ -*-===//
//
// qopt reports every failure as an llvm::Error holding a Diagnostic: one
// message (the text a caller shows, in the one-line format docs/cli.md
// documents), where it points when that is known (a node, a value, a plan
// step, a place in a file), and an error code only for failures of the
// system (errno). makeError and makeSystemError are the ways to make one;
// llvm::createStringError appears nowhere else (test/layout checks it).
//
// The location does not change the message, which names the place itself
// as it always has: it is there for callers that act on it (the Python
// module's exceptions, a report that highlights the node).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_SUPPORT_ERROR_H
#define QOPT_SUPPORT_ERROR_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <system_error>

namespace qopt {

/// Where a diagnostic points.
struct DiagLocation {
  enum class Kind : uint8_t {
    None,
    /// A graph node, by name (or its description when it has none).
    Node,
    /// A value: a tensor of the graph or the plan, by name.
    Value,
    /// A plan step, by index (and name).
    Step,
    /// A file, with a byte offset or a line in `index` (-1: the whole file).
    File,
  };
  Kind kind = Kind::None;
  std::string name;
  int64_t index = -1;

  static DiagLocation node(llvm::StringRef name) {
    return {Kind::Node, name.str(), -1};
  }
  static DiagLocation value(llvm::StringRef name) {
    return {Kind::Value, name.str(), -1};
  }
  static DiagLocation step(int64_t index, llvm::StringRef name) {
    return {Kind::Step, name.str(), index};
  }
  static DiagLocation file(llvm::StringRef path, int64_t at = -1) {
    return {Kind::File, path.str(), at};
  }
  bool isKnown() const { return kind != Kind::None; }
};

/// qopt's error: a message, a location, and for failures of the system
/// their error code (inconvertibleErrorCode otherwise).
class Diagnostic : public llvm::ErrorInfo<Diagnostic> {
public:
  static char ID;

  Diagnostic(std::string message, DiagLocation location = {},
             std::error_code code = llvm::inconvertibleErrorCode())
      : message(std::move(message)), location(std::move(location)), code(code) {
  }

  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override { return code; }

  const std::string &getMessage() const { return message; }
  const DiagLocation &getLocation() const { return location; }

private:
  std::string message;
  DiagLocation location;
  std::error_code code;
};

/// An error carrying `msg` as its text.
llvm::Error makeError(const llvm::Twine &msg);
/// The same, pointing at `where`.
llvm::Error makeError(DiagLocation where, const llvm::Twine &msg);
/// A failure of the system at `where` (a file that cannot be opened,
/// written, ...): `msg` as its text and `code` (an errno's) as its code.
llvm::Error makeSystemError(std::error_code code, DiagLocation where,
                            const llvm::Twine &msg);

/// makeError with each line break of `msg` made a space: for messages that
/// quote names from a file (which may hold line breaks) and must stay one
/// line.
llvm::Error makeOneLineError(const llvm::Twine &msg);

/// `err` (which must be an error) pointing at `where`, when it does not
/// point anywhere yet; its message unchanged. For the caller that knows
/// the place a callee's error is about.
llvm::Error withLocation(llvm::Error err, const DiagLocation &where);

/// Where the first diagnostic of `err` points that points anywhere
/// (Kind::None if none does, or for errors of other types); `err` holds the
/// same errors after.
DiagLocation getLocation(llvm::Error &err);

/// `text` as one printable line for a terminal or a log: a line break, tab
/// or other control byte (a NUL, an escape sequence's ESC) written as \n,
/// \t or \xNN, and a text over `limit` bytes cut in its middle with the
/// count of bytes left out, so a name quoted from a file can neither forge
/// a second "error:" line nor flood the output.
std::string toPrintableLine(llvm::StringRef text, size_t limit = 2048);

} // namespace qopt

#endif // QOPT_SUPPORT_ERROR_H
