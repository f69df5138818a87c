//===- Error.cpp - qopt's one diagnostic type -----------------------------===//

#include "qopt/Support/Error.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace qopt;

char Diagnostic::ID = 0;

void Diagnostic::log(llvm::raw_ostream &os) const { os << message; }

llvm::Error qopt::makeError(const llvm::Twine &msg) {
  return llvm::make_error<Diagnostic>(msg.str());
}

llvm::Error qopt::makeError(DiagLocation where, const llvm::Twine &msg) {
  return llvm::make_error<Diagnostic>(msg.str(), std::move(where));
}

llvm::Error qopt::makeSystemError(std::error_code code, DiagLocation where,
                                  const llvm::Twine &msg) {
  return llvm::make_error<Diagnostic>(msg.str(), std::move(where), code);
}

llvm::Error qopt::withLocation(llvm::Error err, const DiagLocation &where) {
  std::string message;
  std::error_code code = llvm::inconvertibleErrorCode();
  DiagLocation location = where;
  // Every error of `err` joins one message, as llvm::toString does.
  llvm::handleAllErrors(
      std::move(err),
      [&](const Diagnostic &d) {
        if (!message.empty())
          message += "\n";
        message += d.getMessage();
        if (d.getLocation().isKnown())
          location = d.getLocation();
        code = d.convertToErrorCode();
      },
      [&](const llvm::ErrorInfoBase &e) {
        if (!message.empty())
          message += "\n";
        message += e.message();
        code = e.convertToErrorCode();
      });
  return llvm::make_error<Diagnostic>(std::move(message), std::move(location),
                                      code);
}

DiagLocation qopt::getLocation(llvm::Error &err) {
  DiagLocation location;
  err = llvm::handleErrors(std::move(err),
                           [&](std::unique_ptr<Diagnostic> d) -> llvm::Error {
                             if (!location.isKnown())
                               location = d->getLocation();
                             return llvm::Error(std::move(d));
                           });
  return location;
}

llvm::Error qopt::makeOneLineError(const llvm::Twine &msg) {
  std::string text = msg.str();
  for (char &c : text)
    if (c == '\n' || c == '\r')
      c = ' ';
  return makeError(text);
}

std::string qopt::toPrintableLine(llvm::StringRef text, size_t limit) {
  std::string out;
  llvm::raw_string_ostream os(out);
  auto emit = [&](llvm::StringRef part) {
    for (char c : part) {
      unsigned char u = static_cast<unsigned char>(c);
      if (c == '\n')
        os << "\\n";
      else if (c == '\t')
        os << "\\t";
      else if (u < 0x20 || u == 0x7f)
        os << llvm::format("\\x%02x", u);
      else
        os << c;
    }
  };
  if (text.size() <= limit) {
    emit(text);
  } else {
    size_t head = limit / 2, tail = limit - head;
    emit(text.take_front(head));
    os << " ...[" << (text.size() - head - tail) << " bytes]... ";
    emit(text.take_back(tail));
  }
  return os.str();
}
