//===- ConstantFolding.cpp - Fold hooks over a node and a graph -----------===//

#include "qopt/IR/ConstantFolding.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

using namespace qopt;

FoldContext::FoldContext(const Node &node, const FoldOptions &options)
    : node(node), options(options) {}

unsigned FoldContext::getNumOperands() const { return node.getNumOperands(); }

const DenseElements *FoldContext::getOperand(unsigned i) const {
  return i < node.getNumOperands()
             ? getFoldableConstant(node.getOperand(i), options)
             : nullptr;
}

DenseElementsRef FoldContext::getOperandRef(unsigned i) const {
  if (!getOperand(i))
    return nullptr;
  const Attribute *a = node.getOperand(i)->getDefiningNode()->getAttr("value");
  return *a->getIf<DenseElementsRef>();
}

const TensorType *FoldContext::getOperandType(unsigned i) const {
  const Value *v = i < node.getNumOperands() ? node.getOperand(i) : nullptr;
  return v ? v->getType() : nullptr;
}

std::optional<std::vector<int64_t>>
FoldContext::getResultDims(unsigned i) const {
  return node.getResult(i)->getType()->getStaticDims();
}

ElementKind FoldContext::getResultKind(unsigned i) const {
  return node.getResult(i)->getType()->getStorageKind();
}

const DenseElements *qopt::getFoldableConstant(const Value *v,
                                               const FoldOptions &options) {
  const DenseElements *d = getConstantData(v);
  if (d && options.overridable && options.overridable->count(v->getName()))
    return nullptr;
  return d;
}

std::optional<std::vector<DenseElementsRef>>
qopt::foldNode(const Node &n, const FoldOptions &options) {
  const OpDef *def = n.getOpDef();
  if (!def || !def->fold || hasTrait(n, OpTrait::Nondeterministic) ||
      !n.getCaptures().empty() || n.getNumResults() == 0)
    return std::nullopt;
  if (n.isa(ops::Constant) && getConstantData(n.getResult()))
    return std::nullopt; // already a constant
  // A node that does not fit its signature is the verifier's to report.
  if (n.getNumOperands() < def->getMinOperands() ||
      n.getNumOperands() > def->getMaxOperands() ||
      n.getNumResults() < def->getMinResults() ||
      n.getNumResults() > def->getMaxResults())
    return std::nullopt;
  for (unsigned i = 0; i < n.getNumOperands(); ++i) {
    const SignatureSlot *slot = def->operandSlot(i);
    if (!n.getOperand(i) && slot && !slot->optional && !slot->variadic)
      return std::nullopt;
  }
  // Every operand present must be a constant whose data is what its type
  // says (a Constant whose declared type disagrees with its payload is the
  // verifier's to report), except for ops that read only their operands'
  // shapes -- and those not of an input a user may override.
  bool shapeOnly = def->hasTrait(OpTrait::ShapeOnly);
  for (const Value *v : n.getOperands()) {
    if (!v)
      continue;
    const DenseElements *d = getFoldableConstant(v, options);
    if (shapeOnly) {
      if (getConstantData(v) && !d)
        return std::nullopt; // an overridable initializer
      continue;
    }
    if (!d)
      return std::nullopt;
    const TensorType *t = v->getType();
    if (t->getStorageKind() != d->getKind() || !t->hasRank() ||
        t->getShape().size() != d->getDims().size())
      return std::nullopt;
    for (size_t a = 0; a < d->getDims().size(); ++a)
      if (!t->getShape()[a].isStatic() ||
          t->getShape()[a].size != d->getDims()[a])
        return std::nullopt;
  }
  for (const Value *r : n.getResults())
    if (r->isAbsent())
      return std::nullopt; // optional results (BN's stats): not ours
  FoldContext ctx(n, options);
  if (!def->fold(ctx) || ctx.results.size() != n.getNumResults())
    return std::nullopt;
  // A hook's result must be what inference said the op returns.
  for (unsigned i = 0; i < n.getNumResults(); ++i) {
    const DenseElements &d = *ctx.results[i];
    const TensorType *t = n.getResult(i)->getType();
    ElementKind k = t->getStorageKind();
    if (k != ElementKind::Unknown && k != d.getKind())
      return std::nullopt;
    if (t->hasRank()) {
      if (t->getShape().size() != d.getDims().size())
        return std::nullopt;
      for (size_t a = 0; a < d.getDims().size(); ++a)
        if (t->getShape()[a].isStatic() &&
            t->getShape()[a].size != d.getDims()[a])
          return std::nullopt;
    }
  }
  return std::move(ctx.results);
}

