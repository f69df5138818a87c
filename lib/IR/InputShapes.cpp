//===- InputShapes.cpp - Static shapes for a model's inputs ---------------===//

#include "qopt/IR/InputShapes.h"
#include "qopt/IR/ConstantFolding.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/Support/Error.h"

using namespace qopt;

llvm::Error qopt::bindStaticInputShapes(
    Model &m, const std::map<std::string, int64_t> &dims,
    const std::map<std::string, std::vector<int64_t>> &given,
    bool unboundToOne) {
  Graph &g = m.getGraph();
  bool changed = false;
  for (Value *in : g.getInputs()) {
    const TensorType *t = in->getType();
    auto file = given.find(in->getName().str());
    if (!t->hasRank()) {
      if (file == given.end())
        continue;
      in->setType(
          m.getContext().getTensorType(file->second, t->getElementType()));
      changed = true;
      continue;
    }
    std::vector<Dim> shape(t->getShape().begin(), t->getShape().end());
    if (file != given.end() &&
        int64_t(file->second.size()) != static_cast<int64_t>(shape.size()))
      return makeError("input '" + in->getName() + "' has rank " +
                       llvm::Twine(int64_t(file->second.size())) +
                       ", the model's is " + llvm::Twine(shape.size()));
    for (size_t i = 0; i < shape.size(); ++i) {
      Dim &d = shape[i];
      if (file != given.end()) {
        int64_t size = file->second[i];
        if (d.isStatic() && d.size != size)
          return makeError("input '" + in->getName() + "' has " +
                           llvm::Twine(size) + " in dim " + llvm::Twine(i) +
                           ", the model " + llvm::Twine(d.size));
        changed |= !d.isStatic();
        d = Dim::fixed(size);
        continue;
      }
      if (d.isStatic())
        continue;
      auto it = dims.find(d.isSymbolic() ? d.symbol : "?");
      if (it == dims.end() && !unboundToOne)
        continue;
      d = Dim::fixed(it == dims.end() ? 1 : it->second);
      changed = true;
    }
    in->setType(m.getContext().getTensorType(shape, t->getElementType()));
  }
  if (!changed)
    return llvm::Error::success();
  if (auto err = inferShapes(m))
    return err;
  return foldConstants(g).takeError();
}
