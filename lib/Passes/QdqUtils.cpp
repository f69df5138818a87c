//===- QdqUtils.cpp - Reading and building Q/DQ for placement passes ------===//

#include "qopt/Passes/QdqUtils.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/FloatFormat.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace qopt;

bool qopt::isMinifloatQdq(const Node &n) {
  if (n.isa(ops::QQuantize))
    return isMinifloatKind(n.getResult()->getType()->getStorageKind());
  if (n.isa(ops::QDequantize))
    return n.getOperand(0) &&
           isMinifloatKind(n.getOperand(0)->getType()->getStorageKind());
  return false;
}

/// Whether `n` is an `op` node the matchers below report: a Q/DQ of a
/// minifloat grid is not one (see getProducer).
static bool matchesOp(const Node &n, llvm::StringRef op) {
  return n.isa(op) && !isMinifloatQdq(n);
}

Node *qopt::getProducer(const Value *v, llvm::StringRef op) {
  Node *n = v ? v->getDefiningNode() : nullptr;
  return n && matchesOp(*n, op) ? n : nullptr;
}

bool qopt::isConstantValue(const Value *v) {
  return getConstantData(v) != nullptr;
}

std::vector<std::pair<Node *, unsigned>> qopt::getUsers(const Value *v) {
  std::vector<std::pair<Node *, unsigned>> users;
  for (const Use &u : v->getUses())
    if (!u.isGraphOutput() && !u.isCapture())
      users.push_back({u.user, u.index});
  return users;
}

Node *qopt::getSoleUserOfKind(const Value *v, llvm::StringRef op) {
  if (!v->hasOneUse() || v->isGraphOutput() || v->isCaptured())
    return nullptr;
  Node *user = v->getUses().front().user;
  return user && matchesOp(*user, op) ? user : nullptr;
}

Value *qopt::getOtherOperand(const Node &n, const Value *v) {
  if (n.getNumOperands() != 2 || n.getOperand(0) == n.getOperand(1))
    return nullptr;
  return n.getOperand(0) == v ? n.getOperand(1) : n.getOperand(0);
}

bool qopt::allUsersAre(const Value *v, llvm::StringRef op) {
  if (!v->hasUses() || v->isGraphOutput() || v->isCaptured())
    return false;
  for (const Use &u : v->getUses())
    if (u.isGraphOutput() || u.isCapture() || !matchesOp(*u.user, op))
      return false;
  return true;
}

const TensorType *qopt::withElement(const TensorType *like, const Type *elem) {
  return like->withElementType(elem);
}

const TensorType *qopt::withElement(const TensorType *like, ElementKind kind) {
  return like->withElementType(like->getContext().getElementType(kind));
}

const QuantType *qopt::withParams(Context &ctx, const QuantType *q,
                                  ElementKind storage,
                                  llvm::ArrayRef<float> scales,
                                  llvm::ArrayRef<int64_t> zeroPoints) {
  std::optional<int64_t> axis;
  if (q->isPerAxis())
    axis = q->getAxis();
  return ctx.getQuantType(storage, q->getExpressedKind(), axis, scales,
                          zeroPoints, q->getBlockSize());
}

llvm::Expected<const QuantType *>
qopt::quantTypeAcross(const Node &n, const QuantType *q, unsigned result) {
  if (!q->isPerAxis())
    return q;
  if (q->isBlocked()) // its blocks do not follow a reshape or transpose
    return makeError(DiagLocation::node(n.getName()),
                     n.describe() +
                         ": block-wise quantization cannot cross this op");
  const OpDef *def = n.getOpDef();
  if (!def)
    return makeError(DiagLocation::node(n.getName()),
                     n.describe() + ": opaque op");
  auto axis = def->remapQuantAxis(n, q->getAxis(), result);
  if (!axis)
    return axis.takeError();
  return quant::withAxis(n.getGraph()->getContext(), q, *axis);
}

std::vector<NamedAttribute> qopt::paramRecordOf(const Node *qdq) {
  std::vector<NamedAttribute> attrs;
  if (!qdq)
    return attrs;
  for (const NamedAttribute &a : qdq->getAttrs())
    if (isQdqParamRecordAttr(a.name))
      attrs.push_back(a);
  return attrs;
}

