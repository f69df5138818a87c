//===- OpInference.cpp - Checking nodes and inferring their types ---------===//
//
// The driver over the op table (OpDefinition.cpp): attributes checked
// against their specs, result types inferred from the operands by each
// op's hook (ShapeInference*.cpp), and the graph-wide passes that refine
// every value's type in node order.
//
//===----------------------------------------------------------------------===//

#include "OpImpl.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/Support/Error.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace qopt;
using namespace qopt::opimpl;

//===----------------------------------------------------------------------===//
// Inference driver
//===----------------------------------------------------------------------===//

llvm::Error opimpl::nodeError(const Node &n, const llvm::Twine &msg) {
  return makeError(DiagLocation::node(n.getName()), n.describe() + ": " + msg);
}

std::string qopt::shapeToText(llvm::ArrayRef<Dim> shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += "x";
    const Dim &d = shape[i];
    s += d.isStatic()     ? std::to_string(d.size)
         : d.isSymbolic() ? "\"" + d.symbol + "\""
                          : "?";
  }
  return s.empty() ? "scalar" : s;
}

/// The plain kind of an element type (storage kind for quant types).
static ElementKind kindOf(const Type *elem) {
  if (const auto *q = llvm::dyn_cast<QuantType>(elem))
    return q->getStorageKind();
  return llvm::cast<ElementType>(elem)->getKind();
}

static bool attrHasKind(const Attribute &a, AttrKind kind) {
  switch (kind) {
  case AttrKind::Int:
    return a.getIf<int64_t>();
  case AttrKind::Float:
    return a.getIf<float>();
  case AttrKind::String:
    return a.getIf<std::string>();
  case AttrKind::Ints:
    return a.getIf<std::vector<int64_t>>() ||
           (a.getIf<EmptyList>() &&
            a.getIf<EmptyList>()->kind == EmptyList::Ints);
  case AttrKind::Floats:
    return a.getIf<std::vector<float>>() ||
           (a.getIf<EmptyList>() &&
            a.getIf<EmptyList>()->kind == EmptyList::Floats);
  case AttrKind::Strings:
    return a.getIf<std::vector<std::string>>() ||
           (a.getIf<EmptyList>() &&
            a.getIf<EmptyList>()->kind == EmptyList::Strings);
  case AttrKind::Tensor:
    return a.getIf<DenseElementsRef>();
  case AttrKind::Graph:
    return a.getIf<OpaqueAttr>();
  }
  return false;
}

static const char *attrKindName(AttrKind kind) {
  switch (kind) {
  case AttrKind::Int:
    return "an int";
  case AttrKind::Float:
    return "a float";
  case AttrKind::String:
    return "a string";
  case AttrKind::Ints:
    return "a list of ints";
  case AttrKind::Floats:
    return "a list of floats";
  case AttrKind::Strings:
    return "a list of strings";
  case AttrKind::Tensor:
    return "a tensor";
  case AttrKind::Graph:
    return "a graph";
  }
  return "?";
}

llvm::Error qopt::verifyAttributes(const Node &n, const OpDef &def) {
  for (const NamedAttribute &a : n.getAttrs()) {
    const AttrSpec *spec = def.lookupAttr(a.name);
    if (!spec) {
      if (n.getDialect() == "q")
        return nodeError(n, "unknown attribute '" + a.name + "'");
      continue; // older opsets' attributes travel untouched
    }
    if (!attrHasKind(a.value, spec->kind))
      return nodeError(n, "attribute '" + a.name + "' must be " +
                              attrKindName(spec->kind));
    if (!spec->oneOf.empty()) {
      const std::string *s = a.value.getIf<std::string>();
      llvm::SmallVector<llvm::StringRef, 8> legal;
      spec->oneOf.split(legal, '|');
      if (s && !llvm::is_contained(legal, llvm::StringRef(*s)))
        return nodeError(n, "attribute '" + a.name + "' is '" + *s +
                                "', not one of " + spec->oneOf);
    }
    if (spec->isAxis && n.getNumOperands() > 0 && n.getOperand(0) &&
        n.getOperand(0)->getType()->hasRank()) {
      const int64_t *axis = a.value.getIf<int64_t>();
      int64_t rank = n.getOperand(0)->getType()->getRank();
      if (axis && (*axis < -rank || *axis >= std::max<int64_t>(rank, 1)))
        return nodeError(n, "attribute '" + a.name + "' is " +
                                llvm::Twine(*axis) + ", not an axis of rank " +
                                llvm::Twine(rank));
    }
  }
  for (const AttrSpec &spec : def.attributes)
    if (spec.required && !n.getAttr(spec.name))
      return nodeError(n, "required attribute '" + spec.name + "' is missing");
  return llvm::Error::success();
}

