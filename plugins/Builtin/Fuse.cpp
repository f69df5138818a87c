//===- Fuse.cpp - A backend's fusion units as q.* nodes (fuse<backend>) ---===//
//
// Exact: every unit of fusion-plan<backend> becomes one q.* node (Ops.def,
// "Fused units") that means the fake-quant chain it replaces, and data
// movement between units runs on the stored integers:
//
//   %xd = q.dequantize(%x)
//   %wd = q.dequantize(%w8)
//   %bd = q.dequantize(%b32)
//   %c  = onnx.Conv(%xd, %wd, %bd)        %y = q.conv(%x, %w8, %b32, %r)
//   %rd = q.dequantize(%r)           =>        {activation = "relu"}
//   %s  = onnx.Add(%c, %rd)                    : tensor<1x64x56x56x!q.i8<..>>
//   %a  = onnx.Relu(%s)
//   %y  = q.quantize(%a)
//
//   %d = q.dequantize(%y)                 %t = onnx.Reshape(%y, %shape)
//   %t = onnx.Reshape(%d, %shape)    =>        : tensor<..x!q.i8<..>>
//   %q = q.quantize(%t)                   (users of %q read %t)
//
// A unit whose Q sits after data movement it commutes with (Reshape,
// Transpose, MaxPool, ...) writes int8 on that Q's grid, and the data
// movement becomes such a copy of its output.
//
// A unit the q.* ops cannot express (two activations in a row, a
// BatchNormalization or a Resize in TensorRT's units, a constant added
// after a Conv, an i32 bias off the product grid) stays as it was, named
// in a note of the cost report. Nothing is removed that other nodes still
// read: a unit output quantized onto a second grid keeps its float chain.
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/Fusion/FusionPlan.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/QdqUtils.h"
#include "qopt/Support/Error.h"

#include "llvm/ADT/DenseSet.h"

#include <cmath>

using namespace qopt;

static constexpr const char *kFusePass = "fuse";

llvm::Expected<FusePass> FusePass::parse(llvm::StringRef params) {
  FusePass p;
  p.backend = params.trim().str();
  if (!lookupBackendRules(p.backend))
    return makeError(
        "'fuse' needs a backend: fuse<trt>, fuse<ort> or fuse<cpu>" +
        (p.backend.empty() ? std::string() : ", got '" + p.backend + "'"));
  return p;
}

void FusePass::printPipeline(llvm::raw_ostream &os) const {
  os << kFusePass << "<" << backend << ">";
}

namespace {

bool sameGrid(const QuantType *a, const QuantType *b) {
  return a == b || (a && b && a->getStorageKind() == b->getStorageKind() &&
                    a->hasSameParams(b));
}

/// The epilogue of a unit in q.* terms.
struct Epilogue {
  std::string activation = "none";
  std::vector<float> params;
  Value *residual = nullptr;
  bool residualAfterActivation = false;
  Value *bias = nullptr; ///< q.matmul: a constant added after the product
};

/// The activation `n` computes, or an empty name.
std::string activationOf(const Node &n, std::vector<float> &params) {
  auto attr = [&](llvm::StringRef name, float dflt) {
    if (const Attribute *a = n.getAttr(name))
      if (auto *f = a->getIf<float>())
        return *f;
    return dflt;
  };
  if (n.isa(ops::Relu))
    return "relu";
  if (n.isa(ops::Sigmoid))
    return "sigmoid";
  if (n.isa(ops::Tanh))
    return "tanh";
  if (n.isa(ops::HardSwish))
    return "hard_swish";
  if (n.isa(ops::LeakyRelu)) {
    params = {attr("alpha", 0.01f)};
    return "leaky_relu";
  }
  if (n.isa(ops::HardSigmoid)) {
    params = {attr("alpha", 0.2f), attr("beta", 0.5f)};
    return "hard_sigmoid";
  }
  if (n.isa(ops::Clip)) {
    // Clip-11 bounds are scalar constant operands; absent ones are open.
    float bounds[2] = {-INFINITY, INFINITY};
    for (unsigned i = 1; i < 3; ++i) {
      if (i >= n.getNumOperands() || !n.getOperand(i))
        continue;
      const DenseElements *d = getConstantData(n.getOperand(i));
      if (!d || d->getNumElements() != 1 ||
          !isFloatKind(n.getOperand(i)->getType()->getStorageKind()))
        return {};
      bounds[i - 1] = static_cast<float>(d->getAsDouble(0));
    }
    if (n.getAttr("min") || n.getAttr("max"))
      return {}; // Clip-6 attributes (the importer rewrites them)
    params = {bounds[0], bounds[1]};
    return "clip";
  }
  return {};
}

class Fuser {
public:
  Fuser(Graph &g, CostReport &report) : graph(g), rewriter(g), report(report) {}