Node *qopt::createQuantize(PatternRewriter &r, Value *x, const QuantType *q,
                           const Node *paramsLike, std::string name) {
  return r.create(ops::QQuantize, {x}, {{withElement(x->getType(), q), ""}},
                  paramRecordOf(paramsLike), std::move(name));
}

Node *qopt::createDequantize(PatternRewriter &r, Value *stored,
                             const Node *paramsLike, std::string name) {
  const QuantType *q = getStoredQuantType(stored);
  return r.create(ops::QDequantize, {stored},
                  {{withElement(stored->getType(), q->getExpressedKind()), ""}},
                  paramRecordOf(paramsLike), std::move(name));
}

bool qopt::isActivationQuantize(const Node &n) {
  return matchesOp(n, ops::QQuantize) && !isConstantValue(n.getOperand(0));
}

bool qopt::isActivationDequantize(const Node &n) {
  if (!matchesOp(n, ops::QDequantize))
    return false;
  const Value *in = n.getOperand(0);
  if (isConstantValue(in))
    return false;
  Node *q = getProducer(in, ops::QQuantize);
  return !(q && isConstantValue(q->getOperand(0)));
}

llvm::SmallVector<unsigned, 4> qopt::getDataOperands(const Node &n) {
  llvm::SmallVector<unsigned, 4> out;
  const OpDef *def = n.getOpDef();
  if (def && !def->operands.empty() && def->operands.front().variadic) {
    for (unsigned i = 0; i < n.getNumOperands(); ++i)
      out.push_back(i);
  } else if (n.getNumOperands()) {
    out.push_back(0);
  }
  return out;
}

bool qopt::isDataResult(const Node &n, unsigned result) {
  const OpDef *def = n.getOpDef();
  if (!def || n.getNumOperands() == 0 || result >= n.getNumResults() ||
      n.getResult(result)->isAbsent())
    return false;
  const SignatureSlot *data = def->operandSlot(getDataOperands(n).front());
  const SignatureSlot *slot = def->resultSlot(result);
  return data && slot && slot->typeVar == data->typeVar;
}

bool qopt::isOnGrid(double v, const QuantType *q) {
  for (size_t c = 0; c < q->getNumChannels(); ++c) {
    int64_t stored = quant::quantizeValue(static_cast<float>(v), q, c);
    if (static_cast<double>(quant::dequantizeValue(stored, q, c)) != v)
      return false;
  }
  return true;
}

/// Why a constant operand (Pad's value, Clip's bounds) is not on `q`, or
/// empty when it is (or absent).
static std::string offGridConstant(const Node &n, unsigned operand,
                                   const QuantType *q, llvm::StringRef what) {
  if (operand >= n.getNumOperands() || !n.getOperand(operand))
    return {};
  const DenseElements *d = getConstantData(n.getOperand(operand));
  if (!d || d->getNumElements() != 1)
    return (what + " is computed, so it may not lie on the grid").str();
  double v = d->getAsDouble(0);
  if (isOnGrid(v, q))
    return {};
  return (what + " " + formatFloat(static_cast<float>(v)) +
          " is not on the grid " + typeToString(q))
      .str();
}

std::string qopt::whyGridCannotCross(const Node &n, const QuantType *q) {
  const OpDef *def = n.getOpDef();
  if (!def)
    return n.getOp().str() + " is opaque to qopt";
  if (!def->hasTrait(OpTrait::DataMovement) &&
      !def->hasTrait(OpTrait::Monotonic))
    return n.getOp().str() + " computes new values";
  if (n.isa(ops::Resize)) {
    std::string mode = getStringAttrOr(n, "mode", "nearest");
    if (mode != "nearest")
      return "Resize in " + mode + " mode computes new values";
    // tf_crop_and_resize writes extrapolation_value where it samples
    // outside the roi; on integers that number itself, so it must be the
    // stored value of the same float (0.0 only where the zero point is 0).
    if (getStringAttrOr(n, "coordinate_transformation_mode", "half_pixel") ==
        "tf_crop_and_resize") {
      float v = getFloatAttrOr(n, "extrapolation_value", 0.0f);
      for (size_t c = 0; c < q->getNumChannels(); ++c) {
        int64_t stored = quant::quantizeValue(v, q, c);
        if (quant::dequantizeValue(stored, q, c) != v ||
            static_cast<float>(stored) != v)
          return "Resize writes extrapolation_value " + formatFloat(v) +
                 " into the data as it is: on the integers of " +
                 typeToString(q) +
                 " only a value that is its own stored integer survives";
      }
    }
  }
  if (n.isa(ops::Pad)) {
    // Pad takes integer data from opset 11 on: a Pad moved onto stored
    // integers in an older model could not be written back.
    int64_t opset = n.getGraph() ? n.getGraph()->getDefaultOpsetVersion() : 0;
    if (opset && opset < 11)
      return "Pad before opset 11 (the model's is " + std::to_string(opset) +
             ") pads float data only";
  }
  if (n.isa(ops::Pad) && getStringAttrOr(n, "mode", "constant") == "constant")
    return offGridConstant(n, 2, q, "the pad value");
  if (n.isa(ops::Clip))
    for (unsigned i : {1u, 2u}) {
      std::string why = offGridConstant(n, i, q, i == 1 ? "min" : "max");
      if (!why.empty())
        return why;
    }
  return {};
}

