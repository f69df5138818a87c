//===- AsmPrinter.cpp - The .qir text form: printing ----------------------===//

#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Graph.h"
#include "qopt/Support/FloatFormat.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

#include <cstring>

using namespace qopt;

bool qopt::isBareIdentifier(llvm::StringRef s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
          c == '$' || c == '-'))
      return false;
  return true;
}

std::string qopt::quoteString(llvm::StringRef s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20 || c >= 0x7F) {
        static const char *hex = "0123456789ABCDEF";
        out += '\\';
        out += hex[c >> 4];
        out += hex[c & 15];
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  out += '"';
  return out;
}

std::string qopt::formatValueName(llvm::StringRef name) {
  return isBareIdentifier(name) ? "%" + name.str() : "%" + quoteString(name);
}

static bool isDialectOp(llvm::StringRef op) {
  auto [dialect, rest] = op.split('.');
  return (dialect == "onnx" || dialect == "q") && isBareIdentifier(rest) &&
         !rest.contains('.');
}

namespace {

class Printer {
public:
  Printer(llvm::raw_ostream &os, const PrintOptions &opts)
      : os(os), opts(opts) {}

  void printModelHeader(const Model &m) {
    std::vector<std::string> fields;
    fields.push_back("ir_version = " + std::to_string(m.irVersion));
    std::string opsets = "opset_import = [";
    for (size_t i = 0; i < m.opsetImports.size(); ++i) {
      const OpsetImport &o = m.opsetImports[i];
      if (i)
        opsets += ", ";
      opsets +=
          quoteString((o.domain.empty() ? std::string("ai.onnx") : o.domain) +
                      ":" + std::to_string(o.version));
    }
    fields.push_back(opsets + "]");
    auto addString = [&](const char *key, const std::string &v) {
      if (!v.empty())
        fields.push_back(std::string(key) + " = " + quoteString(v));
    };
    addString("producer_name", m.producerName);
    addString("producer_version", m.producerVersion);
    addString("domain", m.domain);
    if (m.modelVersion)
      fields.push_back("model_version = " + std::to_string(m.modelVersion));
    addString("doc_string", m.docString);
    if (!m.metadataProps.empty()) {
      std::string s = "metadata_props = [";
      for (size_t i = 0; i < m.metadataProps.size(); ++i) {
        if (i)
          s += ", ";
        s += quoteString(m.metadataProps[i].first) + ", " +
             quoteString(m.metadataProps[i].second);
      }
      fields.push_back(s + "]");
    }
    if (!m.functions.empty()) {
      std::string s = "functions = [";
      for (size_t i = 0; i < m.functions.size(); ++i) {
        if (i)
          s += ", ";
        s += "\"" + toHex(m.functions[i]) + "\"";
      }
      fields.push_back(s + "]");
    }
    os << "model {";
    for (size_t i = 0; i < fields.size(); ++i)
      os << (i ? ", " : "") << fields[i];
    os << "}\n\n";
  }

  void printGraph(const Graph &g) {
    collectAliases(g);
    for (const auto &[type, alias] : aliasOrder)
      os << "!" << alias << " = " << typeToString(type) << "\n";
    if (!aliasOrder.empty())
      os << "\n";

    os << "graph @"
       << (isBareIdentifier(g.getName()) ? g.getName().str()
                                         : quoteString(g.getName()))
       << "(";
    for (unsigned i = 0; i < g.getNumInputs(); ++i) {
      const Value *in = g.getInput(i);
      os << (i ? ", " : "") << name(in) << ": " << type(in->getType());
    }
    os << ") -> (";
    for (unsigned i = 0; i < g.getNumOutputs(); ++i)
      os << (i ? ", " : "") << type(g.getOutput(i)->getType());
    os << ")";
    std::vector<std::string> graphAttrs;
    if (!g.getDocString().empty())
      graphAttrs.push_back("doc_string = " + quoteString(g.getDocString()));
    if (!g.getInitializerInputs().empty()) {
      std::string s = "initializer_inputs = [";
      for (size_t i = 0; i < g.getInitializerInputs().size(); ++i)
        s += (i ? ", " : "") + quoteString(g.getInitializerInputs()[i]);
      graphAttrs.push_back(s + "]");
    }
    if (!g.getInitializerInputPositions().empty()) {
      std::string s = "initializer_input_positions = [";
      for (size_t i = 0; i < g.getInitializerInputPositions().size(); ++i)
        s += (i ? ", " : "") +
             std::to_string(g.getInitializerInputPositions()[i]);
      graphAttrs.push_back(s + "]");
    }
    if (!graphAttrs.empty()) {
      os << " attributes {";
      for (size_t i = 0; i < graphAttrs.size(); ++i)
        os << (i ? ", " : "") << graphAttrs[i];
      os << "}";
    }
    os << " {\n";
    for (const Node &n : g.getNodes())
      printNode(n);
    os << "  return";
    for (unsigned i = 0; i < g.getNumOutputs(); ++i)
      os << (i ? ", " : " ") << name(g.getOutput(i));
    os << "\n}\n";
  }

