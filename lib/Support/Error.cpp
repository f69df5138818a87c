//===- Error.cpp - Plain-text errors --------------------------------------===//

#include "qopt/Support/Error.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

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
