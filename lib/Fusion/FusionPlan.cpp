//===- FusionPlan.cpp - Forming the units a backend fuses -----------------===//
//
// One walk over the graph in order forms the units; a second pass over the
// Q/DQ nodes and the float ops left outside any unit lists the leftovers.
//
// A value is readable as int8 when a DQ produces it (the unit absorbs the
// DQ) or, where the backend moves DQ forward, when a data-movement op that
// runs on int8 (a "copy") produces it from such a value. A unit writes int8
// when every use of its last member's result is a Q on one grid.
//
//===----------------------------------------------------------------------===//

#include "FusionPlanner.h"

#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/FloatRegions.h"
#include "qopt/Passes/QdqUtils.h"
#include "qopt/Support/FloatFormat.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Sequence.h"

using namespace qopt;

llvm::StringRef qopt::getLeftoverKindName(LeftoverKind kind) {
  switch (kind) {
  case LeftoverKind::Requantize:
    return "requantize";
  case LeftoverKind::Reformat:
    return "reformat";
  case LeftoverKind::FloatIsland:
    return "float island";
  case LeftoverKind::UnfusedQuantize:
    return "unfused Q";
  case LeftoverKind::UnfusedDequantize:
    return "unfused DQ";
  }
  return "?";
}

const OpRule *BackendRules::lookup(llvm::StringRef op) const {
  for (const OpRule &r : ops)
    if (r.op == op)
      return &r;
  return nullptr;
}

using namespace qopt::fusion;