  void printResources() {
    if (resources.empty() || opts.elideResourceData)
      return;
    os << "{-#\n  resources: {\n";
    for (size_t i = 0; i < resources.size(); ++i) {
      const auto &[resName, data] = resources[i];
      os << "    " << quoteString(resName) << ": \"0x";
      writeHex(data->getRawBytes());
      os << "\"" << (i + 1 < resources.size() ? "," : "") << "\n";
    }
    os << "  }\n#-}\n";
  }

private:
  static std::string toHex(llvm::StringRef bytes) {
    static const char *hex = "0123456789ABCDEF";
    std::string out = "0x";
    out.reserve(2 + bytes.size() * 2);
    for (unsigned char c : bytes) {
      out += hex[c >> 4];
      out += hex[c & 15];
    }
    return out;
  }

  void writeHex(llvm::StringRef bytes) {
    static const char *hex = "0123456789ABCDEF";
    char buf[8192];
    size_t fill = 0;
    for (unsigned char c : bytes) {
      buf[fill++] = hex[c >> 4];
      buf[fill++] = hex[c & 15];
      if (fill == sizeof(buf)) {
        os.write(buf, fill);
        fill = 0;
      }
    }
    os.write(buf, fill);
  }

  void noteQuantType(const TensorType *t,
                     llvm::DenseMap<const QuantType *, unsigned> &counts,
                     std::vector<const QuantType *> &order) {
    if (!t)
      return;
    if (const QuantType *q = t->getQuantType()) {
      if (counts[q]++ == 0)
        order.push_back(q);
    }
  }

  /// Quant types used twice or more, or per-axis ones, get `!qN` aliases in
  /// order of first appearance.
  void collectAliases(const Graph &g) {
    llvm::DenseMap<const QuantType *, unsigned> counts;
    std::vector<const QuantType *> order;
    for (const Value *in : g.getInputs())
      noteQuantType(in->getType(), counts, order);
    for (const Node &n : g.getNodes())
      for (const Value *r : n.getResults())
        noteQuantType(r->getType(), counts, order);
    for (const QuantType *q : order)
      if (counts[q] > 1 || q->isPerAxis()) {
        std::string alias = "q" + std::to_string(aliasOrder.size());
        aliases[q] = alias;
        aliasOrder.push_back({q, alias});
      }
  }

  std::string type(const TensorType *t) {
    const QuantType *q = t->getQuantType();
    auto it = q ? aliases.find(q) : aliases.end();
    if (it == aliases.end())
      return typeToString(t);
    // Rebuild with the alias in place of the element type.
    std::string full = typeToString(t);
    std::string elem = typeToString(q);
    size_t pos = full.rfind(elem);
    return full.substr(0, pos) + "!" + it->second +
           full.substr(pos + elem.size());
  }

  std::string name(const Value *v) {
    if (!v)
      return "_";
    if (v->isAbsent())
      return "_";
    if (v->getName().empty()) {
      auto &slot = anonymousNames[v];
      if (slot.empty()) {
        // Numbered names that no named value of the graph uses.
        do
          slot = std::to_string(nextAnonymous++);
        while (v->getGraph()->lookupValue(slot));
      }
      return "%" + slot;
    }
    return formatValueName(v->getName());
  }

