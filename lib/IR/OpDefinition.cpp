//===- OpDefinition.cpp - The op table ------------------------------------===//
//
// Builds the table from qopt/IR/Ops.def once (signatures are parsed from
// their text form) and answers lookups: the signature gives result element
// types, the op's function gives shapes, and the op's axis-remap function
// carries per-axis quantization through data movement. The driver that
// runs them over a node or a graph is OpInference.cpp.
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/OpDefinition.h"
#include "OpImpl.h"
#include "qopt/IR/Graph.h"
#include "qopt/Support/Error.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

using namespace qopt;
using namespace qopt::opimpl;

//===----------------------------------------------------------------------===//
// Type sets
//===----------------------------------------------------------------------===//

uint32_t qopt::typeSetOf(ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
    return TS_F32;
  case ElementKind::F16:
    return TS_F16;
  case ElementKind::BF16:
    return TS_BF16;
  case ElementKind::F64:
    return TS_F64;
  case ElementKind::F8E4M3FN:
    return TS_F8E4M3FN;
  case ElementKind::F8E4M3FNUZ:
    return TS_F8E4M3FNUZ;
  case ElementKind::F8E5M2:
    return TS_F8E5M2;
  case ElementKind::F8E5M2FNUZ:
    return TS_F8E5M2FNUZ;
  case ElementKind::F4E2M1:
    return TS_F4E2M1;
  case ElementKind::I4:
    return TS_I4;
  case ElementKind::U4:
    return TS_U4;
  case ElementKind::I8:
    return TS_I8;
  case ElementKind::U8:
    return TS_U8;
  case ElementKind::I16:
    return TS_I16;
  case ElementKind::U16:
    return TS_U16;
  case ElementKind::I32:
    return TS_I32;
  case ElementKind::U32:
    return TS_U32;
  case ElementKind::I64:
    return TS_I64;
  case ElementKind::U64:
    return TS_U64;
  case ElementKind::Bool:
    return TS_Bool;
  case ElementKind::String:
    return TS_String;
  case ElementKind::Unknown:
    return 0;
  }
  return 0;
}

namespace {
struct NamedSet {
  const char *name;
  uint32_t set;
};
// Larger sets first, so descriptions use the shortest words.
const NamedSet kNamedSets[] = {{"any", TS_Any},
                               {"numeric", TS_Numeric},
                               {"int", TS_Int},
                               {"float", TS_Float},
                               {"qstorage", TS_QStorage},
                               {"f32", TS_F32},
                               {"f16", TS_F16},
                               {"bf16", TS_BF16},
                               {"f64", TS_F64},
                               {"i8", TS_I8},
                               {"u8", TS_U8},
                               {"i16", TS_I16},
                               {"u16", TS_U16},
                               {"i32", TS_I32},
                               {"u32", TS_U32},
                               {"i64", TS_I64},
                               {"u64", TS_U64},
                               {"bool", TS_Bool},
                               {"i4", TS_I4},
                               {"float8", TS_Float8},
                               {"float4", TS_F4E2M1},
                               {"u4", TS_U4},
                               {"string", TS_String}};
} // namespace

std::string qopt::describeTypeSet(uint32_t set) {
  std::vector<std::string> words;
  uint32_t left = set;
  for (const NamedSet &s : kNamedSets)
    if ((left & s.set) == s.set && s.set != 0 &&
        llvm::StringRef(s.name) != "qstorage") {
      words.push_back(s.name);
      left &= ~s.set;
    }
  std::string out;
  for (size_t i = 0; i < words.size(); ++i)
    out += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return out;
}

static uint32_t parseTypeSet(llvm::StringRef text) {
  uint32_t set = 0;
  llvm::SmallVector<llvm::StringRef, 8> parts;
  text.split(parts, '|');
  for (llvm::StringRef p : parts) {
    p = p.trim();
    bool found = false;
    for (const NamedSet &s : kNamedSets)
      if (p == s.name) {
        set |= s.set;
        found = true;
      }
    if (!found)
      llvm::report_fatal_error("Ops.def: unknown type set '" + p + "'");
  }
  return set;
}