namespace qopt {
namespace fusion {

/// "0.0834" or "{0.01..0.03} axis 0" (per axis), with the zero point when
/// not 0 and the storage type.
std::string gridText(const QuantType *q) {
  if (!q)
    return "float";
  std::string s = getElementKindName(q->getStorageKind()).str() + " ";
  if (q->isPerAxis()) {
    auto [lo, hi] =
        std::minmax_element(q->getScales().begin(), q->getScales().end());
    s += "scales " + formatFloat(*lo) + ".." + formatFloat(*hi) + " axis " +
         std::to_string(q->getAxis());
  } else {
    s += formatFloat(q->getScale());
    if (q->getZeroPoint() != 0)
      s += " zp " + std::to_string(q->getZeroPoint());
  }
  return s;
}

std::string scaleText(const QuantType *q) {
  if (q->isPerAxis())
    return gridText(q);
  std::string s = formatFloat(q->getScale());
  if (q->getZeroPoint())
    s += " zp " + std::to_string(q->getZeroPoint());
  return s;
}

/// "Conv 'conv1'", with Q/DQ under their ONNX names.
std::string nodeRef(const Node &n) {
  if (n.isa(ops::QQuantize) || n.isa(ops::QDequantize)) {
    std::string name = n.getName().empty() ? n.getResult()->getName().str()
                                           : n.getName().str();
    return (n.isa(ops::QQuantize) ? "QuantizeLinear '" : "DequantizeLinear '") +
           name + "'";
  }
  return describeNode(n);
}

/// The stored integers a DQ result comes from (what a unit absorbing the
/// DQ reads), else the value itself.
const Value *storedOrSelf(const Value *v) {
  if (Node *dq = getProducer(v, ops::QDequantize))
    return dq->getOperand(0);
  return v;
}

bool isQdqOp(const Node &n) {
  // A float8/float4 Q/DQ converts in float unless an FP8 rule places it
  // (FusionFp8.cpp): a node of its own, not an integer grid's Q/DQ.
  return ((n.isa(ops::QQuantize) || n.isa(ops::QDequantize)) &&
          !isMinifloatQdq(n)) ||
         n.isa(ops::QRequantize);
}

const Value *quantizedOnOneGrid(const Value *v) {
  if (v->isGraphOutput() || !v->hasUses() || !allUsersAre(v, ops::QQuantize))
    return nullptr;
  const Value *first = v->getUses().front().user->getResult();
  for (const Use &u : v->getUses())
    if (!sameGrid(getStoredQuantType(first),
                  getStoredQuantType(u.user->getResult())))
      return nullptr;
  return first;
}

bool sameGrid(const QuantType *a, const QuantType *b) {
  return a == b || (a && b && a->hasSameParams(b) &&
                    a->getStorageKind() == b->getStorageKind());
}

bool Planner::isComputeNode(const Node &n) const {
  if (isQdqOp(n) || n.isa(ops::Constant) || hasTrait(n, OpTrait::ShapeOnly))
    return false;
  for (const Value *v : n.getOperands())
    if (v && !v->isAbsent() && !constantValues.count(v))
      return true;
  return false;
}

const QuantType *Planner::readGrid(const Value *v) const {
  if (!v)
    return nullptr;
  if (const QuantType *q = getStoredQuantType(v))
    return q->hasIntegerStorage() ? q : nullptr;
  if (Node *dq = getProducer(v, ops::QDequantize))
    return getStoredQuantType(dq->getOperand(0));
  auto it = copyGrid.find(v);
  return it == copyGrid.end() ? nullptr : it->second;
}

/// ONNX Runtime's QDQS8ToU8Transformer rewrites an int8 Q -> DQ pair to
/// uint8 only when the Q feeds one DQ and that DQ one consumer; elsewhere
/// int8 activations stay int8.
static bool isConvertibleS8Pair(const Value *stored) {
  if (!stored || stored->isGraphOutput() || !stored->hasOneUse())
    return false;
  const Node *dq = stored->getUses().front().user;
  if (!dq->isa(ops::QDequantize) || !dq->getResult()->hasOneUse() ||
      dq->getResult()->isGraphOutput())
    return false;
  // The Q may sit before int8 data movement (ORT's QDQ propagation moves
  // it next to the DQ).
  const Node *p = stored->getDefiningNode();
  while (p && carriesIntegers(*p) && p->getNumOperands() &&
         p->getOperand(0)->hasOneUse() && !p->getOperand(0)->isGraphOutput())
    p = p->getOperand(0)->getDefiningNode();
  return p && p->isa(ops::QQuantize);
}

std::string Planner::s8ActivationProblem(const QuantType *q,
                                         const Value *stored) const {
  if (rules.int8ActivationsOnlyAsU8 && q->getStorageKind() == ElementKind::I8 &&
      !q->isPerAxis() && !isConvertibleS8Pair(stored))
    return "i8 activations that stay i8 (" + rules.title.str() +
           " turns an i8 Q -> DQ pair into u8 only when the DQ has one "
           "consumer; its x86 kernels take u8 activations)";
  return {};
}

std::string Planner::activationGridProblem(const QuantType *q) const {
  if (q->isPerAxis())
    return "per-axis activation parameters (axis " +
           std::to_string(q->getAxis()) + "); " + rules.title.str() +
           " quantizes activations per tensor";
  if (!(typeSetOf(q->getStorageKind()) & rules.activationStorage))
    return getElementKindName(q->getStorageKind()).str() + " activations; " +
           rules.title.str() + " takes " +
           describeTypeSet(rules.activationStorage);
  if (rules.activationZeroPointZero && q->getZeroPoint() != 0)
    return "zero point " + std::to_string(q->getZeroPoint()) + "; " +
           rules.title.str() + " needs 0 (symmetric)";
  return {};
}

std::string Planner::weightGridProblem(const Node &op, const QuantType *q,
                                       int64_t outputAxis) const {
  if (!(typeSetOf(q->getStorageKind()) & rules.weightStorage))
    return getElementKindName(q->getStorageKind()).str() + " weights; " +
           rules.title.str() + " takes " + describeTypeSet(rules.weightStorage);
  if (q->isPerAxis() && q->getAxis() != outputAxis)
    return "weight quantized on axis " + std::to_string(q->getAxis()) +
           ", not on the output-channel axis " + std::to_string(outputAxis) +
           " of " + nodeRef(op);
  if (rules.weightZeroPointZero)
    for (int64_t zp : q->getZeroPoints())
      if (zp != 0)
        return "weight zero point " + std::to_string(zp) + "; " +
               rules.title.str() + " needs 0";
  return {};
}

void Planner::readAsInt8(FusionUnit &unit, Node &n, unsigned i,
                         const QuantType *grid) {
  const Value *v = n.getOperand(i);
  unit.inputs.push_back({storedOrSelf(v), grid});
  pendingReads.push_back({&n, i});
  if (Node *dq = getProducer(v, ops::QDequantize))
    unit.absorbed.push_back(dq);
}

void Planner::markFloat(const Node &n, FloatCause cause) {
  if (floatNodes.try_emplace(&n, std::move(cause)).second)
    floatOrder.push_back(&n);
}

FloatCause gridCause(const std::string &where, const std::string &problem) {
  FloatCause c{where + ": " + problem, {}, {}};
  if (llvm::StringRef(problem).startswith("i8 activations that stay i8")) {
    c.fixPipeline = "ensure-unique-dq,to-uint8-activations";
    c.fixInModel = "export uint8 activations (QUInt8)";
  }
  // A backend taking symmetric i8 only: the grid covering the same range.
  if (problem.find("activations; ") != std::string::npos &&
      problem.find(" takes i8") != std::string::npos) {
    c.fixPipeline = "symmetrize-activations";
    c.fixInModel = "export symmetric int8 activations (qint8, zero point 0)";
  }
  if (llvm::StringRef(problem).startswith("zero point ") &&
      problem.find("needs 0 (symmetric)") != std::string::npos) {
    c.fixPipeline = "symmetrize-activations";
    c.fixInModel = "export symmetric activations (zero point 0)";
  }
  return c;
}

/// Why operand `i` of `n` is not int8: what produces it.
FloatCause Planner::inputCause(const Node &n, unsigned i) const {
  const Value *v = n.getOperand(i);
  FloatCause c;
  std::string what = "input " + std::to_string(i);
  if (v->isGraphInput()) {
    c.reason = what + " is graph input '" + v->getName().str() +
               "' in float (no Q/DQ on it)";
    c.fixInModel = "add a quantizer on that input";
    return c;
  }
  const Node *p = v->getDefiningNode();
  if (p && p->isa(ops::Constant)) {
    c.reason = what + " is a float constant";
    return c;
  }
  c.reason = what + " comes from " + nodeRef(*p) + " in float (no Q/DQ on it)";
  c.fixInModel = "add a quantizer (Q/DQ) on the output of " + nodeRef(*p);
  c.inherited = floatNodes.count(p) != 0;
  return c;
}

void Planner::classify(Node &n) {
  floatResidual = false;
  residualRead.reset();
  if (n.isa(ops::QDequantize) && !isMinifloatQdq(n) &&
      !isActivationDequantize(n))
    weightValues.insert(n.getResult());
  if (n.isa(ops::QRequantize) && rules.requantizeIsInt8Step) {
    FusionUnit unit;
    unit.kind = "requantize";
    unit.members.push_back(&n);
    unit.inputs.push_back(
        {n.getOperand(0), getStoredQuantType(n.getOperand(0))});
    unit.outputs.push_back({n.getResult(), getStoredQuantType(n.getResult())});
    addUnit(std::move(unit));
    return;
  }
  if (!isComputeNode(n)) {
    if (!isQdqOp(n))
      for (unsigned i = 0; i < n.getNumResults(); ++i)
        constantValues.insert(n.getResult(i));
    return;
  }
  if (plan.unitOf.count(&n))
    return;
  if (n.getDialect() == "q" && !isMinifloatQdq(n)) {
    // A unit fuse<backend> has formed already.
    pendingReads.clear();
    FusionUnit unit;
    unit.kind = n.getOpType().str();
    if (unit.kind == "activation" &&
        getStringAttrOr(n, "activation", "") == "silu")
      unit.kind = "silu";
    unit.members.push_back(&n);
    unit.macs = countMacs(n);
    for (unsigned i = 0; i < n.getNumOperands(); ++i)
      if (const Value *v = n.getOperand(i)) {
        unit.inputs.push_back({v, getStoredQuantType(v)});
        pendingReads.push_back({&n, i});
      }
    unit.outputs.push_back({n.getResult(), getStoredQuantType(n.getResult())});
    addUnit(std::move(unit));
    return;
  }
  if (carriesIntegers(n) && weightValues.count(n.getOperand(0))) {
    for (unsigned r = 0; r < n.getNumResults(); ++r)
      weightValues.insert(n.getResult(r));
    // The weight's DQ moves forward through it (TensorRT): the weighted op
    // reads the moved INT8 weight, the move is folded into the constant.
    llvm::SmallVector<unsigned, 4> data = getDataOperands(n);
    bool foldable =
        rules.weightDequantizeCrossesDataMovement && n.getNumResults() == 1 &&
        data.size() == 1 && data[0] == 0 &&
        llvm::all_of(llvm::seq(1u, n.getNumOperands()), [&](unsigned i) {
          return !n.getOperand(i) || isConstantValue(n.getOperand(i));
        });
    if (const QuantType *g = foldable ? readGrid(n.getOperand(0)) : nullptr)
      if (whyGridCannotCross(n, g).empty())
        if (auto across = quantTypeAcross(n, g, 0)) {
          copyGrid[n.getResult()] = *across;
          foldedWeightMoves.insert(&n);
          return;
        } else {
          llvm::consumeError(across.takeError());
        }
    // Otherwise (tf2onnx's Transpose under ONNX Runtime) the weighted op
    // behind it gets a float weight.
    markFloat(n, {"moves the dequantized weight of a weighted op: the "
                  "weight reaching it is float",
                  "fold-weights",
                  "export the weight in the layout its op reads, or let the "
                  "exporter fold the " +
                      n.getOpType().str()});
    return;
  }
  pendingReads.clear();
  if (tryDynamic(n) || tryWeightOnly(n) || tryFp8(n))
    return;
  if (carriesIntegers(n) && tryCopy(n))
    return;
  pendingReads.clear();
  const OpRule *rule = rules.lookup(n.getOp());
  if (rule && rule->role == OpRole::Weighted && tryAttention(n, *rule))
    return;
  pendingReads.clear();
  if (rule && rule->role == OpRole::Weighted && tryWeighted(n, *rule))
    return;
  pendingReads.clear();
  if (rule && rule->role == OpRole::Int8Op && tryInt8Op(n, *rule))
    return;
  if (!floatNodes.count(&n) && carriesIntegers(n)) {
    // Data movement keeps the precision of its input; borrow-scales gives
    // float data movement between quantized ops the grid of the Q after it.
    for (unsigned i : getDataOperands(n))
      if (!readGrid(n.getOperand(i))) {
        FloatCause c = inputCause(n, i);
        if (borrowableValues.count(n.getOperand(i)))
          c.fixPipeline = "borrow-scales<" + rules.name.str() + ">";
        markFloat(n, std::move(c));
        return;
      }
  }
  if (!floatNodes.count(&n)) {
    FloatCause c;
    c.reason =
        rules.title.str() + " has no INT8 form for " + n.getOpType().str();
    c.fixInModel = "none: it runs in float; Q/DQ around it only add reformats";
    if (rules.name == "ort" && n.isa(ops::HardSigmoid)) {
      // alpha * x + beta clamped to [0, 1]: QLinearMul, QLinearAdd and the
      // saturation of a Q on [0, 1] (the fix checker drops the fix where
      // the pass cannot apply).
      c.fixPipeline = "expand-hard-sigmoid<ort>";
      c.fixInModel = "none: ONNX Runtime has no INT8 HardSigmoid";
    }
    if (rules.name == "trt" && n.isa(ops::LayerNormalization)) {
      // Expected: TensorRT's normalization layer has no INT8 form, and the
      // Q after it is what quantizes the next GEMM's input.
      c.reason = "TensorRT runs LayerNormalization in FP32/FP16 "
                 "(INormalizationLayer; no INT8 form)";
      c.fixInModel = "none needed: keep the Q after it, it quantizes the next "
                     "GEMM's input (NVIDIA Model Optimizer leaves LayerNorm "
                     "in float too)";
    }
    if (auto it = attentionCauses.find(&n); it != attentionCauses.end()) {
      c.reason = it->second;
      c.fixInModel = "meet those conditions for the INT8 attention kernel, "
                     "or leave it in FP16 (no Q/DQ on the attention MatMuls "
                     "and the Softmax)";
    }
    markFloat(n, std::move(c));
  }
}

bool Planner::tryCopy(Node &n) {
  // Data movement runs on int8 when its data arrives as int8.
  llvm::SmallVector<unsigned, 4> data = getDataOperands(n);
  // Inputs requantized onto the output's grid (reported once the copy
  // forms).
  std::vector<std::pair<unsigned, Leftover>> requantizes;
  const QuantType *grid = nullptr;
  bool mixed = false;
  for (unsigned i : data) {
    const QuantType *g = readGrid(n.getOperand(i));
    if (!g)
      return false;
    if (!getStoredQuantType(n.getOperand(i)) &&
        !rules.propagatesThroughDataMovement)
      return false;
    if (grid && !sameGrid(grid, g))
      mixed = true;
    if (!grid)
      grid = g;
  }
  if (!grid)
    return false;
  if (mixed) {
    // Concat (or Max/Min) on several grids.
    const OpRule *rule = rules.lookup(n.getOp());
    if (rules.concatRequantizes && rule && rule->role == OpRole::Int8Op)
      return false; // an int8 op that requantizes its inputs itself
    // A copy onto the grid of the Q after it: the inputs on other grids are
    // requantized first (the Q moves backward onto each input).
    const Value *out = n.getResult(0);
    const Value *outQ = quantizedOnOneGrid(out);
    const QuantType *outGrid = outQ ? getStoredQuantType(outQ) : nullptr;
    if (!outGrid) {
      FloatCause c;
      c.reason = "inputs on different grids and no single Q after it";
      c.fixPipeline = "unify-scales,remove-redundant-qdq";
      c.fixInModel = "give the quantizers of its inputs one shared amax";
      markFloat(n, std::move(c));
      return true;
    }
    for (unsigned i : data) {
      const QuantType *g = readGrid(n.getOperand(i));
      if (sameGrid(g, outGrid))
        continue;
      Leftover l;
      l.kind = LeftoverKind::Requantize;
      if (Node *dq = getProducer(n.getOperand(i), ops::QDequantize))
        l.nodes.push_back(dq);
      l.nodes.push_back(&n);
      l.reason = "scale mismatch at " + n.getOpType().str() + " input " +
                 std::to_string(i) + ": " + scaleText(g) + " vs " +
                 scaleText(outGrid) + " (the output's)";
      l.fixPipeline = "unify-scales,remove-redundant-qdq";
      l.fixInModel = "give the quantizers on the inputs and the output of " +
                     nodeRef(n) + " one shared amax";
      requantizes.emplace_back(i, std::move(l));
    }
    grid = outGrid;
  }
  if (std::string why = whyGridCannotCross(n, grid); !why.empty()) {
    markFloat(n, {why, {}, {}});
    return true;
  }
  FusionUnit unit;
  unit.kind = "copy";
  unit.members.push_back(&n);
  for (unsigned i : data) {
    unit.inputs.push_back(
        {storedOrSelf(n.getOperand(i)), readGrid(n.getOperand(i))});
    pendingReads.push_back({&n, i});
  }
  for (unsigned r = 0; r < n.getNumResults(); ++r) {
    if (!isDataResult(n, r) || n.getResult(r)->isAbsent())
      continue;
    const QuantType *out = grid;
    if (const QuantType *stored = getStoredQuantType(n.getResult(r))) {
      out = stored;
    } else {
      auto across = quantTypeAcross(n, grid, r);
      if (!across) {
        markFloat(n, {llvm::toString(across.takeError()), {}, {}});
        return true;
      }
      out = *across;
      copyGrid[n.getResult(r)] = out;
    }
    unit.outputs.push_back({n.getResult(r), out});
  }
  for (auto &[operand, l] : requantizes) {
    reportedRequantize.insert({&n, operand});
    plan.leftovers.push_back(std::move(l));
  }
  addUnit(std::move(unit));
  return true;
}

bool Planner::tryWeighted(Node &n, const OpRule &rule) {
  std::optional<WeightInfo> wi = n.getOpDef()->getWeightInfo(n);
  FusionUnit unit;
  unit.kind = rule.unitKind.str();
  unit.members.push_back(&n);
  unit.macs = countMacs(n);
  for (unsigned i = 0; i < n.getNumOperands() && i < 2; ++i) {
    const Value *v = n.getOperand(i);
    bool isWeight = wi && wi->operand == i;
    Node *dq = getProducer(v, ops::QDequantize);
    const QuantType *g = readGrid(v);
    // Data movement between the weight DQ and the op: the weight is float,
    // unless the backend moves the DQ forward through it.
    std::vector<Node *> movedWeight;
    if (weightValues.count(v) && !dq) {
      for (Node *p = v->getDefiningNode(); p && foldedWeightMoves.count(p);
           p = p->getOperand(0)->getDefiningNode()) {
        movedWeight.push_back(p);
        if (Node *wdq = getProducer(p->getOperand(0), ops::QDequantize)) {
          dq = wdq;
          break;
        }
      }
      if (!dq)
        g = nullptr;
    }
    bool constantWeight = isWeight && dq && !isActivationDequantize(*dq);
    if (isWeight && dq && !movedWeight.empty()) {
      // The moves fold into the weight: they belong to the unit.
      unit.absorbed.push_back(dq);
      unit.absorbed.insert(unit.absorbed.end(), movedWeight.rbegin(),
                           movedWeight.rend());
    }
    if (!g) {
      FloatCause c = inputCause(n, i);
      if (isWeight) {
        // Find a weight DQ behind data movement (tf2onnx's Transpose).
        const Node *p = v->getDefiningNode();
        const Node *between = nullptr;
        while (p && carriesIntegers(*p) && p->getNumOperands()) {
          between = between ? between : p;
          const Value *in = p->getOperand(0);
          if (Node *wdq = getProducer(in, ops::QDequantize)) {
            c.reason = nodeRef(*between) + " between the weight's " +
                       nodeRef(*wdq) + " and " + nodeRef(n) +
                       ": the weight reaching it is float";
            c.fixPipeline = "fold-weights";
            c.fixInModel = "export the weight in the layout " + nodeRef(n) +
                           " reads, or let the exporter fold the " +
                           between->getOpType().str();
            break;
          }
          p = in->getDefiningNode();
        }
        if (c.fixPipeline.empty() && isConstantValue(v)) {
          c.reason = "weight is a float constant (no Q/DQ on it)";
          c.fixPipeline = "fold-weights<requantize-float-weights>";
          c.fixInModel =
              "quantize the weight (a weight quantizer on " + nodeRef(n) + ")";
        }
      }
      markFloat(n, std::move(c));
      return false;
    }
    std::string problem;
    if (isWeight && (constantWeight || isConstantValue(v)))
      problem = weightGridProblem(n, g, wi->outputChannelAxis);
    else
      problem = activationGridProblem(g);
    if (problem.empty() && !(isWeight && constantWeight))
      problem = s8ActivationProblem(g, storedOrSelf(v));
    if (!problem.empty()) {
      markFloat(n, gridCause("input " + std::to_string(i), problem));
      return false;
    }
    readAsInt8(unit, n, i, g);
  }
  if (n.getNumOperands() > 2 && !n.getOperand(2)->isAbsent()) {
    const Value *bias = n.getOperand(2);
    if (Node *dq = getProducer(bias, ops::QDequantize)) {
      unit.absorbed.push_back(dq);
      pendingReads.push_back({&n, 2});
    }
    unit.inputs.push_back({storedOrSelf(bias), readGrid(bias)});
  }
  if (rules.smallShapesStayFloat)
    if (std::string why = whyTooSmallForInt8(n); !why.empty()) {
      markFloat(n, {why, {}, "remove the Q/DQ on its input and weight"});
      return false;
    }
  FloatCause why;
  if (!finishUnit(unit, rule, why)) {
    markFloat(n, std::move(why));
    return false;
  }
  addUnit(std::move(unit));
  return true;
}

bool Planner::tryInt8Op(Node &n, const OpRule &rule) {
  FusionUnit unit;
  unit.kind = rule.unitKind.str();
  unit.members.push_back(&n);
  llvm::SmallVector<unsigned, 4> data;
  if (n.isa(ops::Add) || n.isa(ops::Mul) || n.isa(ops::Sub) || n.isa(ops::Div))
    data = {0, 1};
  else
    data = getDataOperands(n);
  for (unsigned i : data) {
    const Value *v = n.getOperand(i);
    const QuantType *g = readGrid(v);
    if (!g) {
      FloatCause c = inputCause(n, i);
      if (n.isa(ops::Add)) {
        c.reason = "skip branch of Add not quantized: " + c.reason;
        // quantize-residual quantizes the skip of an Add whose other input
        // is a conv branch it reads alone (the conv can then take the Add).
        // A Q/DQ pair on the branch is one quantize-residual removes.
        const Value *branch =
            n.getNumOperands() == 2 ? n.getOperand(1 - i) : nullptr;
        if (Node *dq = branch ? getProducer(branch, ops::QDequantize) : nullptr)
          if (Node *q = getProducer(dq->getOperand(0), ops::QQuantize))
            if (branch->hasOneUse() && dq->getOperand(0)->hasOneUse())
              branch = q->getOperand(0);
        if (branch && branch->hasOneUse() && weightedProducer(branch))
          c.fixPipeline = "quantize-residual";
        c.fixInModel =
            "add a quantizer on the residual (skip) input of " + nodeRef(n);
      }
      markFloat(n, std::move(c));
      return false;
    }
    std::string problem = activationGridProblem(g);
    if (problem.empty())
      problem = s8ActivationProblem(g, storedOrSelf(v));
    if (!problem.empty()) {
      markFloat(n, gridCause("input " + std::to_string(i), problem));
      return false;
    }
    readAsInt8(unit, n, i, g);
  }
  // SiLU exported as x * Sigmoid(x), both reading x as int8.
  Value *sig = n.getResult();
  if (rules.siluEpilogue && n.isa(ops::Sigmoid) && sig->hasOneUse() &&
      !sig->isGraphOutput()) {
    Node *mul = sig->getUses().front().user;
    if (mul->isa(ops::Mul) && mul->getNumOperands() == 2) {
      unsigned other = mul->getOperand(0) == sig ? 1 : 0;
      if (mul->getOperand(other) == n.getOperand(0)) {
        unit.kind = "silu";
        unit.members.push_back(mul);
        pendingReads.push_back({mul, other});
      }
    }
  }
  FloatCause why;
  if (!finishUnit(unit, rule, why)) {
    markFloat(n, std::move(why));
    return false;
  }
  addUnit(std::move(unit));
  return true;
}

void Planner::addUnit(FusionUnit unit) {
  for (auto read : pendingReads)
    int8Reads.insert(read);
  pendingReads.clear();
  unit.id = plan.units.size();
  if (floatResidual)
    floatResidualUnits.insert(unit.id);
  for (Node *m : unit.members)
    plan.unitOf[m] = unit.id;
  for (Node *a : unit.absorbed)
    plan.unitOf[a] = unit.id;
  plan.units.push_back(std::move(unit));
}

void Planner::dropUnsoundBorrowFixes() {
  // borrow-scales helps only where every tensor entering the region is a
  // unit's output (an op that can write int8 once it has a Q).
  llvm::DenseSet<const Value *> unsound;
  for (const FloatRegion &region : borrowableRegions)
    for (const Value *entry : region.entries)
      if (!plan.unitOf.count(entry->getDefiningNode()) ||
          floatNodes.count(entry->getDefiningNode())) {
        unsound.insert(region.members.begin(), region.members.end());
        break;
      }
  if (unsound.empty())
    return;
  for (const Value *v : unsound)
    borrowableValues.erase(v);
  std::string fix = "borrow-scales<" + rules.name.str() + ">";
  for (auto &[node, cause] : floatNodes)
    if (cause.fixPipeline == fix &&
        llvm::any_of(node->getOperands(),
                     [&](const Value *v) { return unsound.count(v); }))
      cause.fixPipeline.clear();
}

FusionPlan Planner::run() {
  for (const Node &n : graph.getNodes())
    nodeOrder[&n] = nodeOrder.size();
  for (FloatRegion &region : findFloatRegions(graph))
    if (region.isBorrowable())
      borrowableRegions.push_back(std::move(region));
  for (const FloatRegion &region : borrowableRegions)
    borrowableValues.insert(region.members.begin(), region.members.end());
  for (Node &n : graph.getNodes())
    classify(n);
  dropUnsoundBorrowFixes();
  collectIslands();
  collectDequantizeLeftovers();
  collectQuantizeLeftovers();
  collectSplitUnits();
  // Graph order of the first node involved.
  llvm::DenseMap<const Node *, size_t> order;
  for (const Node &n : graph.getNodes())
    order[&n] = order.size();
  for (Leftover &l : plan.leftovers)
    llvm::sort(l.nodes, [&](const Node *a, const Node *b) {
      return order.lookup(a) < order.lookup(b);
    });
  // Sorted by key and found order, then moved once each (sorting the
  // leftovers themselves moves them n log n times).
  std::vector<std::pair<size_t, size_t>> byFirstNode;
  byFirstNode.reserve(plan.leftovers.size());
  for (size_t i = 0; i < plan.leftovers.size(); ++i)
    byFirstNode.push_back({order.lookup(plan.leftovers[i].nodes.front()), i});
  llvm::sort(byFirstNode);
  std::vector<Leftover> sorted;
  sorted.reserve(plan.leftovers.size());
  for (const auto &entry : byFirstNode)
    sorted.push_back(std::move(plan.leftovers[entry.second]));
  plan.leftovers = std::move(sorted);
  return std::move(plan);
}

} // namespace fusion
} // namespace qopt

FusionPlan qopt::computeFusionPlan(Graph &graph, const BackendRules &rules) {
  return Planner(graph, rules).run();
}
