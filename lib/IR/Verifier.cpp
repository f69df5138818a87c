//===- Verifier.cpp - Structural and quantization checks ------------------===//

#include "qopt/IR/Verifier.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/FloatFormat.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace qopt;

std::string qopt::checkQuantType(const QuantType *q, const TensorType *tensor) {
  std::string msg;
  llvm::raw_string_ostream os(msg);
  if (!isAnyQuantStorageKind(q->getStorageKind())) {
    os << "quantized storage type " << getElementKindName(q->getStorageKind())
       << " is not supported (i4, u4, i8, u8, i16, u16, i32, the float8 "
          "kinds, f4E2M1)";
    return os.str();
  }
  ElementKind expressed = q->getExpressedKind();
  if (expressed != ElementKind::F32 && expressed != ElementKind::F16 &&
      expressed != ElementKind::BF16) {
    os << "quantized expressed type " << getElementKindName(expressed)
       << " is not f32, f16 or bf16 (the ONNX scale types)";
    return os.str();
  }
  if (!q->isPerAxis() && q->getScales().size() != 1) {
    os << "a per-tensor quantized type has one scale, this one "
       << q->getScales().size();
    return os.str();
  }
  if (q->getScales().empty() ||
      q->getScales().size() != q->getZeroPoints().size()) {
    os << "quantized type has " << q->getScales().size() << " scales and "
       << q->getZeroPoints().size() << " zero points";
    return os.str();
  }
  if (q->hasQuantizedScales() && expressed != ElementKind::F32) {
    // ONNX would compute the scales in the expressed kind; the type's
    // products are float32.
    os << "two-level scales need f32 as the expressed type, got "
       << getElementKindName(expressed);
    return os.str();
  }
  auto range = getIntegerRange(q->getStorageKind());
  for (size_t i = 0; i < q->getNumChannels(); ++i) {
    float s = q->getScales()[i];
    if (!std::isfinite(s) || !(s > 0)) {
      os << "scale must be finite and > 0, got "
         << (std::isnan(s) ? std::string("nan") : formatFloat(s));
      if (q->isPerAxis())
        os << " (channel " << i << ")";
      return os.str();
    }
    int64_t zp = q->getZeroPoints()[i];
    if (q->hasMinifloatStorage()) {
      // The type holds float8/float4 grids with a zero offset only (a
      // model's other zero points stay onnx.QuantizeLinear).
      if (zp != 0) {
        os << "zero point of a " << getElementKindName(q->getStorageKind())
           << " quantized type must be 0, got " << zp;
        return os.str();
      }
      continue;
    }
    if (q->getStorageKind() == ElementKind::I32 && zp != 0) {
      os << "zero point of an i32 quantized type must be 0, got " << zp;
      return os.str();
    }
    if (zp < range.first || zp > range.second) {
      os << "zero point " << zp << " is outside the range of "
         << getElementKindName(q->getStorageKind()) << " [" << range.first
         << ", " << range.second << "]";
      return os.str();
    }
  }
  if (!q->isPerAxis() || !tensor || !tensor->hasRank())
    return {};
  int64_t rank = tensor->getRank();
  if (q->getAxis() < 0 || q->getAxis() >= rank) {
    os << "quantization axis " << q->getAxis() << " is out of range for rank "
       << rank;
    return os.str();
  }
  if (q->isBlocked()) {
    // One (scale, zero point) per block: the shape's element count with
    // the axis's size divided by the block size, rounded up.
    auto dims = tensor->getStaticDims();
    if (!dims)
      return {};
    int64_t want = 1;
    for (int64_t x : quant::blockedScaleDims(*dims, q))
      want *= x;
    if (want != static_cast<int64_t>(q->getNumChannels()))
      os << "block-wise quantization has " << q->getNumChannels()
         << " scales but blocks of " << q->getBlockSize() << " along axis "
         << q->getAxis() << " of shape " << quant::shapeString(*dims)
         << " need " << want;
    return os.str();
  }
  const Dim &d = tensor->getShape()[q->getAxis()];
  if (d.isStatic() && d.size != static_cast<int64_t>(q->getNumChannels())) {
    os << "per-axis quantization has " << q->getNumChannels()
       << " scales but axis " << q->getAxis() << " has size " << d.size;
    return os.str();
  }
  return {};
}

