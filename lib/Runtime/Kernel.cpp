//===- Kernel.cpp - Kernel context and registry ---------------------------===//

#include "qopt/Runtime/Kernel.h"

using namespace qopt;
using namespace qopt::rt;

int64_t KernelContext::getInt(llvm::StringRef name, int64_t dflt) const {
  if (auto v = node.getIntAttr(name))
    return *v;
  return dflt;
}

float KernelContext::getFloat(llvm::StringRef name, float dflt) const {
  if (const Attribute *a = node.getAttr(name)) {
    if (auto *f = a->getIf<float>())
      return *f;
    if (auto *i = a->getIf<int64_t>())
      return static_cast<float>(*i);
  }
  return dflt;
}

std::string KernelContext::getString(llvm::StringRef name,
                                     llvm::StringRef dflt) const {
  if (const Attribute *a = node.getAttr(name))
    if (auto *s = a->getIf<std::string>())
      return *s;
  return dflt.str();
}

std::vector<int64_t> KernelContext::getInts(llvm::StringRef name,
                                            std::vector<int64_t> dflt) const {
  if (const Attribute *a = node.getAttr(name)) {
    if (auto *v = a->getIf<std::vector<int64_t>>())
      return *v;
    if (a->getIf<EmptyList>())
      return {};
  }
  return dflt;
}

std::vector<float> KernelContext::getFloats(llvm::StringRef name) const {
  if (const Attribute *a = node.getAttr(name))
    if (auto *v = a->getIf<std::vector<float>>())
      return *v;
  return {};
}

const DenseElements *KernelContext::getTensorAttr(llvm::StringRef name) const {
  if (const Attribute *a = node.getAttr(name))
    if (auto *t = a->getIf<DenseElementsRef>())
      return t->get();
  return nullptr;
}

llvm::Error KernelContext::error(const llvm::Twine &msg) const {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 node.describe() + ": " + msg.str());
}

llvm::Error KernelContext::allocateOutput(size_t i, ElementKind kind,
                                          Shape shape) {
  auto t = Tensor::allocate(kind, std::move(shape));
  if (!t)
    return error(llvm::toString(t.takeError()));
  outputs[i] = std::move(*t);
  return llvm::Error::success();
}

llvm::Expected<int64_t> rt::normalizeAxis(const KernelContext &ctx,
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
    registerFusedKernels(r);
    registerMicrosoftKernels(r);
    return r;
  }();
  return registry;
}
