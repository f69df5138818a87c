//===- AsmParserImpl.h - The .qir parser, shared by its files ---*- C++ -*-===//
//
// Private to lib/IR. The parser is one class whose members live in files by
// what they read: AsmLexer.cpp (diagnostics, strings, names, numbers, hex
// data), AsmParserTypes.cpp (element, quantized and tensor types,
// attributes and dense literals) and AsmParser.cpp (the resources section,
// the model header, graphs and nodes, and the entry points). The lexing
// helpers the parser calls at every character stay inline here.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_IR_ASMPARSERIMPL_H
#define QOPT_LIB_IR_ASMPARSERIMPL_H

#include "qopt/IR/AsmParser.h"
#include "qopt/IR/Graph.h"

#include "llvm/ADT/StringMap.h"

#include <cctype>
#include <optional>
#include <string>
#include <vector>

namespace qopt {
namespace asmparser {

/// A dense literal whose type is not known yet (Constant values take the
/// result type, which is written after the attributes).
struct PendingDense {
  bool isResource = false;
  std::string resourceName;
  std::vector<std::string> elements; // literal texts (strings unquoted)
  bool elementsAreStrings = false;
  const char *loc = nullptr;
};

/// An attribute value as parsed: either final or a dense literal waiting
/// for its type.
struct ParsedAttr {
  std::string name;
  std::optional<Attribute> value;
  PendingDense pending;
};

class Parser {
public:
  Parser(llvm::StringRef text, llvm::StringRef bufferName, Context &ctx)
      : text(text), bufferName(bufferName), ctx(ctx), cur(text.begin()) {}

  llvm::Expected<std::unique_ptr<Model>> parseFile();
  llvm::Expected<const Type *> parseStandaloneType();

private:
  // Diagnostics (AsmLexer.cpp).
  /// A ParseError at `loc`: "file:line:col: error: msg", the source line and
  /// a caret under the column.
  llvm::Error error(const char *loc, const llvm::Twine &msg);
  llvm::Error error(const llvm::Twine &msg) { return error(cur, msg); }

  // Lexing helpers.
  void skipSpace() {
    while (cur < end()) {
      if (isspace(static_cast<unsigned char>(*cur))) {
        ++cur;
      } else if (*cur == '/' && cur + 1 < end() && cur[1] == '/') {
        while (cur < end() && *cur != '\n')
          ++cur;
      } else {
        break;
      }
    }
  }
  const char *end() const { return bodyEnd ? bodyEnd : text.end(); }
  bool atEnd() {
    skipSpace();
    return cur >= end();
  }
  /// Consumes `tok` (after whitespace) if it is next.
  bool consumeIf(llvm::StringRef tok) {
    skipSpace();
    if (llvm::StringRef(cur, end() - cur).startswith(tok)) {
      cur += tok.size();
      return true;
    }
    return false;
  }
  /// Consumes a keyword: `tok` not followed by an identifier character.
  bool consumeKeyword(llvm::StringRef tok) {
    skipSpace();
    llvm::StringRef rest(cur, end() - cur);
    if (!rest.startswith(tok))
      return false;
    if (rest.size() > tok.size() && isIdentChar(rest[tok.size()]))
      return false;
    cur += tok.size();
    return true;
  }
  llvm::Error expect(llvm::StringRef tok) {
    if (consumeIf(tok))
      return llvm::Error::success();
    return error("expected '" + tok + "'");
  }
  static bool isIdentChar(char c) {
    return isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
           c == '$' || c == '-';
  }
  llvm::StringRef lexBareIdent() {
    const char *start = cur;
    while (cur < end() && isIdentChar(*cur))
      ++cur;
    return llvm::StringRef(start, cur - start);
  }

  // Tokens (AsmLexer.cpp).
  /// A double-quoted string with the printer's escapes.
  llvm::Expected<std::string> parseString();
  /// A name after % or @: bare identifier or quoted string.
  /// Value names may not be empty (""); graph names may.
  llvm::Expected<std::string> parseSymbolName(bool allowEmpty = false);
  /// A literal token for numbers: sign, digits, '.', exponent, hex, inf/nan.
  llvm::StringRef lexNumberToken();
  llvm::Expected<int64_t> parseInteger();
  static bool isFloatToken(llvm::StringRef tok);
  llvm::Expected<std::string> decodeHex(llvm::StringRef hex, const char *loc);

  // Types (AsmParserTypes.cpp).
  llvm::Expected<ElementKind> parseElementKind();
  llvm::Expected<const Type *> parseElementOrQuantType();
  llvm::Expected<const Type *> parseQuantBody(const char *loc);
  llvm::Expected<const TensorType *> parseTensorType();

  // Attributes (AsmParserTypes.cpp).
  llvm::Error parseAttrDict(std::vector<ParsedAttr> &out);
  llvm::Error parseDenseLiteral(PendingDense &p);
  /// Builds dense data of `type` (storage kind, static shape) from a literal.
  llvm::Expected<DenseElementsRef> materialize(const PendingDense &p,
                                               const TensorType *type,
                                               llvm::StringRef nameHint);
  llvm::Expected<DenseElementsRef> parseTypedDense();
  llvm::Error parseAttrValue(ParsedAttr &attr);

  // Structure (AsmParser.cpp).
  llvm::Error parseResourcesSection();
  llvm::Error parseModelHeader(Model &m);
  llvm::Error parseGraph(Model &m);
  llvm::Error parseNode(Graph &g);
  llvm::Expected<Value *> parseOperand(Graph &g);
  /// A comma list of defined values (not '_'), each with its location.
  llvm::Error
  parseValueList(Graph &g, llvm::StringRef what,
                 std::vector<std::pair<Value *, const char *>> &out);
  llvm::Error defineValue(Value *v, const char *loc);

  llvm::StringRef text;
  llvm::StringRef bufferName;
  Context &ctx;
  const char *cur;
  const char *bodyEnd = nullptr;
  llvm::StringMap<const Type *> aliases;
  llvm::StringMap<std::string> resources;
  /// The tensor made for each resource, for the constants that share it.
  llvm::StringMap<DenseElementsRef> resourceData;
  llvm::StringMap<Value *> values;
};

} // namespace asmparser
} // namespace qopt

#endif // QOPT_LIB_IR_ASMPARSERIMPL_H
