//===- QdqUtils.cpp - Reading and building Q/DQ for placement passes ------===//

#include "qopt/Passes/QdqUtils.h"
#include "qopt/IR/QuantMath.h"

using namespace qopt;

Node *qopt::getProducer(const Value *v, llvm::StringRef op) {
  Node *n = v ? v->getDefiningNode() : nullptr;
  return n && n->isa(op) ? n : nullptr;
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

bool qopt::allUsersAre(const Value *v, llvm::StringRef op) {
  if (!v->hasUses() || v->isGraphOutput() || v->isCaptured())
    return false;
  for (const Use &u : v->getUses())
    if (u.isGraphOutput() || u.isCapture() || !u.user->isa(op))
      return false;
  return true;
}

const TensorType *qopt::withElement(const TensorType *like, const Type *elem) {
  return like->withElementType(elem);
}

const TensorType *qopt::withElement(const TensorType *like, ElementKind kind) {
  return like->withElementType(
      like->getContext().getElementType(kind));
}

const QuantType *qopt::withParams(Context &ctx, const QuantType *q,
                                  ElementKind storage,
                                  llvm::ArrayRef<float> scales,
                                  llvm::ArrayRef<int64_t> zeroPoints) {
  std::optional<int64_t> axis;
  if (q->isPerAxis())
    axis = q->getAxis();
  return ctx.getQuantType(storage, q->getExpressedKind(), axis, scales,
                          zeroPoints);
}

llvm::Expected<const QuantType *>
qopt::quantTypeAcross(const Node &n, const QuantType *q, unsigned result) {
  if (!q->isPerAxis())
    return q;
  const OpDef *def = lookupOpDef(n.getOp());
  if (!def)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s: opaque op", n.describe().c_str());
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
    if (a.name == "param_names" || a.name == "param_ranks")
      attrs.push_back(a);
  return attrs;
}

Node *qopt::createQuantize(PatternRewriter &r, Value *x, const QuantType *q,
                           const Node *paramsLike, std::string name) {
  return r.create(ops::Quantize, {x}, {{withElement(x->getType(), q), ""}},
                  paramRecordOf(paramsLike), std::move(name));
}

Node *qopt::createDequantize(PatternRewriter &r, Value *stored,
                             const Node *paramsLike, std::string name) {
  const QuantType *q = getStoredQuantType(stored);
  return r.create(ops::Dequantize, {stored},
                  {{withElement(stored->getType(), q->getExpressedKind()), ""}},
                  paramRecordOf(paramsLike), std::move(name));
}

bool qopt::isActivationQuantize(const Node &n) {
  return n.isa(ops::Quantize) && !isConstantValue(n.getOperand(0));
}

bool qopt::isActivationDequantize(const Node &n) {
  if (!n.isa(ops::Dequantize))
    return false;
  const Value *in = n.getOperand(0);
  if (isConstantValue(in))
    return false;
  Node *q = getProducer(in, ops::Quantize);
  return !(q && isConstantValue(q->getOperand(0)));
}
