//===- Verifier.cpp - Structural and quantization checks ------------------===//

#include "qopt/IR/Verifier.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpInfo.h"
#include "qopt/Support/FloatFormat.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace qopt;

std::string qopt::checkQuantType(const QuantType *q, const TensorType *tensor) {
  std::string msg;
  llvm::raw_string_ostream os(msg);
  if (!isQuantStorageKind(q->getStorageKind())) {
    os << "quantized storage type " << getElementKindName(q->getStorageKind())
       << " is not supported (i8, u8, i16, u16, i32)";
    return os.str();
  }
  ElementKind expressed = q->getExpressedKind();
  if (expressed != ElementKind::F32 && expressed != ElementKind::F16 &&
      expressed != ElementKind::BF16) {
    os << "quantized expressed type " << getElementKindName(expressed)
       << " is not f32, f16 or bf16 (the ONNX scale types)";
    return os.str();
  }
  if (q->getScales().empty() ||
      q->getScales().size() != q->getZeroPoints().size()) {
    os << "quantized type has " << q->getScales().size() << " scales and "
       << q->getZeroPoints().size() << " zero points";
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
  explicit GraphVerifier(const Graph &g) : graph(g) {}

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
      if (!def || !def->isa(ops::Constant) || !def->getName().empty())
        return fail("initializer_inputs",
                    "'" + name + "' is not an initializer of the graph");
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
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   where + ": " + why);
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
    if (const OpInfo *info = lookupOpInfo(n.getOp())) {
      if (n.getNumOperands() < info->minOperands ||
          n.getNumOperands() > info->maxOperands)
        return fail(where, "expects " +
                               countText(info->minOperands, info->maxOperands,
                                         "operand") +
                               ", got " + std::to_string(n.getNumOperands()));
      if (n.getNumResults() < info->minResults ||
          n.getNumResults() > info->maxResults)
        return fail(
            where, "expects " +
                       countText(info->minResults, info->maxResults, "result") +
                       ", got " + std::to_string(n.getNumResults()));
    }
    if (n.isa(ops::Quantize) || n.isa(ops::Dequantize))
      return verifyQuantizeOrDequantize(n);
    if (n.isa(ops::Requantize))
      return verifyRequantize(n);
    if (n.isa(ops::Constant))
      return verifyConstant(n);
    return llvm::Error::success();
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

  static bool shapesCompatible(const TensorType *a, const TensorType *b) {
    if (!a->hasRank() || !b->hasRank())
      return true;
    if (a->getRank() != b->getRank())
      return false;
    for (int64_t i = 0; i < a->getRank(); ++i) {
      const Dim &x = a->getShape()[i], &y = b->getShape()[i];
      if (x.isStatic() && y.isStatic() && x.size != y.size)
        return false;
    }
    return true;
  }

  llvm::Error verifyQuantizeOrDequantize(const Node &n) {
    std::string where = n.describe();
    bool isQ = n.isa(ops::Quantize);
    const Value *in = n.getOperand(0);
    if (!in)
      return fail(where, "missing input");
    const TensorType *floatT = isQ ? in->getType() : n.getResult()->getType();
    const TensorType *quantT = isQ ? n.getResult()->getType() : in->getType();
    const QuantType *q = quantT->getQuantType();
    if (!q)
      return fail(where, std::string(isQ ? "result" : "input") +
                             " must have a quantized type, got " +
                             typeToString(quantT));
    ElementKind fk = floatT->getStorageKind();
    if (floatT->isQuantized() ||
        (fk != ElementKind::Unknown && !isFloatKind(fk)))
      return fail(where, std::string(isQ ? "input" : "result") +
                             " must be a float tensor, got " +
                             typeToString(floatT));
    if (fk != ElementKind::Unknown && fk != q->getExpressedKind())
      return fail(where, "float type " + typeToString(floatT) +
                             " differs from the expressed type of " +
                             typeToString(q));
    if (!shapesCompatible(floatT, quantT))
      return fail(where, "input and result shapes differ: " +
                             typeToString(in->getType()) + " vs " +
                             typeToString(n.getResult()->getType()));
    // Optional parameter operands must agree with the type.
    if (n.getNumOperands() >= 2) {
      const Value *scale = n.getOperand(1);
      const Value *zp = n.getNumOperands() >= 3 ? n.getOperand(2) : nullptr;
      const DenseElements *sd = constantData(scale);
      if (!sd)
        return fail(where, "scale operand must be an onnx.Constant");
      if (static_cast<size_t>(sd->getNumElements()) != q->getNumChannels())
        return fail(where, "scale operand has " +
                               std::to_string(sd->getNumElements()) +
                               " elements but the type has " +
                               std::to_string(q->getNumChannels()) + " scales");
      for (size_t i = 0; i < q->getNumChannels(); ++i)
        if (static_cast<float>(sd->getAsDouble(i)) != q->getScales()[i])
          return fail(where, "scale operand value " +
                                 formatDouble(sd->getAsDouble(i)) +
                                 " differs from the type's scale " +
                                 formatFloat(q->getScales()[i]));
      if (zp) {
        const DenseElements *zd = constantData(zp);
        if (!zd)
          return fail(where, "zero-point operand must be an onnx.Constant");
        if (static_cast<size_t>(zd->getNumElements()) != q->getNumChannels())
          return fail(where, "zero-point operand has " +
                                 std::to_string(zd->getNumElements()) +
                                 " elements but the type has " +
                                 std::to_string(q->getNumChannels()));
        if (zd->getKind() != q->getStorageKind())
          return fail(where, "zero-point operand type " +
                                 getElementKindName(zd->getKind()).str() +
                                 " differs from the storage type " +
                                 getElementKindName(q->getStorageKind()).str());
        for (size_t i = 0; i < q->getNumChannels(); ++i)
          if (zd->getAsInt(i) != q->getZeroPoints()[i])
            return fail(where, "zero-point operand value " +
                                   std::to_string(zd->getAsInt(i)) +
                                   " differs from the type's zero point " +
                                   std::to_string(q->getZeroPoints()[i]));
      }
    }
    return llvm::Error::success();
  }

  static const DenseElements *constantData(const Value *v) {
    if (!v || !v->getDefiningNode() ||
        !v->getDefiningNode()->isa(ops::Constant))
      return nullptr;
    const Attribute *a = v->getDefiningNode()->getAttr("value");
    if (!a || !a->isTensor())
      return nullptr;
    const DenseElements *d = a->getIf<DenseElementsRef>()->get();
    return d->getKind() == ElementKind::String ? nullptr : d;
  }

  llvm::Error verifyRequantize(const Node &n) {
    if (!n.getOperand(0))
      return fail(n.describe(), "missing input");
    const TensorType *in = n.getOperand(0)->getType();
    const TensorType *out = n.getResult()->getType();
    if (!in->isQuantized() || !out->isQuantized())
      return fail(n.describe(), "input and result must be quantized, got " +
                                    typeToString(in) + " -> " +
                                    typeToString(out));
    if (!shapesCompatible(in, out))
      return fail(n.describe(), "input and result shapes differ");
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
  llvm::DenseSet<const Value *> defined;
};

} // namespace

llvm::Error qopt::verifyGraph(const Graph &graph) {
  return GraphVerifier(graph).run();
}

llvm::Error qopt::verifyModel(const Model &model) {
  return verifyGraph(model.getGraph());
}