//===----------------------------------------------------------------------===//
// Building the table
//===----------------------------------------------------------------------===//

namespace {

struct NoDefault {};
struct Required {};

AttrSpec makeAttr(llvm::StringRef name, AttrKind kind, NoDefault) {
  return {name, kind, std::nullopt, false};
}
AttrSpec makeAttr(llvm::StringRef name, AttrKind kind, Required) {
  return {name, kind, std::nullopt, true};
}
AttrSpec makeAttr(llvm::StringRef name, AttrKind kind, int value) {
  if (kind == AttrKind::Float)
    return {name, kind, Attribute(static_cast<float>(value)), false};
  return {name, kind, Attribute(static_cast<int64_t>(value)), false};
}
AttrSpec makeAttr(llvm::StringRef name, AttrKind kind, double value) {
  return {name, kind, Attribute(static_cast<float>(value)), false};
}
AttrSpec makeAttr(llvm::StringRef name, AttrKind kind, const char *value) {
  return {name, kind, Attribute(std::string(value)), false};
}

/// Parses "X:T W:T B?:T -> Y:T" with constraints "T=float; I=i32|i64".
void parseSignature(OpDef &def, llvm::StringRef sig,
                    llvm::StringRef constraints) {
  llvm::StringMap<uint32_t> vars;
  llvm::SmallVector<llvm::StringRef, 4> decls;
  constraints.split(decls, ';', -1, false);
  for (llvm::StringRef d : decls) {
    auto [var, set] = d.split('=');
    vars[var.trim()] = parseTypeSet(set);
  }
  auto [ins, outs] = sig.split("->");
  auto parseSlots = [&](llvm::StringRef text,
                        std::vector<SignatureSlot> &slots) {
    llvm::SmallVector<llvm::StringRef, 8> parts;
    text.split(parts, ' ', -1, false);
    for (llvm::StringRef p : parts) {
      SignatureSlot slot;
      auto [name, type] = p.split(':');
      if (type.consume_back("..."))
        slot.variadic = true;
      if (name.consume_back("?"))
        slot.optional = true;
      slot.name = name.str();
      auto it = vars.find(type);
      if (it != vars.end()) {
        slot.typeVar = type.str();
        slot.allowed = it->second;
      } else {
        slot.allowed = parseTypeSet(type);
      }
      slots.push_back(std::move(slot));
    }
  };
  parseSlots(ins, def.operands);
  parseSlots(outs, def.results);
}

namespace traitnames {
constexpr OpTrait None = OpTrait::None;
constexpr OpTrait DataMovement = OpTrait::DataMovement;
constexpr OpTrait Monotonic = OpTrait::Monotonic;
constexpr OpTrait Elementwise = OpTrait::Elementwise;
constexpr OpTrait Weighted = OpTrait::Weighted;
constexpr OpTrait Commutative = OpTrait::Commutative;
constexpr OpTrait Nondeterministic = OpTrait::Nondeterministic;
constexpr OpTrait ShapeOnly = OpTrait::ShapeOnly;
} // namespace traitnames

/// Adapts the table's remap functions to the public AxisRemapFn.
template <llvm::Expected<int64_t> (*Fn)(
    const Node &, int64_t, llvm::ArrayRef<Dim>, llvm::ArrayRef<Dim>)>
constexpr AxisRemapFn remapFn() {
  return Fn;
}

struct OpTable {
  std::vector<std::unique_ptr<OpDef>> defs;
  std::vector<const OpDef *> ordered;
  llvm::StringMap<OpDef *> byName;