namespace {

class GraphVerifier {
public:
  GraphVerifier(const Graph &g, const VerifyOptions &options)
      : graph(g), options(options) {}

  llvm::Error run() {
    // Names are checked without copying: the graph is not edited meanwhile.
    llvm::DenseSet<llvm::StringRef> names;
    names.reserve(graph.getNumNodes() + graph.getNumInputs());
    auto defineName = [&](const Value *v) -> bool {
      return v->getName().empty() || v->isAbsent() ||
             names.insert(v->getName()).second;
    };
    auto duplicate = [](const Value *v) {
      return "value name '" + v->getName().str() +
             "' is defined more than once";
    };
    defined.reserve(graph.getNumNodes() * 2 + graph.getNumInputs());
    for (const Value *in : graph.getInputs()) {
      std::string where = "graph input '" + in->getName().str() + "'";
      if (!defineName(in))
        return fail(where, duplicate(in));
      if (auto err = checkValueType(in, nullptr))
        return err;
      defined.insert(in);
    }
    for (const Node &n : graph.getNodes()) {
      if (auto err = verifyNode(n))
        return err;
      for (unsigned i = 0, e = n.getNumResults(); i < e; ++i) {
        const Value *r = n.getResult(i);
        if (!defineName(r))
          return fail(n.describe(), duplicate(r));
        if (auto err = checkValueType(r, &n))
          return err;
        defined.insert(r);
      }
    }
    for (const std::string &name : graph.getInitializerInputs()) {
      const Value *v = graph.lookupValue(name);
      const Node *def = v ? v->getDefiningNode() : nullptr;
      if (!def || !def->isa("onnx.Constant") || !def->getName().empty())
        return fail("initializer_inputs",
                    "'" + name + "' is not an initializer of the graph");
    }
    const std::vector<int64_t> &positions =
        graph.getInitializerInputPositions();
    if (!positions.empty()) {
      size_t total = graph.getNumInputs() + graph.getInitializerInputs().size();
      if (positions.size() != graph.getInitializerInputs().size())
        return fail("initializer_input_positions",
                    std::to_string(positions.size()) + " positions for " +
                        std::to_string(graph.getInitializerInputs().size()) +
                        " initializer inputs");
      std::vector<bool> taken(total, false);
      for (int64_t p : positions) {
        if (p < 0 || static_cast<size_t>(p) >= total || taken[p])
          return fail("initializer_input_positions",
                      "position " + std::to_string(p) +
                          " is out of range or repeated (" +
                          std::to_string(total) + " inputs in all)");
        taken[p] = true;
      }
    }
    for (unsigned i = 0; i < graph.getNumOutputs(); ++i) {
      const Value *v = graph.getOutput(i);
      if (!v || !defined.count(v))
        return fail("graph output #" + std::to_string(i),
                    "is not produced by any node or input");
      if (v->isAbsent())
        return fail("graph output #" + std::to_string(i),
                    "refers to an absent optional result");
    }
    return llvm::Error::success();
  }

private:
  static llvm::Error fail(const std::string &where, const std::string &why) {
    return makeError(where + ": " + why);
  }

  /// `producer` null = graph input. Descriptions are built only on failure.
  llvm::Error checkValueType(const Value *v, const Node *producer) {
    auto where = [&]() {
      return producer ? producer->describe()
                      : "graph input '" + v->getName().str() + "'";
    };
    const TensorType *t = v->getType();
    if (!t)
      return fail(where(), "value '" + v->getName().str() + "' has no type");
    if (const QuantType *q = t->getQuantType()) {
      std::string why = checkQuantType(q, t);
      if (!why.empty())
        return fail(where(), why);
    }
    return llvm::Error::success();
  }