/// The type of a folded result: the value's own when it is static and of
/// the data's kind (it may carry quantization parameters), else the data's.
static const TensorType *foldedType(Context &ctx, const Value *old,
                                    const DenseElements &data) {
  const TensorType *t = old->getType();
  if (t->hasRank() && t->hasStaticShape() &&
      t->getStorageKind() == data.getKind())
    return t;
  std::vector<Dim> dims;
  for (int64_t d : data.getDims())
    dims.push_back(Dim::fixed(d));
  return ctx.getTensorType(dims, ctx.getElementType(data.getKind()));
}

llvm::Expected<unsigned> qopt::foldConstants(Graph &graph,
                                             FoldOptions options) {
  llvm::StringSet<> overridable;
  for (const std::string &name : graph.getInitializerInputs())
    overridable.insert(name);
  if (!options.overridable)
    options.overridable = &overridable;
  Context &ctx = graph.getContext();
  llvm::DenseSet<const Node *> stale; // operands changed since inferred
  auto markUsers = [&](const Value *v) {
    for (const Use &u : v->getUses())
      if (u.user)
        stale.insert(u.user);
  };
  unsigned folded = 0;
  for (auto it = graph.getNodes().begin(); it != graph.getNodes().end();) {
    Node &n = *it++;
    if (stale.erase(&n)) {
      llvm::SmallVector<const TensorType *, 2> before;
      for (const Value *r : n.getResults())
        before.push_back(r->getType());
      if (auto err = inferNodeTypes(n))
        return std::move(err);
      for (unsigned i = 0; i < n.getNumResults(); ++i)
        if (n.getResult(i)->getType() != before[i])
          markUsers(n.getResult(i));
    }
    auto results = foldNode(n, options);
    if (!results)
      continue;
    std::vector<std::string> names;
    llvm::SmallVector<Value *, 2> constants;
    for (unsigned i = 0; i < n.getNumResults(); ++i) {
      Value *old = n.getResult(i);
      const TensorType *t = foldedType(ctx, old, *(*results)[i]);
      Node *c = graph.createNode(ops::Constant, {}, {{t, ""}},
                                 {{"value", Attribute((*results)[i])}}, "", &n);
      markUsers(old);
      old->replaceAllUsesWith(c->getResult());
      names.push_back(old->getName().str());
      constants.push_back(c->getResult());
    }
    // Constants only this node read go with it.
    llvm::SmallVector<Node *, 4> operandNodes;
    for (Value *v : n.getOperands())
      if (v && v->getDefiningNode() &&
          v->getDefiningNode()->isa(ops::Constant) &&
          !llvm::is_contained(operandNodes, v->getDefiningNode()))
        operandNodes.push_back(v->getDefiningNode());
    n.dropAllOperands();
    graph.eraseNode(&n);
    // (An initializer a user may override stays: the graph lists it.)
    for (Node *c : operandNodes)
      if (!c->getResult()->hasUses() &&
          !options.overridable->count(c->getResult()->getName()))
        graph.eraseNode(c);
    // The names are free now: the constants take them.
    for (unsigned i = 0; i < constants.size(); ++i)
      if (!names[i].empty())
        constants[i]->setName(names[i]);
    ++folded;
  }
  return folded;
}

bool qopt::isNoOpCast(const Node &n) {
  std::optional<int64_t> toAttr = n.getIntAttr("to");
  if (!n.isa(ops::Cast) || n.getNumOperands() != 1 || !n.getOperand(0) ||
      n.getNumResults() != 1 || !toAttr)
    return false;
  const TensorType *in = n.getOperand(0)->getType();
  std::optional<ElementKind> to = elementKindFromOnnxDataType(*toAttr);
  return to && *to != ElementKind::Unknown && in->getStorageKind() == *to &&
         n.getResult()->getType() == in;
}

unsigned qopt::removeNoOpCasts(Graph &graph) {
  unsigned removed = 0;
  for (auto it = graph.getNodes().begin(); it != graph.getNodes().end();) {
    Node &n = *it++;
    if (!isNoOpCast(n) || n.getResult()->isGraphOutput() ||
        n.getResult()->isCaptured())
      continue;
    n.getResult()->replaceAllUsesWith(n.getOperand(0));
    n.dropAllOperands();
    graph.eraseNode(&n);
    ++removed;
  }
  return removed;
}
