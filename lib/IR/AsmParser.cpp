//===- AsmParser.cpp - The .qir text form: parsing ------------------------===//
//
// A recursive-descent parser working directly on characters: tensor types
// such as `tensor<1x3x?xf32>` need character-level lexing anyway. Every
// failure becomes a located ParseError; nothing here asserts on input.
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/AsmParser.h"
#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/Support/FloatFormat.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace qopt;

char ParseError::ID = 0;

namespace {

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
  //===--- Diagnostics
  //-----------------------------------------------------===//
  llvm::Error error(const char *loc, const llvm::Twine &msg) {
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
  llvm::Error error(const llvm::Twine &msg) { return error(cur, msg); }

  //===--- Lexing helpers
  //--------------------------------------------------===//
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

  /// A double-quoted string with the printer's escapes.
  llvm::Expected<std::string> parseString() {
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

  /// A name after % or @: bare identifier or quoted string.
  /// Value names may not be empty (""); graph names may.
  llvm::Expected<std::string> parseSymbolName(bool allowEmpty = false) {
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

  /// A literal token for numbers: sign, digits, '.', exponent, hex, inf/nan.
  llvm::StringRef lexNumberToken() {
    skipSpace();
    const char *start = cur;
    if (cur < end() && (*cur == '-' || *cur == '+'))
      ++cur;
    while (
        cur < end() &&
        (isalnum(static_cast<unsigned char>(*cur)) || *cur == '.' ||
         ((*cur == '-' || *cur == '+') && (cur[-1] == 'e' || cur[-1] == 'E') &&
          !(start[0] == '0' && start + 1 < end() &&
            (start[1] == 'x' || start[1] == 'X')))))
      ++cur;
    return llvm::StringRef(start, cur - start);
  }

  llvm::Expected<int64_t> parseInteger() {
    skipSpace();
    const char *loc = cur;
    llvm::StringRef tok = lexNumberToken();
    int64_t v;
    if (tok.empty() || tok.getAsInteger(10, v))
      return error(loc, "expected integer");
    return v;
  }

  //===--- Types
  //-----------------------------------------------------------===//
  llvm::Expected<ElementKind> parseElementKind() {
    skipSpace();
    const char *loc = cur;
    if (consumeIf("?"))
      return ElementKind::Unknown;
    llvm::StringRef id = lexBareIdent();
    if (auto k = parseElementKindName(id))
      return *k;
    if (id == "i4" || id == "u4")
      return error(loc, "4-bit element type '" + id + "' is not supported yet");
    return error(loc, "unknown element type '" + id + "'");
  }

  llvm::Expected<const Type *> parseElementOrQuantType() {
    skipSpace();
    const char *loc = cur;
    if (consumeIf("!quant.uniform<"))
      return parseQuantBody(loc);
    if (consumeIf("!")) {
      llvm::StringRef alias = lexBareIdent();
      auto it = aliases.find(alias);
      if (it == aliases.end())
        return error(loc, "undefined type alias '!" + alias + "'");
      return it->second;
    }
    auto kind = parseElementKind();
    if (!kind)
      return kind.takeError();
    return static_cast<const Type *>(ctx.getElementType(*kind));
  }

  llvm::Expected<const Type *> parseQuantBody(const char *loc) {
    auto storage = parseElementKind();
    if (!storage)
      return storage.takeError();
    if (auto err = expect(":"))
      return std::move(err);
    auto expressed = parseElementKind();
    if (!expressed)
      return expressed.takeError();
    std::optional<int64_t> axis;
    if (consumeIf(":")) {
      auto a = parseInteger();
      if (!a)
        return a.takeError();
      axis = *a;
    }
    if (auto err = expect(","))
      return std::move(err);
    std::vector<float> scales;
    std::vector<int64_t> zps;
    auto parseParam = [&]() -> llvm::Error {
      skipSpace();
      const char *ploc = cur;
      llvm::StringRef tok = lexNumberToken();
      auto s = parseFloat(tok);
      if (!s)
        return error(ploc, "expected scale");
      scales.push_back(*s);
      int64_t zp = 0;
      if (consumeIf(":")) {
        auto z = parseInteger();
        if (!z)
          return z.takeError();
        zp = *z;
      }
      zps.push_back(zp);
      return llvm::Error::success();
    };
    if (axis) {
      if (auto err = expect("{"))
        return std::move(err);
      do {
        if (auto err = parseParam())
          return std::move(err);
      } while (consumeIf(","));
      if (auto err = expect("}"))
        return std::move(err);
    } else if (auto err = parseParam()) {
      return std::move(err);
    }
    if (auto err = expect(">"))
      return std::move(err);
    if (!isQuantStorageKind(*storage))
      return error(loc, "quantized storage type '" +
                            getElementKindName(*storage) +
                            "' is not supported (i8, u8, i16, u16, i32)");
    return static_cast<const Type *>(
        ctx.getQuantType(*storage, *expressed, axis, scales, zps));
  }

  llvm::Expected<const TensorType *> parseTensorType() {
    skipSpace();
    if (!consumeKeyword("tensor"))
      return error("expected tensor type");
    if (auto err = expect("<"))
      return std::move(err);
    std::optional<std::vector<Dim>> shape;
    skipSpace();
    if (consumeIf("*")) {
      if (auto err = expect("x"))
        return std::move(err);
    } else {
      shape.emplace();
      while (true) {
        skipSpace();
        if (cur < end() && isdigit(static_cast<unsigned char>(*cur))) {
          const char *start = cur;
          while (cur < end() && isdigit(static_cast<unsigned char>(*cur)))
            ++cur;
          int64_t n;
          if (llvm::StringRef(start, cur - start).getAsInteger(10, n))
            return error(start, "dimension is too large");
          shape->push_back(Dim::fixed(n));
        } else if (cur + 1 < end() && cur[0] == '?' && cur[1] == 'x') {
          ++cur;
          shape->push_back(Dim::dynamic());
        } else if (cur < end() && *cur == '"') {
          auto s = parseString();
          if (!s)
            return s.takeError();
          shape->push_back(Dim::symbolic(*s));
        } else {
          break;
        }
        if (cur >= end() || *cur != 'x')
          return error("expected 'x' after dimension");
        ++cur;
      }
    }
    auto elem = parseElementOrQuantType();
    if (!elem)
      return elem.takeError();
    if (auto err = expect(">"))
      return std::move(err);
    if (!shape)
      return ctx.getUnrankedTensorType(*elem);
    return ctx.getTensorType(*shape, *elem);
  }

  //===--- Attributes
  //------------------------------------------------------===//
  llvm::Error parseAttrDict(std::vector<ParsedAttr> &out) {
    if (auto err = expect("{"))
      return err;
    if (consumeIf("}"))
      return llvm::Error::success();
    do {
      skipSpace();
      ParsedAttr attr;
      if (cur < end() && *cur == '"') {
        auto s = parseString();
        if (!s)
          return s.takeError();
        attr.name = *s;
      } else {
        attr.name = lexBareIdent().str();
        if (attr.name.empty())
          return error("expected attribute name");
      }
      if (auto err = expect("="))
        return err;
      if (auto err = parseAttrValue(attr))
        return err;
      out.push_back(std::move(attr));
    } while (consumeIf(","));
    return expect("}");
  }

  llvm::Error parseDenseLiteral(PendingDense &p) {
    skipSpace();
    p.loc = cur;
    if (consumeKeyword("dense_resource")) {
      if (auto err = expect("<"))
        return err;
      skipSpace();
      auto n = parseSymbolName();
      if (!n)
        return n.takeError();
      p.isResource = true;
      p.resourceName = *n;
      return expect(">");
    }
    if (!consumeKeyword("dense"))
      return error("expected dense literal");
    if (auto err = expect("<"))
      return err;
    auto parseElem = [&]() -> llvm::Error {
      skipSpace();
      if (cur < end() && *cur == '"') {
        auto s = parseString();
        if (!s)
          return s.takeError();
        p.elements.push_back(*s);
        p.elementsAreStrings = true;
        return llvm::Error::success();
      }
      llvm::StringRef tok = lexNumberToken();
      if (tok.empty())
        return error("expected element literal");
      p.elements.push_back(tok.str());
      return llvm::Error::success();
    };
    if (consumeIf("[")) {
      if (!consumeIf("]")) {
        do {
          if (auto err = parseElem())
            return err;
        } while (consumeIf(","));
        if (auto err = expect("]"))
          return err;
      }
    } else if (auto err = parseElem()) {
      return err;
    }
    return expect(">");
  }

  /// Builds dense data of `type` (storage kind, static shape) from a literal.
  llvm::Expected<DenseElementsRef> materialize(const PendingDense &p,
                                               const TensorType *type,
                                               llvm::StringRef nameHint) {
    if (!type->hasStaticShape())
      return error(p.loc, "dense literal needs a static shape, got " +
                              typeToString(type));
    std::vector<int64_t> dims;
    for (const Dim &d : type->getShape())
      dims.push_back(d.size);
    auto count = type->getNumElements();
    ElementKind kind = type->getStorageKind();
    if (!count)
      return error(p.loc, "tensor element count overflows");
    std::string name = p.isResource ? p.resourceName : std::string();
    (void)nameHint;
    if (p.isResource) {
      auto it = resources.find(p.resourceName);
      if (it == resources.end())
        return error(p.loc, "resource '" + p.resourceName +
                                "' has no data in the resources section");
      auto bytes = DenseElements::byteSizeFor(kind, *count);
      if (kind == ElementKind::String || kind == ElementKind::Unknown ||
          !bytes || *bytes != it->second.size())
        return error(p.loc, "resource '" + p.resourceName + "' has " +
                                llvm::Twine(it->second.size()) +
                                " bytes, which does not match " +
                                typeToString(type));
      // One resource read by several constants is one shared tensor, as
      // the printer wrote it (it names each distinct tensor once).
      DenseElementsRef &shared = resourceData[p.resourceName];
      if (shared && shared->getKind() == kind &&
          shared->getDims() == llvm::ArrayRef<int64_t>(dims))
        return shared;
      auto data =
          std::make_shared<const DenseElements>(kind, dims, it->second, name);
      if (!shared)
        shared = data;
      return data;
    }
    size_t n = p.elements.size();
    if (static_cast<int64_t>(n) != *count && !(n == 1 && *count == 1))
      return error(p.loc, "dense literal has " + llvm::Twine(n) +
                              " elements but " + typeToString(type) +
                              " needs " + llvm::Twine(*count));
    if (kind == ElementKind::String) {
      if (!p.elementsAreStrings && n)
        return error(p.loc, "string tensor needs string literals");
      return std::make_shared<const DenseElements>(dims, p.elements, name);
    }
    if (p.elementsAreStrings)
      return error(p.loc, "string literal in a numeric tensor");
    unsigned width = getElementByteSize(kind);
    if (width == 0)
      return error(p.loc, "dense literal of unknown element type");
    std::string bytes(n * width, '\0');
    for (size_t i = 0; i < n; ++i) {
      llvm::StringRef tok = p.elements[i];
      char *dst = &bytes[i * width];
      bool ok = true;
      switch (kind) {
      case ElementKind::F32: {
        auto f = parseFloat(tok);
        ok = f.has_value();
        if (ok)
          std::memcpy(dst, &*f, 4);
        break;
      }
      case ElementKind::F64: {
        auto f = parseDouble(tok);
        ok = f.has_value();
        if (ok)
          std::memcpy(dst, &*f, 8);
        break;
      }
      case ElementKind::F16:
      case ElementKind::BF16: {
        uint16_t bits;
        if (tok.startswith("0x") || tok.startswith("0X")) {
          ok = !tok.drop_front(2).getAsInteger(16, bits);
        } else {
          auto f = parseFloat(tok);
          ok = f.has_value();
          if (ok)
            bits = kind == ElementKind::F16 ? floatToHalf(*f)
                                            : floatToBFloat16(*f);
        }
        if (ok)
          std::memcpy(dst, &bits, 2);
        break;
      }
      case ElementKind::Bool:
        ok = tok == "true" || tok == "false";
        *dst = tok == "true";
        break;
      case ElementKind::U64: {
        uint64_t v;
        ok = !tok.getAsInteger(10, v);
        if (ok)
          std::memcpy(dst, &v, 8);
        break;
      }
      default: {
        int64_t v;
        ok = !tok.getAsInteger(10, v);
        auto range = getIntegerRange(kind);
        ok = ok && v >= range.first && v <= range.second;
        if (ok) // little-endian truncation to the element width
          std::memcpy(dst, &v, width);
      }
      }
      if (!ok)
        return error(p.loc, "invalid " + getElementKindName(kind) +
                                " element '" + tok + "'");
    }
    return std::make_shared<const DenseElements>(kind, dims, std::move(bytes),
                                                 name);
  }

  llvm::Expected<DenseElementsRef> parseTypedDense() {
    PendingDense p;
    if (auto err = parseDenseLiteral(p))
      return std::move(err);
    if (auto err = expect(":"))
      return std::move(err);
    auto t = parseTensorType();
    if (!t)
      return t.takeError();
    return materialize(p, *t, {});
  }

  llvm::Error parseAttrValue(ParsedAttr &attr) {
    skipSpace();
    const char *loc = cur;
    if (cur >= end())
      return error("expected attribute value");
    if (*cur == '"') {
      auto s = parseString();
      if (!s)
        return s.takeError();
      attr.value = Attribute(*s);
      return llvm::Error::success();
    }
    if (consumeKeyword("floats[]")) {
      attr.value = Attribute(EmptyList{EmptyList::Floats});
      return llvm::Error::success();
    }
    if (consumeIf("floats[]") || consumeIf("strings[]") ||
        consumeIf("tensors[]")) {
      llvm::StringRef spelled(loc, cur - loc);
      attr.value = Attribute(
          EmptyList{spelled.startswith("strings")   ? EmptyList::Strings
                    : spelled.startswith("tensors") ? EmptyList::Tensors
                                                    : EmptyList::Floats});
      return llvm::Error::success();
    }
    if (consumeKeyword("opaque")) {
      if (auto err = expect("<"))
        return err;
      auto kind = parseString();
      if (!kind)
        return kind.takeError();
      if (auto err = expect(","))
        return err;
      auto hex = parseString();
      if (!hex)
        return hex.takeError();
      auto bytes = decodeHex(*hex, loc);
      if (!bytes)
        return bytes.takeError();
      attr.value = Attribute(OpaqueAttr{*kind, std::move(*bytes)});
      return expect(">");
    }
    if (llvm::StringRef(cur, end() - cur).startswith("dense")) {
      if (auto err = parseDenseLiteral(attr.pending))
        return err;
      if (consumeIf(":")) {
        auto t = parseTensorType();
        if (!t)
          return t.takeError();
        auto d = materialize(attr.pending, *t, {});
        if (!d)
          return d.takeError();
        attr.value = Attribute(*d);
      }
      return llvm::Error::success();
    }
    if (consumeIf("[")) {
      skipSpace();
      if (consumeIf("]")) {
        attr.value = Attribute(EmptyList{EmptyList::Ints});
        return llvm::Error::success();
      }
      if (cur < end() && *cur == '"') {
        std::vector<std::string> strs;
        do {
          auto s = parseString();
          if (!s)
            return s.takeError();
          strs.push_back(*s);
        } while (consumeIf(","));
        attr.value = Attribute(std::move(strs));
        return expect("]");
      }
      if (llvm::StringRef(cur, end() - cur).startswith("dense")) {
        std::vector<DenseElementsRef> tensors;
        do {
          auto d = parseTypedDense();
          if (!d)
            return d.takeError();
          tensors.push_back(*d);
        } while (consumeIf(","));
        attr.value = Attribute(std::move(tensors));
        return expect("]");
      }
      std::vector<std::string> toks;
      bool anyFloat = false;
      do {
        skipSpace();
        const char *tloc = cur;
        llvm::StringRef tok = lexNumberToken();
        if (tok.empty())
          return error(tloc, "expected number in list");
        anyFloat |= isFloatToken(tok);
        toks.push_back(tok.str());
      } while (consumeIf(","));
      if (auto err = expect("]"))
        return err;
      if (anyFloat) {
        std::vector<float> fs;
        for (auto &t : toks) {
          auto f = parseFloat(t);
          if (!f)
            return error(loc, "invalid float '" + t + "'");
          fs.push_back(*f);
        }
        attr.value = Attribute(std::move(fs));
      } else {
        std::vector<int64_t> is;
        for (auto &t : toks) {
          int64_t v;
          if (llvm::StringRef(t).getAsInteger(10, v))
            return error(loc, "invalid integer '" + t + "'");
          is.push_back(v);
        }
        attr.value = Attribute(std::move(is));
      }
      return llvm::Error::success();
    }
    llvm::StringRef tok = lexNumberToken();
    if (tok.empty())
      return error(loc, "expected attribute value");
    if (isFloatToken(tok)) {
      auto f = parseFloat(tok);
      if (!f)
        return error(loc, "invalid float '" + tok + "'");
      attr.value = Attribute(*f);
    } else {
      int64_t v;
      if (tok.getAsInteger(10, v))
        return error(loc, "invalid attribute value '" + tok + "'");
      attr.value = Attribute(v);
    }
    return llvm::Error::success();
  }

  static bool isFloatToken(llvm::StringRef tok) {
    if (tok.startswith("0x") || tok.startswith("0X"))
      return false;
    return tok.contains('.') || tok.contains('e') || tok.contains('E') ||
           tok.endswith("inf") || tok == "nan";
  }

  llvm::Expected<std::string> decodeHex(llvm::StringRef hex, const char *loc) {
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

  //===--- Structure
  //-------------------------------------------------------===//
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

llvm::Error Parser::parseResourcesSection() {
  // The section is the file's tail: "{-#" ... "#-}".
  // The section starts a line; strings escape newlines and comments run to
  // the end of their line, so neither can contain such a line start.
  size_t start = text.startswith("{-#") ? 0 : text.rfind("\n{-#");
  if (start == llvm::StringRef::npos)
    return llvm::Error::success();
  if (text[start] == '\n')
    ++start;
  bodyEnd = text.begin() + start;
  const char *savedCur = cur;
  const char *savedEnd = bodyEnd;
  cur = text.begin() + start + 3;
  bodyEnd = text.end();
  auto restore = [&]() {
    cur = savedCur;
    bodyEnd = savedEnd;
  };
  if (!consumeKeyword("resources")) {
    auto err = error("expected 'resources' in the resources section");
    restore();
    return err;
  }
  auto fail = [&](llvm::Error err) {
    restore();
    return err;
  };
  if (auto err = expect(":"))
    return fail(std::move(err));
  if (auto err = expect("{"))
    return fail(std::move(err));
  if (!consumeIf("}")) {
    do {
      skipSpace();
      if (consumeIf("}")) // trailing comma
        goto closed;
      {
        const char *loc = cur;
        auto name = parseSymbolName();
        if (!name)
          return fail(name.takeError());
        if (auto err = expect(":"))
          return fail(std::move(err));
        auto hex = parseString();
        if (!hex)
          return fail(hex.takeError());
        auto bytes = decodeHex(*hex, loc);
        if (!bytes)
          return fail(bytes.takeError());
        if (resources.count(*name))
          return fail(error(loc, "duplicate resource '" + *name + "'"));
        resources[*name] = std::move(*bytes);
      }
    } while (consumeIf(","));
    if (auto err = expect("}"))
      return fail(std::move(err));
  }
closed:
  if (auto err = expect("#-}"))
    return fail(std::move(err));
  if (!atEnd())
    return fail(error("unexpected text after the resources section"));
  restore();
  return llvm::Error::success();
}

llvm::Error Parser::parseModelHeader(Model &m) {
  std::vector<ParsedAttr> attrs;
  const char *loc = cur;
  if (auto err = parseAttrDict(attrs))
    return err;
  for (ParsedAttr &a : attrs) {
    if (!a.value)
      return error(loc, "model field '" + a.name + "' must not be a tensor");
    const Attribute &v = *a.value;
    auto str = [&](std::string &dst) -> llvm::Error {
      if (!v.isString())
        return error(loc, "model field '" + a.name + "' must be a string");
      dst = *v.getIf<std::string>();
      return llvm::Error::success();
    };
    auto strList = [&]() -> llvm::Expected<std::vector<std::string>> {
      if (auto *l = v.getIf<std::vector<std::string>>())
        return *l;
      if (v.getIf<EmptyList>())
        return std::vector<std::string>{};
      return error(loc, "model field '" + a.name + "' must be a string list");
    };
    if (a.name == "ir_version" || a.name == "model_version") {
      if (!v.isInt())
        return error(loc, "model field '" + a.name + "' must be an integer");
      (a.name == "ir_version" ? m.irVersion : m.modelVersion) =
          *v.getIf<int64_t>();
    } else if (a.name == "producer_name") {
      if (auto err = str(m.producerName))
        return err;
    } else if (a.name == "producer_version") {
      if (auto err = str(m.producerVersion))
        return err;
    } else if (a.name == "domain") {
      if (auto err = str(m.domain))
        return err;
    } else if (a.name == "doc_string") {
      if (auto err = str(m.docString))
        return err;
    } else if (a.name == "opset_import") {
      auto l = strList();
      if (!l)
        return l.takeError();
      for (llvm::StringRef entry : *l) {
        auto [domain, version] = entry.rsplit(':');
        int64_t ver;
        if (version.getAsInteger(10, ver))
          return error(loc, "opset_import entry '" + entry +
                                "' must read 'domain:version'");
        m.opsetImports.push_back(
            {domain == "ai.onnx" ? std::string() : domain.str(), ver});
      }
    } else if (a.name == "metadata_props") {
      auto l = strList();
      if (!l)
        return l.takeError();
      if (l->size() % 2)
        return error(loc, "metadata_props must hold key/value pairs");
      for (size_t i = 0; i < l->size(); i += 2)
        m.metadataProps.push_back({(*l)[i], (*l)[i + 1]});
    } else if (a.name == "functions") {
      auto l = strList();
      if (!l)
        return l.takeError();
      for (const std::string &hex : *l) {
        auto bytes = decodeHex(hex, loc);
        if (!bytes)
          return bytes.takeError();
        m.functions.push_back(std::move(*bytes));
      }
    } else {
      return error(loc, "unknown model field '" + a.name + "'");
    }
  }
  return llvm::Error::success();
}

llvm::Error Parser::defineValue(Value *v, const char *loc) {
  if (v->getName().empty() || v->isAbsent())
    return llvm::Error::success();
  if (!values.try_emplace(v->getName(), v).second)
    return error(loc, "redefinition of value %" + v->getName());
  return llvm::Error::success();
}

llvm::Expected<Value *> Parser::parseOperand(Graph &g) {
  skipSpace();
  const char *loc = cur;
  if (consumeKeyword("_"))
    return nullptr;
  if (!consumeIf("%"))
    return error("expected value reference");
  auto name = parseSymbolName();
  if (!name)
    return name.takeError();
  auto it = values.find(*name);
  if (it == values.end())
    return error(loc, "use of undefined value %" + *name);
  return it->second;
}

llvm::Error
Parser::parseValueList(Graph &g, llvm::StringRef what,
                       std::vector<std::pair<Value *, const char *>> &out) {
  do {
    skipSpace();
    const char *loc = cur;
    auto v = parseOperand(g);
    if (!v)
      return v.takeError();
    if (!*v)
      return error(loc, what + " cannot be '_'");
    out.push_back({*v, loc});
  } while (consumeIf(","));
  return llvm::Error::success();
}

llvm::Error Parser::parseNode(Graph &g) {
  skipSpace();
  const char *nodeLoc = cur;
  // Results.
  struct ResultName {
    std::string name;
    bool absent;
    const char *loc;
  };
  std::vector<ResultName> resultNames;
  if (*cur == '%' || (*cur == '_' && cur + 1 < end() && !isIdentChar(cur[1]))) {
    do {
      skipSpace();
      const char *rloc = cur;
      if (consumeKeyword("_")) {
        resultNames.push_back({"", true, rloc});
        continue;
      }
      if (auto err = expect("%"))
        return err;
      auto name = parseSymbolName();
      if (!name)
        return name.takeError();
      resultNames.push_back({*name, false, rloc});
    } while (consumeIf(","));
    if (auto err = expect("="))
      return err;
  }
  // Op name.
  skipSpace();
  const char *opLoc = cur;
  std::string op;
  if (cur < end() && *cur == '"') {
    auto s = parseString();
    if (!s)
      return s.takeError();
    op = *s;
  } else {
    op = lexBareIdent().str();
  }
  if (op.empty() || op.find('.') == std::string::npos)
    return error(opLoc, "expected an op name such as onnx.Conv");
  // Operands.
  std::vector<Value *> operands;
  if (auto err = expect("("))
    return err;
  if (!consumeIf(")")) {
    do {
      auto v = parseOperand(g);
      if (!v)
        return v.takeError();
      operands.push_back(*v);
    } while (consumeIf(","));
    if (auto err = expect(")"))
      return err;
  }
  // Values read by subgraph attributes.
  std::vector<Value *> captures;
  if (consumeKeyword("captures")) {
    if (auto err = expect("("))
      return err;
    std::vector<std::pair<Value *, const char *>> refs;
    if (auto err = parseValueList(g, "a capture", refs))
      return err;
    for (auto &[v, loc] : refs)
      captures.push_back(v);
    if (auto err = expect(")"))
      return err;
  }
  // Attributes.
  std::vector<ParsedAttr> parsedAttrs;
  skipSpace();
  if (cur < end() && *cur == '{')
    if (auto err = parseAttrDict(parsedAttrs))
      return err;
  // Result types.
  std::vector<const TensorType *> types;
  if (!resultNames.empty()) {
    if (auto err = expect(":"))
      return err;
    do {
      auto t = parseTensorType();
      if (!t)
        return t.takeError();
      types.push_back(*t);
    } while (consumeIf(","));
    if (types.size() != resultNames.size())
      return error(nodeLoc, "node has " + llvm::Twine(resultNames.size()) +
                                " results but " + llvm::Twine(types.size()) +
                                " result types");
  }
  std::string nodeName;
  if (consumeKeyword("loc")) {
    if (auto err = expect("("))
      return err;
    auto s = parseString();
    if (!s)
      return s.takeError();
    nodeName = *s;
    if (auto err = expect(")"))
      return err;
  }
  // Pending dense literals take the first result's type.
  std::vector<NamedAttribute> attrs;
  for (ParsedAttr &a : parsedAttrs) {
    if (!a.value) {
      if (types.empty())
        return error(a.pending.loc, "dense literal without a type");
      const TensorType *t = types.front();
      const TensorType *storageType =
          t->withElementType(ctx.getElementType(t->getStorageKind()));
      std::string hint = resultNames.empty() ? "" : resultNames.front().name;
      auto d = materialize(a.pending, storageType, hint);
      if (!d)
        return d.takeError();
      a.value = Attribute(*d);
    }
    attrs.push_back({a.name, std::move(*a.value)});
  }
  std::vector<ResultSpec> specs;
  for (size_t i = 0; i < resultNames.size(); ++i)
    specs.push_back({types[i], resultNames[i].name, resultNames[i].absent});
  Node *n = g.createNode(op, operands, specs, std::move(attrs), nodeName);
  for (Value *v : captures)
    n->addCapture(v);
  for (size_t i = 0; i < resultNames.size(); ++i)
    if (auto err = defineValue(n->getResult(i), resultNames[i].loc))
      return err;
  return llvm::Error::success();
}

llvm::Error Parser::parseGraph(Model &m) {
  Graph &g = m.getGraph();
  if (!consumeKeyword("graph"))
    return error("expected 'graph'");
  skipSpace();
  if (!consumeIf("@"))
    return error("expected graph name '@name'");
  auto gname = parseSymbolName(/*allowEmpty=*/true);
  if (!gname)
    return gname.takeError();
  g.setName(*gname);
  if (auto err = expect("("))
    return err;
  if (!consumeIf(")")) {
    do {
      skipSpace();
      const char *loc = cur;
      if (auto err = expect("%"))
        return err;
      auto name = parseSymbolName();
      if (!name)
        return name.takeError();
      if (auto err = expect(":"))
        return err;
      auto t = parseTensorType();
      if (!t)
        return t.takeError();
      if (auto err = defineValue(g.addInput(*t, *name), loc))
        return err;
    } while (consumeIf(","));
    if (auto err = expect(")"))
      return err;
  }
  if (auto err = expect("->"))
    return err;
  if (auto err = expect("("))
    return err;
  std::vector<std::pair<const TensorType *, const char *>> outputTypes;
  if (!consumeIf(")")) {
    do {
      skipSpace();
      const char *loc = cur;
      auto t = parseTensorType();
      if (!t)
        return t.takeError();
      outputTypes.push_back({*t, loc});
    } while (consumeIf(","));
    if (auto err = expect(")"))
      return err;
  }
  if (consumeKeyword("attributes")) {
    std::vector<ParsedAttr> attrs;
    const char *loc = cur;
    if (auto err = parseAttrDict(attrs))
      return err;
    for (ParsedAttr &a : attrs) {
      if (a.name == "doc_string" && a.value && a.value->isString()) {
        g.setDocString(*a.value->getIf<std::string>());
      } else if (a.name == "initializer_inputs" && a.value &&
                 a.value->getIf<std::vector<std::string>>()) {
        g.getInitializerInputs() = *a.value->getIf<std::vector<std::string>>();
      } else if (a.name == "initializer_input_positions" && a.value &&
                 (a.value->getIf<std::vector<int64_t>>() ||
                  a.value->getIf<EmptyList>())) {
        g.getInitializerInputPositions() = a.value->getInts();
      } else {
        return error(loc, "unknown graph attribute '" + a.name + "'");
      }
    }
  }
  if (auto err = expect("{"))
    return err;
  while (true) {
    skipSpace();
    if (cur >= end() || *cur == '}')
      return error("expected 'return' before the end of the graph");
    if (consumeKeyword("return"))
      break;
    if (auto err = parseNode(g))
      return err;
  }
  std::vector<std::pair<Value *, const char *>> outs;
  const char *returnLoc = cur - 6;
  skipSpace();
  if (cur < end() && *cur == '%') {
    if (auto err = parseValueList(g, "a graph output", outs))
      return err;
  }
  if (outs.size() != outputTypes.size())
    return error(returnLoc,
                 "graph returns " + llvm::Twine(outs.size()) +
                     (outs.size() == 1 ? " value" : " values") +
                     " but its signature lists " +
                     llvm::Twine(outputTypes.size()) +
                     (outputTypes.size() == 1 ? " output" : " outputs"));
  for (size_t i = 0; i < outs.size(); ++i) {
    // The signature may state an output type less or more precisely than
    // the value's declaration (inference fills in the rest) but not
    // differently.
    const TensorType *merged =
        meetTypes(outs[i].first->getType(), outputTypes[i].first);
    if (merged)
      outs[i].first->setType(merged);
    else
      return error(outputTypes[i].second,
                   "output type " + typeToString(outputTypes[i].first) +
                       " differs from the type of %" +
                       outs[i].first->getName() + ", " +
                       typeToString(outs[i].first->getType()));
    g.addOutput(outs[i].first);
  }
  return expect("}");
}

llvm::Expected<std::unique_ptr<Model>> Parser::parseFile() {
  if (auto err = parseResourcesSection())
    return std::move(err);
  auto model = std::make_unique<Model>(ctx);
  skipSpace();
  if (consumeKeyword("model")) {
    if (auto err = parseModelHeader(*model))
      return std::move(err);
  } else {
    model->opsetImports.push_back({"", 13});
  }
  while (true) {
    skipSpace();
    if (cur >= end() || *cur != '!')
      break;
    const char *loc = cur++;
    llvm::StringRef alias = lexBareIdent();
    if (alias.empty())
      return error(loc, "expected alias name after '!'");
    if (alias.startswith("quant."))
      return error(loc, "'!quant.' names are reserved for quantized types");
    if (auto err = expect("="))
      return std::move(err);
    auto t = parseElementOrQuantType();
    if (!t)
      return t.takeError();
    if (!aliases.try_emplace(alias, *t).second)
      return error(loc, "redefinition of type alias '!" + alias + "'");
  }
  if (auto err = parseGraph(*model))
    return std::move(err);
  if (!atEnd())
    return error("unexpected text after the graph");
  return std::move(model);
}

llvm::Expected<const Type *> Parser::parseStandaloneType() {
  skipSpace();
  llvm::Expected<const Type *> t =
      llvm::StringRef(cur, end() - cur).startswith("tensor")
          ? llvm::Expected<const Type *>(parseTensorType())
          : parseElementOrQuantType();
  if (!t)
    return t.takeError();
  if (!atEnd())
    return error("unexpected text after the type");
  return t;
}

} // namespace

llvm::Expected<std::unique_ptr<Model>>
qopt::parseModel(llvm::StringRef text, llvm::StringRef bufferName,
                 Context &ctx) {
  return Parser(text, bufferName, ctx).parseFile();
}

llvm::Expected<const Type *> qopt::parseType(llvm::StringRef text,
                                             Context &ctx) {
  return Parser(text, "<type>", ctx).parseStandaloneType();
}