  llvm::Error verifyNode(const Node &n) {
    struct LazyWhere {
      const Node &n;
      operator std::string() const { return n.describe(); }
      std::string operator+(const std::string &s) const {
        return n.describe() + s;
      }
    } where{n};
    for (unsigned i = 0; i < n.getNumOperands(); ++i) {
      const Value *v = n.getOperand(i);
      if (!v)
        continue;
      if (v->getGraph() != &graph)
        return fail(where, "operand #" + std::to_string(i) +
                               " belongs to another graph");
      if (!defined.count(v))
        return fail(where, "operand #" + std::to_string(i) + " '" +
                               v->getName().str() +
                               "' is used before it is defined (nodes out "
                               "of topological order, or a cycle)");
      if (v->isAbsent())
        return fail(where, "operand #" + std::to_string(i) +
                               " is an absent optional result");
      if (!v->hasUseAt(&n, i))
        return fail(where, "use list of '" + v->getName().str() +
                               "' is missing operand #" + std::to_string(i));
    }
    for (unsigned i = 0; i < n.getCaptures().size(); ++i) {
      const Value *v = n.getCaptures()[i];
      if (!defined.count(v))
        return fail(where, "subgraph reads '" + n.getCaptureNames()[i] +
                               "' before it is defined");
      if (v->getName() != n.getCaptureNames()[i])
        return fail(where, "subgraph reads '" + n.getCaptureNames()[i] +
                               "', but that value is now named '" +
                               v->getName().str() + "'");
    }
    for (const Value *r : n.getResults())
      for (const Use &u : r->getUses())
        if (u.isCapture()
                ? u.index - Use::kCaptureBase >= u.user->getCaptures().size() ||
                      u.user->getCaptures()[u.index - Use::kCaptureBase] != r
                : !u.isGraphOutput() && (u.index >= u.user->getNumOperands() ||
                                         u.user->getOperand(u.index) != r))
          return fail(where, "use list of '" + r->getName().str() +
                                 "' names an operand that is not it");
    const OpDef *def = n.getOpDef();
    if (!def) {
      if (n.getDialect() == "q")
        return fail(where, "unknown op '" + n.getOp().str() +
                               "' in the closed q dialect");
      return llvm::Error::success(); // opaque: anything goes
    }
    return verifyKnownOp(n, *def);
  }

  /// "1 operand", "2 to 3 operands", "at least 1 operand".
  static std::string countText(unsigned lo, unsigned hi, const char *noun) {
    std::string n = noun;
    if (lo == hi)
      return std::to_string(lo) + " " + n + (lo == 1 ? "" : "s");
    if (hi == ~0u)
      return "at least " + std::to_string(lo) + " " + n + (lo == 1 ? "" : "s");
    return std::to_string(lo) + " to " + std::to_string(hi) + " " + n + "s";
  }