bool qopt::carriesIntegers(const Node &n) {
  if (n.isa(ops::Resize))
    return getStringAttrOr(n, "mode", "nearest") == "nearest";
  return hasTrait(n, OpTrait::DataMovement) || n.isa(ops::MaxPool);
}

/// A copy that writes a number of its own into the stored integers (Pad's
/// constant value, Resize's extrapolation value): retyping the region
/// would change what that number means.
static bool storesConstant(const Node &n) {
  return n.isa(ops::Pad) ||
         (n.isa(ops::Resize) &&
          getStringAttrOr(n, "coordinate_transformation_mode", "half_pixel") ==
              "tf_crop_and_resize");
}

StoredRegion qopt::collectStoredRegion(Value *start) {
  StoredRegion region;
  llvm::SmallPtrSet<Value *, 8> seen;
  std::vector<Value *> work{start};
  seen.insert(start);
  const QuantType *grid = getStoredQuantType(start);
  auto block = [&](std::string why) {
    if (region.blocker.empty())
      region.blocker = std::move(why);
  };
  auto visit = [&](Value *v) {
    if (v && seen.insert(v).second)
      work.push_back(v);
  };
  while (!work.empty()) {
    Value *v = work.back();
    work.pop_back();
    region.values.push_back(v);
    const QuantType *q = getStoredQuantType(v);
    if (!q || q != grid)
      block("'" + v->getName().str() + "' is on another grid");
    else if (q->isPerAxis())
      block("'" + v->getName().str() + "' has per-axis parameters");
    if (v->isGraphInput() || v->isGraphOutput() || v->isCaptured())
      block("'" + v->getName().str() + "' is a graph input or output");
    Node *def = v->getDefiningNode();
    if (def && (def->isa(ops::QQuantize) || def->isa(ops::QRequantize))) {
      if (llvm::find(region.producers, def) == region.producers.end())
        region.producers.push_back(def);
    } else if (def && carriesIntegers(*def)) {
      for (unsigned i : getDataOperands(*def))
        visit(def->getOperand(i));
      for (unsigned i = 0; i < def->getNumResults(); ++i)
        if (isDataResult(*def, i))
          visit(def->getResult(i));
      if (storesConstant(*def))
        block(def->describe() + " stores a constant value");
    } else {
      block(
          "'" + v->getName().str() + "' is " +
          (def ? "computed by " + def->getOp().str() : "not produced by a Q"));
    }
    for (auto [user, index] : getUsers(v)) {
      if (user->isa(ops::QDequantize) || user->isa(ops::QRequantize))
        continue;
      if (!carriesIntegers(*user) ||
          llvm::find(getDataOperands(*user), index) ==
              getDataOperands(*user).end()) {
        block(user->describe() + " reads the integers");
        continue;
      }
      if (storesConstant(*user))
        block(user->describe() + " stores a constant value");
      for (unsigned i : getDataOperands(*user))
        visit(user->getOperand(i));
      for (unsigned i = 0; i < user->getNumResults(); ++i)
        if (isDataResult(*user, i))
          visit(user->getResult(i));
    }
    if (region.values.size() > 100000) {
      block("the region is too large");
      break;
    }
  }
  return region;
}