  void printNode(const Node &n) {
    os << "  ";
    if (n.getNumResults()) {
      for (unsigned i = 0; i < n.getNumResults(); ++i)
        os << (i ? ", " : "") << name(n.getResult(i));
      os << " = ";
    }
    if (isDialectOp(n.getOp()))
      os << n.getOp();
    else
      os << quoteString(n.getOp());
    os << "(";
    for (unsigned i = 0; i < n.getNumOperands(); ++i)
      os << (i ? ", " : "") << name(n.getOperand(i));
    os << ")";
    if (!n.getCaptures().empty()) {
      os << " captures(";
      for (size_t i = 0; i < n.getCaptures().size(); ++i)
        os << (i ? ", " : "") << name(n.getCaptures()[i]);
      os << ")";
    }
    if (!n.getAttrs().empty()) {
      os << " {";
      bool first = true;
      for (const NamedAttribute &a : n.getAttrs()) {
        os << (first ? "" : ", ")
           << (isBareIdentifier(a.name) ? a.name : quoteString(a.name))
           << " = ";
        // A Constant's value takes its type from the result.
        bool omitType = n.getOp() == "onnx.Constant" && a.name == "value";
        printAttribute(a.value, omitType, n);
        first = false;
      }
      os << "}";
    }
    if (n.getNumResults()) {
      os << " : ";
      for (unsigned i = 0; i < n.getNumResults(); ++i)
        os << (i ? ", " : "") << type(n.getResult(i)->getType());
    }
    if (!n.getName().empty())
      os << " loc(" << quoteString(n.getName()) << ")";
    os << "\n";
  }

  void printAttribute(const Attribute &a, bool omitTensorType,
                      const Node &owner) {
    const Attribute::Storage &s = a.get();
    if (auto *i = std::get_if<int64_t>(&s)) {
      os << *i;
    } else if (auto *f = std::get_if<float>(&s)) {
      os << floatAttr(*f);
    } else if (auto *str = std::get_if<std::string>(&s)) {
      os << quoteString(*str);
    } else if (auto *ints = std::get_if<std::vector<int64_t>>(&s)) {
      os << "[";
      for (size_t i = 0; i < ints->size(); ++i)
        os << (i ? ", " : "") << (*ints)[i];
      os << "]";
    } else if (auto *floats = std::get_if<std::vector<float>>(&s)) {
      os << "[";
      for (size_t i = 0; i < floats->size(); ++i)
        os << (i ? ", " : "") << floatAttr((*floats)[i]);
      os << "]";
    } else if (auto *strs = std::get_if<std::vector<std::string>>(&s)) {
      os << "[";
      for (size_t i = 0; i < strs->size(); ++i)
        os << (i ? ", " : "") << quoteString((*strs)[i]);
      os << "]";
    } else if (auto *t = std::get_if<DenseElementsRef>(&s)) {
      printDense(*t, owner);
      if (!omitTensorType)
        os << " : " << denseType(**t);
    } else if (auto *ts = std::get_if<std::vector<DenseElementsRef>>(&s)) {
      os << "[";
      for (size_t i = 0; i < ts->size(); ++i) {
        os << (i ? ", " : "");
        printDense((*ts)[i], owner);
        os << " : " << denseType(*(*ts)[i]);
      }
      os << "]";
    } else if (auto *o = std::get_if<OpaqueAttr>(&s)) {
      os << "opaque<" << quoteString(o->kind) << ", \"" << toHex(o->bytes)
         << "\">";
    } else if (auto *e = std::get_if<EmptyList>(&s)) {
      static const char *spell[] = {"[]", "floats[]", "strings[]", "tensors[]"};
      os << spell[e->kind];
    }
  }

  static std::string floatAttr(float f) {
    if (f != f)
      return "nan";
    return formatFloat(f, /*forceDecimalPoint=*/true);
  }

