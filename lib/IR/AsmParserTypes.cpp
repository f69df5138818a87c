//===- AsmParserTypes.cpp - The .qir text form: types and attributes ------===//
//
// Element types, !quant.uniform<...> types and aliases, tensor<...> types,
// attribute dictionaries and values, and dense literals: inline elements
// or dense_resource<name> data, built into tensors once their type is
// known (a Constant's literal takes the result type written after it).
//
//===----------------------------------------------------------------------===//

#include "AsmParserImpl.h"
#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Float8.h"
#include "qopt/Support/FloatFormat.h"

#include <cstring>

using namespace qopt;
using namespace qopt::asmparser;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

llvm::Expected<ElementKind> Parser::parseElementKind() {
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

llvm::Expected<const Type *> Parser::parseElementOrQuantType() {
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

llvm::Expected<const Type *> Parser::parseQuantBody(const char *loc) {
  auto storage = parseElementKind();
  if (!storage)
    return storage.takeError();
  if (auto err = expect(":"))
    return std::move(err);
  auto expressed = parseElementKind();
  if (!expressed)
    return expressed.takeError();
  std::optional<int64_t> axis;
  int64_t blockSize = 0;
  if (consumeIf(":")) {
    // ":axis", or ":{axis:block}" for block-wise parameters.
    bool blocked = consumeIf("{");
    auto a = parseInteger();
    if (!a)
      return a.takeError();
    axis = *a;
    if (blocked) {
      if (auto err = expect(":"))
        return std::move(err);
      skipSpace();
      const char *bloc = cur;
      auto b = parseInteger();
      if (!b)
        return b.takeError();
      if (*b < 1)
        return error(bloc, "block size must be at least 1");
      blockSize = *b;
      if (auto err = expect("}"))
        return std::move(err);
    }
  }
  if (auto err = expect(","))
    return std::move(err);
  // Two-level scales: ", f8E4M3FN*s {v:zp,...}", each v a value of the
  // scales' kind.
  std::optional<ElementKind> scaleKind;
  float scaleOfScales = 0;
  skipSpace();
  const char *kloc = cur;
  std::optional<ElementKind> k;
  if (cur < end() && isalpha(static_cast<unsigned char>(*cur))) {
    // An element kind and '*' ("inf" and "nan" are scales).
    k = parseElementKindName(lexBareIdent());
    skipSpace();
    if (!k || cur >= end() || *cur != '*') {
      k.reset();
      cur = kloc;
    }
  }
  if (k) {
    if (!isMinifloatKind(*k))
      return error(kloc, "quantized scales must be a float8 or float4 kind, "
                         "got '" +
                             getElementKindName(*k) + "'");
    scaleKind = *k;
    if (auto err = expect("*"))
      return std::move(err);
    skipSpace();
    const char *sloc = cur;
    auto g = parseFloat(lexNumberToken());
    if (!g)
      return error(sloc, "expected the scale of the scales");
    scaleOfScales = *g;
  }
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
  if (axis || scaleKind) { // a two-level list is braced either way
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
  if (!isAnyQuantStorageKind(*storage))
    return error(loc, "quantized storage type '" +
                          getElementKindName(*storage) +
                          "' is not supported (i4, u4, i8, u8, i16, u16, "
                          "i32, the float8 kinds, f4E2M1)");
  if (scaleKind) {
    std::vector<uint8_t> codes;
    for (float v : scales) {
      uint8_t c = encodeFloat8(v, *scaleKind);
      if (!(decodeFloat8(c, *scaleKind) == v))
        return error(loc, "scale value " + formatFloat(v) + " is not a " +
                              getElementKindName(*scaleKind) + " value");
      codes.push_back(c);
    }
    return static_cast<const Type *>(
        ctx.getTwoLevelQuantType(*storage, *expressed, axis, blockSize,
                                 *scaleKind, scaleOfScales, codes, zps));
  }
  return static_cast<const Type *>(
      ctx.getQuantType(*storage, *expressed, axis, scales, zps, blockSize));
}

llvm::Expected<const TensorType *> Parser::parseTensorType() {
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

//===----------------------------------------------------------------------===//
// Attributes and dense literals
//===----------------------------------------------------------------------===//

llvm::Error Parser::parseAttrDict(std::vector<ParsedAttr> &out) {
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

llvm::Error Parser::parseDenseLiteral(PendingDense &p) {
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

llvm::Expected<DenseElementsRef> Parser::materialize(const PendingDense &p,
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
    if (kind == ElementKind::String || kind == ElementKind::Unknown || !bytes ||
        *bytes != it->second.size())
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
                            " elements but " + typeToString(type) + " needs " +
                            llvm::Twine(*count));
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
          bits =
              kind == ElementKind::F16 ? floatToHalf(*f) : floatToBFloat16(*f);
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
      return error(p.loc, "invalid " + getElementKindName(kind) + " element '" +
                              tok + "'");
  }
  return std::make_shared<const DenseElements>(kind, dims, std::move(bytes),
                                               name);
}

llvm::Expected<DenseElementsRef> Parser::parseTypedDense() {
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

llvm::Error Parser::parseAttrValue(ParsedAttr &attr) {
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
