//===- AsmParser.cpp - The .qir text form: parsing ------------------------===//
//
// A recursive-descent parser working directly on characters: tensor types
// such as `tensor<1x3x?xf32>` need character-level lexing anyway. Every
// failure becomes a located ParseError; nothing here asserts on input.
//
// This file reads the structure: the resources section at the file's end,
// the model header, type aliases, the graph signature and its nodes, and
// holds the entry points. Tokens and diagnostics are in AsmLexer.cpp, types
// and attributes in AsmParserTypes.cpp (AsmParserImpl.h has the class).
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/AsmParser.h"
#include "AsmParserImpl.h"
#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/OpDefinition.h"

using namespace qopt;
using namespace qopt::asmparser;

char ParseError::ID = 0;

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
      if (*v.getIf<int64_t>() < 0)
        return error(loc, "model field '" + a.name + "' is at least 0");
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
        // As ONNX import requires (and export could not write back).
        if (ver < 1)
          return error(loc, "opset_import entry '" + entry +
                                "': a version is at least 1");
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

llvm::Expected<std::unique_ptr<Model>>
qopt::parseModel(llvm::StringRef text, llvm::StringRef bufferName,
                 Context &ctx) {
  return Parser(text, bufferName, ctx).parseFile();
}

llvm::Expected<const Type *> qopt::parseType(llvm::StringRef text,
                                             Context &ctx) {
  return Parser(text, "<type>", ctx).parseStandaloneType();
}