  /// Counts, attributes, type constraints, then the inferred result types.
  llvm::Error verifyKnownOp(const Node &n, const OpDef &def) {
    unsigned lo = def.getMinOperands(), hi = def.getMaxOperands();
    if (n.getNumOperands() < lo || n.getNumOperands() > hi)
      return fail(n.describe(), "expects " + countText(lo, hi, "operand") +
                                    ", got " +
                                    std::to_string(n.getNumOperands()));
    lo = def.getMinResults();
    hi = def.getMaxResults();
    if (n.getNumResults() < lo || n.getNumResults() > hi)
      return fail(n.describe(), "expects " + countText(lo, hi, "result") +
                                    ", got " +
                                    std::to_string(n.getNumResults()));
    for (unsigned i = 0; i < n.getNumOperands(); ++i)
      if (!n.getOperand(i) && !def.operandSlot(i)->optional)
        return fail(n.describe(), "required operand '" +
                                      def.operandSlot(i)->name +
                                      "' is missing");
    if (auto err = verifyAttributes(n, def))
      return err;
    if (n.isa(ops::Constant))
      if (auto err = verifyConstant(n))
        return err;
    if (auto err = checkTypeConstraints(n, def))
      return err;
    if (def.verify)
      if (auto err = def.verify(n))
        return err;
    if (options.typesAsInferred && options.typesAsInferred->count(&n))
      return llvm::Error::success();
    auto inferred = inferResultTypes(n);
    if (!inferred)
      return inferred.takeError();
    bool keepsQuant =
        def.hasTrait(OpTrait::DataMovement) || def.hasTrait(OpTrait::Monotonic);
    for (unsigned i = 0; i < n.getNumResults(); ++i) {
      const Value *r = n.getResult(i);
      if (r->isAbsent())
        continue;
      const TensorType *declared = r->getType(), *expected = (*inferred)[i];
      if (!meetTypes(declared, expected))
        return fail(n.describe(), "result '" + r->getName().str() +
                                      "' has type " + typeToString(declared) +
                                      ", but its operands give " +
                                      typeToString(expected));
      // Per-axis parameters the op cannot carry: the declared ones are
      // made up.
      const Value *in = n.getNumOperands() ? n.getOperand(0) : nullptr;
      const QuantType *qin = in ? in->getType()->getQuantType() : nullptr;
      if (keepsQuant && declared->isQuantized() && !expected->isQuantized() &&
          qin && qin->isPerAxis()) {
        auto axis = def.remapQuantAxis(n, qin->getAxis(), i);
        if (!axis)
          return axis.takeError();
      }
      if (keepsQuant && expected->isQuantized() && !declared->isQuantized())
        return fail(n.describe(), "result '" + r->getName().str() +
                                      "' drops the quantized "
                                      "type " +
                                      typeToString(expected->getQuantType()) +
                                      " of its input; data movement keeps it");
    }
    return llvm::Error::success();
  }

  /// Element kinds against the signature's sets; slots sharing a type
  /// variable share a storage kind, and for data movement one quant type.
  llvm::Error checkTypeConstraints(const Node &n, const OpDef &def) {
    /// Operand or result `index`, described only when an error needs it.
    struct Slot {
      bool isResult;
      unsigned index;
    };
    auto describe = [&](Slot s) {
      if (s.isResult)
        return "result " + std::to_string(s.index) + " '" +
               n.getResult(s.index)->getName().str() + "'";
      return "operand " + std::to_string(s.index) + " '" +
             def.operandSlot(s.index)->name + "'";
    };
    llvm::SmallVector<std::tuple<llvm::StringRef, const Type *, Slot>, 4> bound;
    // Data movement, and ops that select among several inputs (Max, Min),
    // pass stored values through: their inputs must share one grid.
    bool dataMovement =
        def.hasTrait(OpTrait::DataMovement) ||
        (def.hasTrait(OpTrait::Monotonic) && !def.operands.empty() &&
         def.operands.front().variadic);
    auto check = [&](const Value *v, const SignatureSlot *slot,
                     Slot self) -> llvm::Error {
      const TensorType *t = v->getType();
      ElementKind k = t->getStorageKind();
      if (k == ElementKind::Unknown)
        return llvm::Error::success();
      if (!(typeSetOf(k) & slot->allowed))
        return fail(n.describe(), describe(self) + " has element type " +
                                      getElementKindName(k).str() +
                                      ", expected " +
                                      describeTypeSet(slot->allowed));
      if (slot->typeVar.empty())
        return llvm::Error::success();
      for (auto &[var, elem, other] : bound) {
        if (var != slot->typeVar)
          continue;
        const QuantType *qa = llvm::dyn_cast<QuantType>(elem);
        ElementKind bk = qa ? qa->getStorageKind()
                            : llvm::cast<ElementType>(elem)->getKind();
        if (bk != k)
          return fail(n.describe(), describe(self) + " has element type " +
                                        getElementKindName(k).str() + " but " +
                                        describe(other) + " has " +
                                        getElementKindName(bk).str() +
                                        " (both are " + slot->typeVar + ")");
        const QuantType *qb = t->getQuantType();
        if (dataMovement && !self.isResult && (qa || qb) && qa != qb)
          return fail(n.describe(),
                      describe(self) + " has type " +
                          typeToString(t->getElementType()) + " but " +
                          describe(other) + " has " + typeToString(elem) +
                          ": the inputs of " + n.getOpType().str() +
                          " must share one quantized type");
        return llvm::Error::success();
      }
      bound.push_back({slot->typeVar, t->getElementType(), self});
      return llvm::Error::success();
    };
    for (unsigned i = 0; i < n.getNumOperands(); ++i)
      if (const Value *v = n.getOperand(i))
        if (auto err = check(v, def.operandSlot(i), {false, i}))
          return err;
    for (unsigned i = 0; i < n.getNumResults(); ++i)
      if (!n.getResult(i)->isAbsent())
        if (auto err = check(n.getResult(i), def.resultSlot(i), {true, i}))
          return err;
    return llvm::Error::success();
  }