  OpTable() {
    using namespace traitnames;
    auto add = [&](llvm::StringRef name, int64_t since, llvm::StringRef sig,
                   llvm::StringRef constraints, OpTrait traits, InferFn infer,
                   AxisRemapFn remap, llvm::StringRef summary) {
      auto def = std::make_unique<OpDef>();
      def->name = name;
      def->sinceVersion = since;
      parseSignature(*def, sig, constraints);
      def->traits = traits;
      def->infer = infer;
      def->remapAxis = remap;
      def->summary = summary;
      if (!byName.try_emplace(name, def.get()).second)
        llvm::report_fatal_error("Ops.def: '" + name + "' is defined twice");
      ordered.push_back(def.get());
      defs.push_back(std::move(def));
    };
    auto get = [&](llvm::StringRef name) -> OpDef & {
      auto it = byName.find(name);
      if (it == byName.end())
        llvm::report_fatal_error("Ops.def: '" + name + "' is not an op");
      return *it->second;
    };
    // An attribute ATTR declared before (ATTR_ONE_OF, ATTR_AXIS refine it).
    auto spec = [&](llvm::StringRef op, llvm::StringRef name) -> AttrSpec & {
      for (AttrSpec &a : get(op).attributes)
        if (a.name == name)
          return a;
      llvm::report_fatal_error("Ops.def: '" + op + "' has no attribute '" +
                               name + "'");
    };
#define NONE                                                                   \
  NoDefault {}
#define REQUIRED                                                               \
  Required {}
#define OP(ID, NAME, SINCE, SIG, CONSTRAINTS, TRAITS, INFER, REMAP, SUMMARY)   \
  add(NAME, SINCE, SIG, CONSTRAINTS, TRAITS, INFER, REMAP, SUMMARY);
#define ATTR(OPNAME, NAME, KIND, DEFAULT)                                      \
  get(OPNAME).attributes.push_back(makeAttr(#NAME, AttrKind::KIND, DEFAULT));
#define ATTR_ONE_OF(OPNAME, NAME, VALUES) spec(OPNAME, #NAME).oneOf = VALUES;
#define ATTR_AXIS(OPNAME, NAME) spec(OPNAME, #NAME).isAxis = true;
#define WEIGHT(OPNAME, FN) get(OPNAME).weightInfo = FN;
#define VERIFY(OPNAME, FN) get(OPNAME).verify = FN;
#define FOLD(OPNAME, FN) get(OPNAME).fold = FN;
#include "qopt/IR/Ops.def"
#undef NONE
#undef REQUIRED
  }
};

const OpTable &getTable() {
  static const OpTable table;
  return table;
}

} // namespace

const OpDef *qopt::lookupOpDef(llvm::StringRef op) {
  const OpTable &t = getTable();
  auto it = t.byName.find(op);
  return it == t.byName.end() ? nullptr : it->second;
}

llvm::ArrayRef<const OpDef *> qopt::getAllOpDefs() {
  return getTable().ordered;
}

bool qopt::isQdqParamRecordAttr(llvm::StringRef name) {
  return name == "param_names" || name == "param_ranks" ||
         name == "scale_params" || name == "scale_param_ranks";
}

bool qopt::hasTrait(const Node &n, OpTrait t) {
  const OpDef *def = n.getOpDef();
  return def && def->hasTrait(t);
}

//===----------------------------------------------------------------------===//
// OpDef
//===----------------------------------------------------------------------===//

static unsigned minCount(const std::vector<SignatureSlot> &slots) {
  unsigned n = 0;
  for (const SignatureSlot &s : slots)
    if (!s.optional)
      ++n;
  // Optional slots before a required one still take a position.
  unsigned lastRequired = 0;
  for (unsigned i = 0; i < slots.size(); ++i)
    if (!slots[i].optional)
      lastRequired = i + 1;
  return std::max(n, lastRequired);
}

unsigned OpDef::getMinOperands() const { return minCount(operands); }
unsigned OpDef::getMaxOperands() const {
  if (!operands.empty() && operands.back().variadic)
    return ~0u;
  return operands.size();
}
unsigned OpDef::getMinResults() const { return minCount(results); }
unsigned OpDef::getMaxResults() const {
  if (!results.empty() && results.back().variadic)
    return ~0u;
  return results.size();
}

static const SignatureSlot *slotAt(const std::vector<SignatureSlot> &slots,
                                   unsigned i) {
  if (i < slots.size())
    return &slots[i];
  if (!slots.empty() && slots.back().variadic)
    return &slots.back();
  return nullptr;
}
const SignatureSlot *OpDef::operandSlot(unsigned i) const {
  return slotAt(operands, i);
}
const SignatureSlot *OpDef::resultSlot(unsigned i) const {
  return slotAt(results, i);
}

const AttrSpec *OpDef::lookupAttr(llvm::StringRef attr) const {
  for (const AttrSpec &a : attributes)
    if (a.name == attr)
      return &a;
  return nullptr;
}

llvm::Expected<int64_t> OpDef::remapQuantAxis(const Node &n, int64_t axis,
                                              unsigned result) const {
  if (!remapAxis)
    return nodeError(n, "per-axis quantization cannot cross this op");
  const TensorType *in = n.getNumOperands() && n.getOperand(0)
                             ? n.getOperand(0)->getType()
                             : nullptr;
  const TensorType *out =
      result < n.getNumResults() ? n.getResult(result)->getType() : nullptr;
  if (!in || !out || !in->hasRank() || !out->hasRank())
    return nodeError(n, "per-axis quantization needs ranked shapes to cross "
                        "this op");
  return remapAxis(n, axis, in->getShape(), out->getShape());
}

std::optional<WeightInfo> OpDef::getWeightInfo(const Node &n) const {
  return weightInfo ? weightInfo(n) : std::nullopt;
}

//===----------------------------------------------------------------------===//
// Attributes and constants
//===----------------------------------------------------------------------===//

const Attribute *qopt::getAttrOrDefault(const Node &n, llvm::StringRef attr) {
  if (const Attribute *a = n.getAttr(attr))
    return a;
  if (const OpDef *def = n.getOpDef())
    if (const AttrSpec *spec = def->lookupAttr(attr))
      if (spec->defaultValue)
        return &*spec->defaultValue;
  return nullptr;
}

int64_t qopt::getIntAttrOr(const Node &n, llvm::StringRef attr,
                           int64_t fallback) {
  const Attribute *a = getAttrOrDefault(n, attr);
  const int64_t *v = a ? a->getIf<int64_t>() : nullptr;
  return v ? *v : fallback;
}

float qopt::getFloatAttrOr(const Node &n, llvm::StringRef attr,
                           float fallback) {
  const Attribute *a = getAttrOrDefault(n, attr);
  if (!a)
    return fallback;
  if (const float *f = a->getIf<float>())
    return *f;
  if (const int64_t *i = a->getIf<int64_t>())
    return static_cast<float>(*i);
  return fallback;
}

std::string qopt::getStringAttrOr(const Node &n, llvm::StringRef attr,
                                  llvm::StringRef fallback) {
  const Attribute *a = getAttrOrDefault(n, attr);
  const std::string *s = a ? a->getIf<std::string>() : nullptr;
  return s ? *s : fallback.str();
}

std::vector<int64_t> qopt::getIntsAttrOr(const Node &n, llvm::StringRef attr,
                                         std::vector<int64_t> fallback) {
  const Attribute *a = getAttrOrDefault(n, attr);
  if (!a || (!a->getIf<std::vector<int64_t>>() && !a->getIf<EmptyList>()))
    return fallback;
  return a->getInts();
}

const DenseElements *qopt::getConstantData(const Value *v) {
  if (!v || !v->getDefiningNode() ||
      !v->getDefiningNode()->isa("onnx.Constant"))
    return nullptr;
  const Attribute *a = v->getDefiningNode()->getAttr("value");
  if (!a || !a->isTensor())
    return nullptr;
  return a->getIf<DenseElementsRef>()->get();
}

std::optional<std::vector<int64_t>> qopt::getConstantInts(const Value *v) {
  const DenseElements *d = getConstantData(v);
  if (!d || d->getDims().size() > 1 || !isIntegerKind(d->getKind()))
    return std::nullopt;
  std::vector<int64_t> out;
  out.reserve(d->getNumElements());
  for (int64_t i = 0; i < d->getNumElements(); ++i)
    out.push_back(d->getAsInt(i));
  return out;
}

//===----------------------------------------------------------------------===//
// InferenceContext
//===----------------------------------------------------------------------===//

InferenceContext::InferenceContext(const Node &node, const OpDef &def)
    : node(node), def(def), ctx(node.getGraph()->getContext()),
      resultElements(node.getNumResults(), nullptr),
      resultShapes(node.getNumResults()) {}

unsigned InferenceContext::getNumOperands() const {
  return node.getNumOperands();
}
const Value *InferenceContext::getOperand(unsigned i) const {
  return i < node.getNumOperands() ? node.getOperand(i) : nullptr;
}
const TensorType *InferenceContext::getOperandType(unsigned i) const {
  const Value *v = getOperand(i);
  return v ? v->getType() : nullptr;
}
bool InferenceContext::hasRank(unsigned i) const {
  const TensorType *t = getOperandType(i);
  return t && t->hasRank();
}
int64_t InferenceContext::getRank(unsigned i) const {
  return getOperandType(i)->getRank();
}
llvm::ArrayRef<Dim> InferenceContext::getShape(unsigned i) const {
  return getOperandType(i)->getShape();
}
const DenseElements *InferenceContext::getConstant(unsigned i) const {
  return getConstantData(getOperand(i));
}
std::optional<std::vector<int64_t>>
InferenceContext::getConstantInts(unsigned i) const {
  return qopt::getConstantInts(getOperand(i));
}
bool InferenceContext::hasAttr(llvm::StringRef attr) const {
  return node.getAttr(attr) != nullptr;
}
int64_t InferenceContext::getInt(llvm::StringRef attr) const {
  return getIntAttrOr(node, attr, 0);
}
float InferenceContext::getFloat(llvm::StringRef attr) const {
  return getFloatAttrOr(node, attr, 0.0f);
}
std::string InferenceContext::getString(llvm::StringRef attr) const {
  return getStringAttrOr(node, attr, "");
}
std::vector<int64_t> InferenceContext::getInts(llvm::StringRef attr) const {
  return getIntsAttrOr(node, attr);
}
llvm::Error InferenceContext::error(const llvm::Twine &msg) const {
  return nodeError(node, msg);
}
void InferenceContext::setResultShapeLike(unsigned i, unsigned operand) {
  if (hasRank(operand)) {
    llvm::ArrayRef<Dim> s = getShape(operand);
    resultShapes[i] = std::vector<Dim>(s.begin(), s.end());
  }
}

std::vector<const TensorType *> InferenceContext::takeResultTypes() const {
  std::vector<const TensorType *> out;
  for (unsigned i = 0; i < resultElements.size(); ++i) {
    const Type *elem = resultElements[i]
                           ? resultElements[i]
                           : ctx.getElementType(ElementKind::Unknown);
    // Most results have the type of an operand (elementwise ops, Q/DQ
    // pairs): reuse it instead of uniquing the shape again.
    const TensorType *same = nullptr;
    for (unsigned k = 0; k < node.getNumOperands() && !same; ++k) {
      const TensorType *t = getOperandType(k);
      if (t && t->getElementType() == elem && resultShapes[i] && t->hasRank() &&
          llvm::ArrayRef<Dim>(*resultShapes[i]) == t->getShape())
        same = t;
    }
    if (same)
      out.push_back(same);
    else
      out.push_back(resultShapes[i] ? ctx.getTensorType(*resultShapes[i], elem)
                                    : ctx.getUnrankedTensorType(elem));
  }
  return out;
}