void qopt::retypeRegion(PatternRewriter &r, const StoredRegion &region,
                        const QuantType *q) {
  for (Value *v : region.values)
    r.setType(*v, withElement(v->getType(), q));
}

std::string qopt::foldedConstantName(llvm::StringRef name) {
  name.consume_back("_folded");
  return (name.empty() ? std::string("weight") : name.str()) + "_folded";
}

bool qopt::isOverridableInitializer(const Value *v) {
  return llvm::is_contained(v->getGraph()->getInitializerInputs(),
                            v->getName().str());
}

Value *qopt::createConstant(PatternRewriter &r, const DenseElements &data,
                            const Type *elem, llvm::StringRef base) {
  Graph &g = r.getGraph();
  std::string name = g.makeUniqueName(base);
  auto named = std::make_shared<const DenseElements>(
      data.getKind(), data.getDims().vec(), data.getRawBytes().str(), name);
  const TensorType *type = g.getContext().getTensorType(data.getDims(), elem);
  Node *c = r.create(ops::Constant, {}, {{type, name}},
                     {{"value", Attribute(DenseElementsRef(named))}});
  return c->getResult();
}

void qopt::eraseIfDead(PatternRewriter &r, Value *v, bool alsoDataMovement) {
  Node *n = v ? v->getDefiningNode() : nullptr;
  if (!n)
    return;
  if (!n->isa(ops::Constant) && !n->isa(ops::QDequantize) &&
      !n->isa(ops::QQuantize) &&
      !(alsoDataMovement && hasTrait(*n, OpTrait::DataMovement)))
    return;
  for (const Value *res : n->getResults())
    if (res->hasUses())
      return;
  std::vector<Value *> operands(n->getOperands().begin(),
                                n->getOperands().end());
  r.eraseNode(*n);
  for (Value *op : operands)
    eraseIfDead(r, op, alsoDataMovement);
}

std::string qopt::describeNode(const Node &n) {
  std::string name = n.getName().str();
  if (name.empty() && n.getNumResults())
    name = n.getResult(0)->getName().str();
  return n.getOpType().str() + " '" + name + "'";
}

/// The stored integer of Pad's constant value (0.0 when absent) on grid
/// `q`, the same in every channel; none when the value is computed, off the
/// grid, or stored differently by the channels of a per-axis grid.
static std::optional<int64_t> storedPadValue(const Node &pad,
                                             const QuantType *q) {
  float v = 0;
  if (pad.getNumOperands() > 2 && pad.getOperand(2)) {
    const DenseElements *d = getConstantData(pad.getOperand(2));
    if (!d || d->getNumElements() != 1)
      return std::nullopt;
    v = static_cast<float>(d->getAsDouble(0));
  }
  std::optional<int64_t> stored;
  for (size_t c = 0; c < q->getNumChannels(); ++c) {
    int64_t s = quant::quantizeValue(v, q, c);
    if (quant::dequantizeValue(s, q, c) != v || (stored && *stored != s))
      return std::nullopt;
    stored = s;
  }
  return stored;
}

bool qopt::integerOperands(PatternRewriter &r, const Node &n,
                           std::vector<Value *> &operands, const QuantType *q) {
  if (!n.isa(ops::Pad))
    return true;
  if (getStringAttrOr(n, "mode", "constant") != "constant") {
    if (operands.size() > 2)
      operands[2] = nullptr;
  } else {
    std::optional<int64_t> stored = storedPadValue(n, q);
    if (!stored)
      return false;
    bool present = operands.size() > 2 && operands[2];
    if (present || *stored != 0) {
      // A scalar cannot hold per-axis parameters.
      if (q->isPerAxis())
        return false;
      Context &ctx = r.getGraph().getContext();
      const TensorType *t = ctx.getTensorType(llvm::ArrayRef<Dim>{}, q);
      Node *c = r.create(ops::Constant, {}, {{t, ""}},
                         {{"value", Attribute(quant::makeDenseInt(
                                        q->getStorageKind(), {}, {*stored}))}});
      if (operands.size() < 3)
        operands.resize(3, nullptr);
      operands[2] = c->getResult();
    }
  }
  while (operands.size() > 2 && !operands.back())
    operands.pop_back();
  return true;
}