  std::string denseType(const DenseElements &d) {
    std::string s = "tensor<";
    for (int64_t dim : d.getDims())
      s += std::to_string(dim) + "x";
    return s + getElementKindName(d.getKind()).str() + ">";
  }

  std::string elementText(const DenseElements &d, int64_t i) {
    const char *p = d.getRawBytes().data();
    switch (d.getKind()) {
    case ElementKind::F32: {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      return formatFloat(f);
    }
    case ElementKind::F64: {
      double f;
      std::memcpy(&f, p + 8 * i, 8);
      return formatDouble(f);
    }
    case ElementKind::F16:
    case ElementKind::BF16: {
      uint16_t bits;
      std::memcpy(&bits, p + 2 * i, 2);
      float f = d.getKind() == ElementKind::F16 ? halfToFloat(bits)
                                                : bfloat16ToFloat(bits);
      if (f != f) {
        char buf[16];
        snprintf(buf, sizeof(buf), "0x%04X", bits);
        return buf;
      }
      return formatFloat(f);
    }
    case ElementKind::Bool:
      return p[i] ? "true" : "false";
    case ElementKind::U64: {
      uint64_t v;
      std::memcpy(&v, p + 8 * i, 8);
      return std::to_string(v);
    }
    default:
      return std::to_string(d.getAsInt(i));
    }
  }

  void printDense(const DenseElementsRef &ref, const Node &owner) {
    const DenseElements &d = *ref;
    // float8 codes print as bytes: a decimal value would not say which of
    // a format's NaN codes it is.
    bool inlineIt = d.getKind() == ElementKind::String ||
                    (d.getNumElements() <= opts.inlineElementsLimit &&
                     !isMinifloatKind(d.getKind()));
    if (!inlineIt) {
      os << "dense_resource<" << resourceName(ref, owner) << ">";
      return;
    }
    os << "dense<";
    bool bracket = d.getNumElements() != 1 || d.getDims().empty() == false;
    // Rank-0 and one-element tensors print their single element bare.
    bracket = d.getNumElements() != 1;
    if (bracket)
      os << "[";
    for (int64_t i = 0; i < d.getNumElements(); ++i) {
      if (i)
        os << ", ";
      if (d.getKind() == ElementKind::String)
        os << quoteString(d.getStrings()[i]);
      else
        os << elementText(d, i);
    }
    if (bracket)
      os << "]";
    os << ">";
  }

  std::string resourceName(const DenseElementsRef &ref, const Node &owner) {
    auto it = resourceNames.find(ref.get());
    if (it != resourceNames.end())
      return it->second;
    std::string base = ref->getName().str();
    if (base.empty() && owner.getNumResults())
      base = owner.getResult(0)->getName().str();
    if (base.empty())
      base = "blob";
    std::string unique = base;
    for (unsigned k = 1; usedResourceNames.count(unique); ++k)
      unique = base + "_" + std::to_string(k);
    usedResourceNames.insert(unique);
    std::string printed =
        isBareIdentifier(unique) ? unique : quoteString(unique);
    resourceNames[ref.get()] = printed;
    resources.push_back({unique, ref});
    return printed;
  }

  llvm::raw_ostream &os;
  const PrintOptions &opts;
  llvm::DenseMap<const QuantType *, std::string> aliases;
  std::vector<std::pair<const QuantType *, std::string>> aliasOrder;
  llvm::DenseMap<const Value *, std::string> anonymousNames;
  unsigned nextAnonymous = 0;
  llvm::DenseMap<const DenseElements *, std::string> resourceNames;
  llvm::StringSet<> usedResourceNames;
  std::vector<std::pair<std::string, DenseElementsRef>> resources;
};

} // namespace

void qopt::printModel(const Model &model, llvm::raw_ostream &os,
                      const PrintOptions &options) {
  Printer p(os, options);
  p.printModelHeader(model);
  p.printGraph(model.getGraph());
  p.printResources();
}

void qopt::printGraph(const Graph &graph, llvm::raw_ostream &os,
                      const PrintOptions &options) {
  Printer p(os, options);
  p.printGraph(graph);
  p.printResources();
}
