//===- Kernel.cpp - Kernel context and registry ---------------------------===//

#include "qopt/Interpreter/Kernel.h"
#include "qopt/IR/Graph.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/ResourceLimits.h"

using namespace qopt;
using namespace qopt::interp;

KernelOp KernelOp::fromNode(const Node &node) {
  KernelOp k;
  k.op = node.getOp().str();
  k.description = node.describe();
  k.attributes.assign(node.getAttrs().begin(), node.getAttrs().end());
  for (const Value *v : node.getOperands())
    k.operandQuantTypes.push_back(v ? v->getType()->getQuantType() : nullptr);
  for (const Value *v : node.getResults()) {
    k.resultQuantTypes.push_back(v->getType()->getQuantType());
    k.resultPresent.push_back(!v->isAbsent());
  }
  return k;
}

const Attribute *KernelOp::getAttr(llvm::StringRef name) const {
  for (const NamedAttribute &a : attributes)
    if (a.name == name)
      return &a.value;
  return nullptr;
}

int64_t KernelContext::getInt(llvm::StringRef name, int64_t dflt) const {
  if (const Attribute *a = op.getAttr(name))
    if (auto *i = a->getIf<int64_t>())
      return *i;
  return dflt;
}

float KernelContext::getFloat(llvm::StringRef name, float dflt) const {
  if (const Attribute *a = op.getAttr(name)) {
    if (auto *f = a->getIf<float>())
      return *f;
    if (auto *i = a->getIf<int64_t>())
      return static_cast<float>(*i);
  }
  return dflt;
}

std::string KernelContext::getString(llvm::StringRef name,
                                     llvm::StringRef dflt) const {
  if (const Attribute *a = op.getAttr(name))
    if (auto *s = a->getIf<std::string>())
      return *s;
  return dflt.str();
}

std::vector<int64_t> KernelContext::getInts(llvm::StringRef name,
                                            std::vector<int64_t> dflt) const {
  if (const Attribute *a = op.getAttr(name)) {
    if (auto *v = a->getIf<std::vector<int64_t>>())
      return *v;
    if (a->getIf<EmptyList>())
      return {};
  }
  return dflt;
}

std::vector<float> KernelContext::getFloats(llvm::StringRef name) const {
  if (const Attribute *a = op.getAttr(name))
    if (auto *v = a->getIf<std::vector<float>>())
      return *v;
  return {};
}

const DenseElements *KernelContext::getTensorAttr(llvm::StringRef name) const {
  if (const Attribute *a = op.getAttr(name))
    if (auto *t = a->getIf<DenseElementsRef>())
      return t->get();
  return nullptr;
}

llvm::Error KernelContext::error(const llvm::Twine &msg) const {
  return makeError(op.description + ": " + msg);
}

llvm::Error KernelContext::allocateOutput(size_t i, ElementKind kind,
                                          Shape shape) {
  if (i >= outputs.size())
    return error("has no result #" + llvm::Twine(i));
  auto t = Tensor::allocate(kind, std::move(shape));
  if (!t)
    return error(llvm::toString(t.takeError()));
  outputs[i] = std::move(*t);
  return llvm::Error::success();
}

llvm::Error KernelContext::chargeWork(uint64_t count, uint64_t factor) const {
  RunBudget *budget = RunBudget::current();
  if (!budget)
    return llvm::Error::success();
  if (auto err = budget->chargeWork(saturatingProduct({count, factor}), "it"))
    return error(llvm::toString(std::move(err)));
  return llvm::Error::success();
}

llvm::Error KernelContext::chargeScratch(uint64_t count,
                                         uint64_t elementBytes) const {
  RunBudget *budget = RunBudget::current();
  if (!budget)
    return llvm::Error::success();
  if (auto err = budget->chargeMemory(saturatingProduct({count, elementBytes}),
                                      "its scratch"))
    return error(llvm::toString(std::move(err)));
  return llvm::Error::success();
}

llvm::Expected<int64_t> interp::normalizeAxis(const KernelContext &ctx,
                                              int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    return ctx.error("axis " + llvm::Twine(axis) +
                     " is out of range for rank " + llvm::Twine(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<std::string> KernelRegistry::ops() const {
  std::vector<std::string> out;
  for (const auto &e : kernels)
    out.push_back(e.getKey().str());
  std::sort(out.begin(), out.end());
  return out;
}

const KernelRegistry &KernelRegistry::get() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    registerQuantKernels(r);
    registerNNKernels(r);
    registerElementwiseKernels(r);
    registerShapeKernels(r);
    registerIndexKernels(r);
    registerResizeKernels(r);
    registerFusedKernels(r);
    registerMicrosoftKernels(r);
    return r;
  }();
  return registry;
}