  llvm::Error verifyConstant(const Node &n) {
    const Attribute *a = n.getAttr("value");
    if (!a)
      return llvm::Error::success(); // value_float, value_ints, ... forms
    if (!a->isTensor())
      return fail(n.describe(), "'value' must be a tensor");
    const DenseElements &d = **a->getIf<DenseElementsRef>();
    const TensorType *t = n.getResult()->getType();
    if (d.getKind() == ElementKind::Unknown)
      return fail(n.describe(), "constant data has no element type");
    if (d.getKind() == ElementKind::String) {
      if (static_cast<int64_t>(d.getStrings().size()) != d.getNumElements())
        return fail(n.describe(), "string constant has " +
                                      std::to_string(d.getStrings().size()) +
                                      " strings for " +
                                      std::to_string(d.getNumElements()) +
                                      " elements");
    } else {
      auto size = DenseElements::byteSizeFor(d.getKind(), d.getNumElements());
      if (!size || *size != d.getRawBytes().size())
        return fail(n.describe(), "constant data has " +
                                      std::to_string(d.getRawBytes().size()) +
                                      " bytes, expected " +
                                      (size ? std::to_string(*size)
                                            : std::string("an overflowing "
                                                          "size")));
    }
    if (!t->hasRank())
      return fail(n.describe(), "constant result type " + typeToString(t) +
                                    " must be ranked");
    if (t->getStorageKind() != d.getKind())
      return fail(n.describe(),
                  "constant data is " + getElementKindName(d.getKind()).str() +
                      " but the result type is " + typeToString(t));
    if (t->hasRank()) {
      bool same = t->getRank() == static_cast<int64_t>(d.getDims().size());
      for (int64_t i = 0; same && i < t->getRank(); ++i)
        same = t->getShape()[i].isStatic() &&
               t->getShape()[i].size == d.getDims()[i];
      if (!same)
        return fail(n.describe(), "constant shape does not match the result "
                                  "type " +
                                      typeToString(t));
    }
    return llvm::Error::success();
  }

  const Graph &graph;
  const VerifyOptions &options;
  llvm::DenseSet<const Value *> defined;
};

} // namespace

llvm::Error qopt::verifyGraph(const Graph &graph,
                              const VerifyOptions &options) {
  return GraphVerifier(graph, options).run();
}

llvm::Error qopt::verifyModel(const Model &model,
                              const VerifyOptions &options) {
  return verifyGraph(model.getGraph(), options);
}
