//===- AsmLexer.cpp - The .qir text form: tokens and diagnostics ----------===//
//
// The parser's character-level pieces: located diagnostics (ParseError with
// the source line and a caret), double-quoted strings with the printer's
// escapes, value and graph names, number tokens and 0x-prefixed hex data.
// The per-character helpers (skipSpace, consumeIf, ...) are inline in
// AsmParserImpl.h.
//
//===----------------------------------------------------------------------===//

#include "AsmParserImpl.h"

#include "llvm/Support/raw_ostream.h"

using namespace qopt;
using namespace qopt::asmparser;

llvm::Error Parser::error(const char *loc, const llvm::Twine &msg) {
  if (loc < text.begin() || loc > text.end())
    loc = text.end();
  unsigned line = 1;
  const char *lineStart = text.begin();
  for (const char *p = text.begin(); p < loc; ++p)
    if (*p == '\n') {
      ++line;
      lineStart = p + 1;
    }
  const char *lineEnd = lineStart;
  while (lineEnd < text.end() && *lineEnd != '\n')
    ++lineEnd;
  unsigned col = static_cast<unsigned>(loc - lineStart) + 1;
  std::string diag;
  llvm::raw_string_ostream os(diag);
  os << bufferName << ":" << line << ":" << col << ": error: " << msg << "\n"
     << llvm::StringRef(lineStart, lineEnd - lineStart) << "\n"
     << std::string(col - 1, ' ') << "^";
  return llvm::make_error<ParseError>(os.str());
}

llvm::Expected<std::string> Parser::parseString() {
  skipSpace();
  if (cur >= end() || *cur != '"')
    return error("expected string");
  const char *start = cur++;
  std::string out;
  while (true) {
    if (cur >= end() || *cur == '\n')
      return error(start, "unterminated string");
    char c = *cur++;
    if (c == '"')
      break;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (cur >= end())
      return error(start, "unterminated string");
    char e = *cur++;
    switch (e) {
    case 'n':
      out += '\n';
      break;
    case 't':
      out += '\t';
      break;
    case '"':
    case '\\':
      out += e;
      break;
    default: {
      if (cur >= end() || !isxdigit(static_cast<unsigned char>(e)) ||
          !isxdigit(static_cast<unsigned char>(*cur)))
        return error(cur - 2, "invalid escape in string");
      unsigned v = 0;
      llvm::StringRef(cur - 1, 2).getAsInteger(16, v);
      out += static_cast<char>(v);
      ++cur;
    }
    }
  }
  return out;
}

llvm::Expected<std::string> Parser::parseSymbolName(bool allowEmpty) {
  if (cur < end() && *cur == '"') {
    const char *loc = cur;
    auto s = parseString();
    if (s && s->empty() && !allowEmpty)
      return error(loc, "empty name");
    return s;
  }
  llvm::StringRef id = lexBareIdent();
  if (id.empty())
    return error("expected a name");
  return id.str();
}

llvm::StringRef Parser::lexNumberToken() {
  skipSpace();
  const char *start = cur;
  if (cur < end() && (*cur == '-' || *cur == '+'))
    ++cur;
  while (cur < end() &&
         (isalnum(static_cast<unsigned char>(*cur)) || *cur == '.' ||
          ((*cur == '-' || *cur == '+') && (cur[-1] == 'e' || cur[-1] == 'E') &&
           !(start[0] == '0' && start + 1 < end() &&
             (start[1] == 'x' || start[1] == 'X')))))
    ++cur;
  return llvm::StringRef(start, cur - start);
}

llvm::Expected<int64_t> Parser::parseInteger() {
  skipSpace();
  const char *loc = cur;
  llvm::StringRef tok = lexNumberToken();
  int64_t v;
  if (tok.empty() || tok.getAsInteger(10, v))
    return error(loc, "expected integer");
  return v;
}

bool Parser::isFloatToken(llvm::StringRef tok) {
  if (tok.startswith("0x") || tok.startswith("0X"))
    return false;
  return tok.contains('.') || tok.contains('e') || tok.contains('E') ||
         tok.endswith("inf") || tok == "nan";
}

llvm::Expected<std::string> Parser::decodeHex(llvm::StringRef hex,
                                              const char *loc) {
  if (!hex.startswith("0x"))
    return error(loc, "expected 0x-prefixed hex data");
  if (hex.size() % 2)
    return error(loc, "hex data has an odd number of digits");
  hex = hex.drop_front(2);
  std::string out(hex.size() / 2, '\0');
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return error(loc, "invalid hex digit in data");
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  return out;
}