llvm::Expected<std::vector<const TensorType *>>
qopt::inferResultTypes(const Node &n) {
  const OpDef *def = n.getOpDef();
  std::vector<const TensorType *> current;
  for (const Value *r : n.getResults())
    current.push_back(r->getType());
  if (!def || !def->infer)
    return current;
  if (n.getNumOperands() < def->getMinOperands() ||
      n.getNumOperands() > def->getMaxOperands() ||
      n.getNumResults() < def->getMinResults() ||
      n.getNumResults() > def->getMaxResults())
    return current; // the verifier reports counts
  for (unsigned i = 0; i < n.getNumOperands(); ++i)
    if (!n.getOperand(i) && !def->operandSlot(i)->optional)
      return nodeError(n, "required operand '" + def->operandSlot(i)->name +
                              "' is missing");
  // Inference reads attributes: they must have their schema's kinds.
  if (auto err = verifyAttributes(n, *def))
    return std::move(err);

  InferenceContext ctx(n, *def);
  Context &c = ctx.ctx;
  bool keepsQuant =
      def->hasTrait(OpTrait::DataMovement) || def->hasTrait(OpTrait::Monotonic);
  // Element types from the signature: a type variable takes the element of
  // the first operand bound to it.
  llvm::SmallVector<std::pair<llvm::StringRef, const Type *>, 4> bound;
  auto lookupBound = [&](llvm::StringRef var) -> const Type * {
    for (auto &[name, elem] : bound)
      if (name == var)
        return elem;
    return nullptr;
  };
  for (unsigned i = 0; i < n.getNumOperands(); ++i) {
    const SignatureSlot *slot = def->operandSlot(i);
    const Value *v = n.getOperand(i);
    if (!slot || slot->typeVar.empty() || !v)
      continue;
    const Type *elem = v->getType()->getElementType();
    if (kindOf(elem) != ElementKind::Unknown && !lookupBound(slot->typeVar))
      bound.push_back({slot->typeVar, elem});
  }
  for (unsigned i = 0; i < n.getNumResults(); ++i) {
    const SignatureSlot *slot = def->resultSlot(i);
    const Type *elem = nullptr;
    if (!slot->typeVar.empty()) {
      if (const Type *b = lookupBound(slot->typeVar)) {
        elem = b;
        if (!keepsQuant && llvm::isa<QuantType>(elem))
          elem = c.getElementType(kindOf(elem));
      }
    } else if (llvm::isPowerOf2_32(slot->allowed)) {
      for (unsigned k = 1; k <= static_cast<unsigned>(ElementKind::String); ++k)
        if (typeSetOf(static_cast<ElementKind>(k)) == slot->allowed)
          elem = c.getElementType(static_cast<ElementKind>(k));
    }
    if (!elem) // not determined by the operands: keep what the node says
      elem = current[i]->getElementType();
    ctx.setResultElement(i, elem);
  }
  if (auto err = def->infer(ctx))
    return std::move(err);
  std::vector<const TensorType *> inferred = ctx.takeResultTypes();

  // Per-axis parameters follow the data through the op's remap function.
  if (keepsQuant && n.getOperand(0)) {
    const TensorType *in = n.getOperand(0)->getType();
    for (unsigned i = 0; i < inferred.size(); ++i) {
      const QuantType *q = inferred[i]->getQuantType();
      if (!q || !q->isPerAxis())
        continue;
      // A block-wise type's blocks do not follow a reshape or transpose.
      llvm::Expected<int64_t> axis =
          q->isBlocked()
              ? nodeError(n, "block-wise quantization cannot cross this op")
          : def->remapAxis && in->hasRank() && inferred[i]->hasRank()
              ? def->remapAxis(n, q->getAxis(), in->getShape(),
                               inferred[i]->getShape())
              : nodeError(n, "per-axis quantization cannot cross this op");
      const Type *elem;
      if (axis) {
        elem = c.getQuantType(q->getStorageKind(), q->getExpressedKind(), *axis,
                              q->getScales(), q->getZeroPoints());
      } else {
        llvm::consumeError(axis.takeError());
        elem = c.getElementType(q->getStorageKind());
      }
      inferred[i] = inferred[i]->withElementType(elem);
    }
  }
  return inferred;
}