  bool run(const FusionPlan &plan);

private:
  Graph &graph;
  PatternRewriter rewriter;
  CostReport &report;
  /// Float values whose numbers a new int8 node holds on its grid.
  llvm::DenseMap<const Value *, Value *> storedOf;
  /// Replacements applied once every unit is built (units read the Q
  /// results of the units before them until then).
  std::vector<std::pair<Node *, Value *>> replacements;
  std::vector<Node *> maybeDead;

  /// The stored integers behind `v`: v itself when quantized, a DQ's
  /// input, or what a new int8 copy made of it; else null.
  Value *storedFor(Value *v) const;
  bool fuseCopy(const FusionUnit &unit, std::string &why);
  bool fuseUnit(const FusionUnit &unit, std::string &why);
  bool readEpilogue(const FusionUnit &unit, size_t from, Epilogue &e,
                    std::string &why);
  /// Every Q of `v` onto `grid` is to read `stored` instead.
  void replaceQuantizes(Value *v, const QuantType *grid, Value *stored);
  void eraseDead();
};

Value *Fuser::storedFor(Value *v) const {
  if (!v)
    return nullptr;
  if (getStoredQuantType(v))
    return v;
  auto it = storedOf.find(v);
  if (it != storedOf.end())
    return it->second;
  if (Node *dq = getProducer(v, ops::QDequantize))
    return dq->getOperand(0);
  return nullptr;
}

void Fuser::replaceQuantizes(Value *v, const QuantType *grid, Value *stored) {
  for (auto [user, index] : getUsers(v))
    if (user->isa(ops::QQuantize) &&
        sameGrid(getStoredQuantType(user->getResult()), grid))
      replacements.push_back({user, stored});
}

bool Fuser::fuseCopy(const FusionUnit &unit, std::string &why) {
  Node &n = *unit.getAnchor();
  llvm::SmallVector<unsigned, 4> data = getDataOperands(n);
  if (llvm::all_of(data, [&](unsigned i) {
        return getStoredQuantType(n.getOperand(i));
      }))
    return true; // already on int8
  const QuantType *outGrid =
      unit.outputs.empty() ? nullptr : unit.outputs[0].grid;
  bool variadic = data.size() > 1 || (!data.empty() && data[0] != 0);
  std::vector<Value *> operands(n.getOperands().begin(), n.getOperands().end());
  rewriter.setInsertionPoint(&n);
  rewriter.setRoot(&n);
  for (unsigned i : data) {
    Value *s = storedFor(n.getOperand(i));
    if (!s) {
      why = "input " + std::to_string(i) + " is not stored as int8";
      return false;
    }
    // A Concat (or Max/Min) input on another grid is requantized onto the
    // output's, as the Q after the float op did.
    const QuantType *g = getStoredQuantType(s);
    if (variadic && outGrid && !sameGrid(g, outGrid))
      s = rewriter
              .create(ops::QRequantize, {s},
                      {{withElement(s->getType(), outGrid), ""}})
              ->getResult();
    operands[i] = s;
  }
  // Pad's constant value as a stored integer on the data's grid.
  if (!data.empty() && !variadic &&
      !integerOperands(rewriter, n, operands,
                       getStoredQuantType(operands[data.front()]))) {
    why = "its constant value cannot be stored on the data's grid";
    return false;
  }
  std::vector<ResultSpec> results;
  for (unsigned r = 0; r < n.getNumResults(); ++r) {
    const Value *res = n.getResult(r);
    const QuantType *grid = nullptr;
    if (isDataResult(n, r))
      for (const FusionUnit::Port &p : unit.outputs)
        if (p.value == res)
          grid = p.grid;
    ResultSpec spec{grid ? withElement(res->getType(), grid) : res->getType(),
                    "", res->isAbsent()};
    results.push_back(spec);
  }
  Node *copy = rewriter.create(n.getOp(), operands, results,
                               std::vector<NamedAttribute>(n.getAttrs()),
                               n.getName().str());
  for (unsigned r = 0; r < n.getNumResults(); ++r) {
    Value *stored = copy->getResult(r);
    const QuantType *grid = getStoredQuantType(stored);
    if (!grid)
      continue;
    storedOf[n.getResult(r)] = stored;
    // A Q onto the copy's grid reads the copy; a Q onto another grid is
    // Q(DQ(stored)) moved through the copy: a q.requantize of it.
    for (auto [q, index] : getUsers(n.getResult(r))) {
      if (!q->isa(ops::QQuantize) || isMinifloatQdq(*q))
        continue;
      const QuantType *qGrid = getStoredQuantType(q->getResult());
      Value *with = stored;
      if (!sameGrid(qGrid, grid)) {
        rewriter.setInsertionPoint(q);
        with = rewriter
                   .create(ops::QRequantize, {stored},
                           {{q->getResult()->getType(), ""}})
                   ->getResult();
      }
      replacements.push_back({q, with});
    }
  }
  maybeDead.push_back(&n);
  return true;
}

bool Fuser::readEpilogue(const FusionUnit &unit, size_t from, Epilogue &e,
                         std::string &why) {
  const Node &anchor = *unit.getAnchor();
  Value *cur = unit.members[from - 1]->getResult(0);
  for (size_t i = from; i < unit.members.size(); ++i) {
    Node &m = *unit.members[i];
    auto sameShape = [&] {
      return m.getResult()->getType()->getShape() == cur->getType()->getShape();
    };
    if (m.isa(ops::Sigmoid) && i + 1 < unit.members.size() &&
        unit.members[i + 1]->isa(ops::Mul)) {
      if (e.activation != "none") {
        why = "two activations in a row";
        return false;
      }
      e.activation = "silu";
      cur = unit.members[++i]->getResult();
      continue;
    }
    std::vector<float> params;
    std::string act = activationOf(m, params);
    if (!act.empty()) {
      if (e.activation != "none") {
        why = "two activations in a row";
        return false;
      }
      e.activation = act;
      e.params = params;
      cur = m.getResult();
      continue;
    }
    if (m.isa(ops::Add) && m.getNumOperands() == 2) {
      Value *other = m.getOperand(m.getOperand(0) == cur ? 1 : 0);
      if (!sameShape()) {
        why = "the Add broadcasts beyond the anchor's shape";
        return false;
      }
      Value *stored = storedFor(other);
      bool constant =
          isConstantValue(other) || (stored && isConstantValue(stored));
      if (constant && anchor.isa(ops::MatMul) && !e.bias && !e.residual &&
          e.activation == "none") {
        e.bias = stored ? stored : other;
        cur = m.getResult();
        continue;
      }
      if (!stored || constant || e.residual) {
        why = "an Add after " + anchor.getOpType().str() +
              " that is neither a MatMul bias nor an int8 residual";
        return false;
      }
      e.residual = stored;
      e.residualAfterActivation = e.activation != "none";
      cur = m.getResult();
      continue;
    }
    why = m.getOpType().str() + " in the epilogue has no q.* form";
    return false;
  }
  return true;
}

bool Fuser::fuseUnit(const FusionUnit &unit, std::string &why) {
  Node &anchor = *unit.getAnchor();
  std::string op = "q." + unit.kind;
  if (unit.kind == "silu")
    op = ops::QActivation;
  if (!lookupOpDef(op)) {
    why = "no q.* op for a " + unit.kind + " unit";
    return false;
  }
  std::vector<Value *> operands;
  std::vector<NamedAttribute> attrs;
  Epilogue e;
  size_t epilogueStart = 1;
  bool weighted = op == ops::QConv || op == ops::QConvTranspose ||
                  op == ops::QGemm || op == ops::QMatmul;
  auto readStored = [&](unsigned i) {
    Value *s = storedFor(anchor.getOperand(i));
    if (!s)
      why = "input " + std::to_string(i) + " is not stored as int8";
    operands.push_back(s);
    return s != nullptr;
  };
  if (weighted) {
    if (!readStored(0) || !readStored(1))
      return false;
    attrs.assign(anchor.getAttrs().begin(), anchor.getAttrs().end());
    Value *bias = anchor.getNumOperands() > 2 ? anchor.getOperand(2) : nullptr;
    if (bias) {
      Value *stored = storedFor(bias);
      if (stored && stored->getType()->getStorageKind() == ElementKind::I32) {
        why = quant::checkBiasGrid(getStoredQuantType(stored),
                                   getStoredQuantType(operands[0]),
                                   getStoredQuantType(operands[1]));
        if (!why.empty())
          return false;
        bias = stored;
      } else if (stored) {
        why = "the bias is stored as " +
              getElementKindName(stored->getType()->getStorageKind()).str() +
              ", not i32";
        return false;
      }
    }
    operands.push_back(bias);
  } else if (op == ops::QActivation) {
    if (!readStored(0))
      return false;
    std::vector<float> params;
    std::string act =
        unit.kind == "silu" ? "silu" : activationOf(anchor, params);
    if (act.empty()) {
      why = anchor.getOpType().str() + " is not a q.activation";
      return false;
    }
    e.activation = act;
    e.params = params;
    epilogueStart = unit.kind == "silu" ? 2 : 1;
  } else {
    for (unsigned i = 0; i < anchor.getNumOperands(); ++i)
      if (!readStored(i))
        return false;
    // A q.pool already (fused before) keeps its mode.
    if (op == ops::QPool && !anchor.getAttr("mode"))
      attrs.push_back(
          {"mode", Attribute(std::string(anchor.isa(ops::GlobalAveragePool)
                                             ? "global_average"
                                             : "average"))});
    for (const NamedAttribute &a : anchor.getAttrs())
      attrs.push_back(a);
  }
  if (!readEpilogue(unit, epilogueStart, e, why))
    return false;
  if ((e.residual || e.bias) && !weighted) {
    why = "an Add in the epilogue of a " + unit.kind + " unit";
    return false;
  }
  if (e.bias) {
    if (const QuantType *b = getStoredQuantType(e.bias)) {
      why = quant::checkBiasGrid(b, getStoredQuantType(operands[0]),
                                 getStoredQuantType(operands[1]));
      if (!why.empty())
        return false;
    }
    operands[2] = e.bias;
  }
  if (weighted)
    operands.push_back(e.residual);
  while (!operands.empty() && !operands.back())
    operands.pop_back();
  if (lookupOpDef(op)->lookupAttr("activation")) {
    if (e.activation != "none")
      attrs.push_back({"activation", Attribute(e.activation)});
    if (!e.params.empty())
      attrs.push_back({"activation_params", Attribute(e.params)});
  } else if (e.activation != "none") {
    why = "an activation after " + anchor.getOpType().str();
    return false;
  }
  if (e.residualAfterActivation && e.residual)
    attrs.push_back({"residual_after_activation", Attribute(int64_t(1))});

  Node *last = unit.members.back();
  const QuantType *outGrid =
      unit.outputs.empty() ? nullptr : unit.outputs[0].grid;
  const TensorType *type =
      outGrid ? withElement(last->getResult()->getType(), outGrid)
              : last->getResult()->getType();
  rewriter.setInsertionPoint(last);
  rewriter.setRoot(last);
  Node *fused = rewriter.create(op, operands, {{type, ""}}, std::move(attrs),
                                anchor.getName().str());
  if (outGrid) {
    // Qs of the output read the fused node; so does data movement the Q
    // moved backward through (a copy unit after this one).
    storedOf[last->getResult()] = fused->getResult();
    replaceQuantizes(last->getResult(), outGrid, fused->getResult());
    maybeDead.push_back(fused); // when no copy after it forms
  } else {
    replacements.push_back({last, fused->getResult()});
  }
  for (Node *m : unit.members)
    maybeDead.push_back(m);
  for (Node *a : unit.absorbed)
    maybeDead.push_back(a);
  return true;
}

void Fuser::eraseDead() {
  llvm::DenseSet<Node *> erased;
  while (!maybeDead.empty()) {
    Node *n = maybeDead.back();
    maybeDead.pop_back();
    if (erased.count(n) ||
        llvm::any_of(n->getResults(), [](Value *r) { return r->hasUses(); }))
      continue;
    for (Value *v : n->getOperands())
      if (v && v->getDefiningNode())
        maybeDead.push_back(v->getDefiningNode());
    erased.insert(n);
    rewriter.eraseNode(*n);
  }
}

bool Fuser::run(const FusionPlan &plan) {
  unsigned fused = 0;
  for (const FusionUnit &unit : plan.units) {
    // The plan lowers DQ -> MatMul itself (LowerInt4Gemm.cpp).
    if (unit.weightOnly4Bit || unit.fp8)
      continue;
    std::string why;
    bool ok = unit.isCopy() ? fuseCopy(unit, why) : fuseUnit(unit, why);
    if (ok) {
      fused += !unit.isCopy();
      continue;
    }
    report.recordNote(kFusePass, "unit #" + std::to_string(unit.id) + " (" +
                                     unit.kind + " " +
                                     describeNode(*unit.getAnchor()) +
                                     ") left unfused: " + why);
  }
  for (auto [node, value] : replacements)
    rewriter.replaceNode(*node, {value});
  // replaceNode erased the replaced nodes; they must not be visited again.
  llvm::DenseSet<Node *> replaced;
  for (auto [node, value] : replacements)
    replaced.insert(node);
  llvm::erase_if(maybeDead, [&](Node *n) { return replaced.count(n); });
  eraseDead();
  return !replacements.empty() || fused;
}

} // namespace

PreservedAnalyses FusePass::run(Graph &g, AnalysisManager &am) {
  // The units q.* ops can hold: not the ones a backend builds from more
  // than a GEMM and its epilogue (attention, GELU, a weight moved through
  // a Transpose); their GEMMs fuse as they would without those rules.
  BackendRules rules = *lookupBackendRules(backend);
  rules.int8AttentionHeadSizes = {};
  rules.int8AttentionMaxSequence = 0;
  rules.geluEpilogue = false;
  rules.weightDequantizeCrossesDataMovement = false;
  // Dynamic quantization has no q.* op: its chains stay as they are.
  rules.dynamicQuantization = false;
  FusionPlan plan = computeFusionPlan(g, rules);
  Fuser fuser(g, am.getCostReport());
  return fuser.run(plan) ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