static const Type *meetElements(const Type *a, const Type *b) {
  if (a == b)
    return a;
  ElementKind ka = kindOf(a), kb = kindOf(b);
  if (ka == ElementKind::Unknown)
    return b;
  if (kb == ElementKind::Unknown)
    return a;
  if (ka != kb)
    return nullptr;
  bool qa = llvm::isa<QuantType>(a), qb = llvm::isa<QuantType>(b);
  if (qa && qb)
    return nullptr; // different parameters
  return qa ? a : b;
}

const TensorType *qopt::meetTypes(const TensorType *a, const TensorType *b) {
  const Type *elem = meetElements(a->getElementType(), b->getElementType());
  if (!elem)
    return nullptr;
  Context &c = a->getContext();
  if (!a->hasRank() && !b->hasRank())
    return c.getUnrankedTensorType(elem);
  if (!a->hasRank())
    return b->withElementType(elem);
  if (!b->hasRank())
    return a->withElementType(elem);
  if (a->getRank() != b->getRank())
    return nullptr;
  std::vector<Dim> dims;
  for (int64_t i = 0; i < a->getRank(); ++i) {
    const Dim &x = a->getShape()[i], &y = b->getShape()[i];
    if (x.isStatic() && y.isStatic() && x.size != y.size)
      return nullptr;
    dims.push_back(x.isStatic()     ? x
                   : y.isStatic()   ? y
                   : x.isSymbolic() ? x
                                    : y);
  }
  return c.getTensorType(dims, elem);
}

llvm::Error qopt::inferNodeTypes(Node &n, bool declaredElementsWin) {
  auto inferred = inferResultTypes(n);
  if (!inferred)
    return inferred.takeError();
  for (unsigned i = 0; i < n.getNumResults(); ++i) {
    Value *r = n.getResult(i);
    if (r->isAbsent())
      continue;
    const TensorType *declared = r->getType();
    if (declaredElementsWin &&
        declared->getStorageKind() != ElementKind::Unknown) {
      // Text states element types: only shapes are filled in, and any
      // disagreement is left to the verifier, which says what it is.
      const TensorType *shapeOnly =
          (*inferred)[i]->withElementType(declared->getElementType());
      if (const TensorType *merged = meetTypes(declared, shapeOnly))
        r->setType(merged);
      continue;
    }
    const TensorType *merged = meetTypes(declared, (*inferred)[i]);
    if (!merged && n.isa(ops::Constant))
      continue; // the verifier says how the payload and the type differ
    if (!merged)
      return nodeError(n, "result '" + r->getName() + "' has type " +
                              typeToString(r->getType()) +
                              ", but its operands give " +
                              typeToString((*inferred)[i]));
    r->setType(merged);
  }
  return llvm::Error::success();
}

llvm::Error qopt::inferShapes(Graph &graph, bool declaredElementsWin) {
  for (Node &n : graph.getNodes())
    if (auto err = inferNodeTypes(n, declaredElementsWin))
      return err;
  return llvm::Error::success();
}

llvm::Error qopt::inferShapes(Model &model, bool declaredElementsWin) {
  return inferShapes(model.getGraph(), declaredElementsWin);
}
