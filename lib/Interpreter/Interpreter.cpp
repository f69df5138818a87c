//===- Interpreter.cpp - Reference interpreter over qIR -------------------===//

#include "qopt/Interpreter/Interpreter.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"
#include "qopt/Interpreter/Kernel.h"
#include "qopt/Support/Error.h"

#include "llvm/ADT/DenseMap.h"

#include <cmath>
#include <random>

using namespace qopt;
using namespace qopt::interp;

Interpreter::Interpreter(const Graph &graph, int64_t opset)
    : graph(graph), opset(opset) {
  // Free each value after its last reading node (graph outputs never).
  llvm::DenseMap<const Value *, size_t> last;
  size_t index = 0;
  for (const Node &n : graph.getNodes()) {
    for (const Value *v : n.getOperands())
      if (v)
        last[v] = index;
    ops.push_back(KernelOp::fromNode(n));
    ++index;
  }
  lastUses.resize(index);
  for (auto &[v, i] : last)
    if (!v->isGraphOutput())
      lastUses[i].push_back(v);
}

llvm::Expected<std::unique_ptr<Interpreter>>
Interpreter::create(const Model &model) {
  const Graph &g = model.getGraph();
  const KernelRegistry &kernels = KernelRegistry::get();
  for (const Node &n : g.getNodes())
    if (!kernels.lookup(n.getOp()))
      return makeError(DiagLocation::node(n.getName()),
                       n.describe() +
                           ": the reference interpreter cannot run op '" +
                           n.getOp() + "'");
  int64_t opset = model.getDefaultOpsetVersion();
  return std::unique_ptr<Interpreter>(new Interpreter(g, opset ? opset : 13));
}

llvm::Expected<std::vector<Tensor>> Interpreter::run(const TensorMap &inputs,
                                                     const Hooks *hooks) const {
  llvm::DenseMap<const Value *, Tensor> values;
  // The values held between nodes and what each node allocates count
  // against the memory limit; the kernels charge their work.
  RunBudget budget;
  ScopedRunBudget scope(budget);
  uint64_t held = 0;
  for (const Value *in : graph.getInputs()) {
    auto it = inputs.find(in->getName().str());
    if (it == inputs.end())
      return makeError(DiagLocation::value(in->getName()),
                       "no value given for graph input '" + in->getName() +
                           "'");
    const TensorType *t = in->getType();
    const Tensor &given = it->second;
    if (t->getStorageKind() != ElementKind::Unknown &&
        t->getStorageKind() != given.kind())
      return makeError(DiagLocation::value(in->getName()),
                       "graph input '" + in->getName() + "' expects " +
                           getElementKindName(t->getStorageKind()) + ", got " +
                           getElementKindName(given.kind()));
    if (t->hasRank()) {
      bool ok = t->getRank() == given.rank();
      for (int64_t d = 0; ok && d < t->getRank(); ++d)
        ok = !t->getShape()[d].isStatic() ||
             t->getShape()[d].size == given.dim(d);
      if (!ok)
        return makeError(DiagLocation::value(in->getName()),
                         "graph input '" + in->getName() + "' expects shape " +
                             typeToString(t) + ", got " +
                             shapeToString(given.shape()));
    }
    values[in] = given;
    held += given.byteSize();
  }
  budget.setHeldBytes(held);
  const KernelRegistry &kernels = KernelRegistry::get();
  size_t index = 0;
  for (const Node &n : graph.getNodes()) {
    std::vector<const Tensor *> operands;
    for (const Value *v : n.getOperands()) {
      if (!v) {
        operands.push_back(nullptr);
        continue;
      }
      if (hooks && hooks->operandOverride)
        if (const Tensor *t = hooks->operandOverride(*v)) {
          operands.push_back(t);
          continue;
        }
      auto it = values.find(v);
      if (it == values.end())
        return makeError(DiagLocation::node(n.getName()),
                         n.describe() + ": operand '" + v->getName() +
                             "' has no value");
      operands.push_back(&it->second);
    }
    KernelContext ctx(ops[index], std::move(operands), opset);
    if (auto err = kernels.lookup(n.getOp())(ctx))
      return std::move(err);
    if (hooks && hooks->afterNode)
      hooks->afterNode(n, ctx.outputs);
    for (unsigned i = 0; i < n.getNumResults(); ++i) {
      if (n.getResult(i)->isAbsent())
        continue;
      if (!ctx.outputs[i].isValid())
        return makeError(DiagLocation::node(n.getName()),
                         n.describe() + ": kernel produced no result #" +
                             llvm::Twine(i));
      held += ctx.outputs[i].byteSize();
      values[n.getResult(i)] = std::move(ctx.outputs[i]);
    }
    for (const void *dead : lastUses[index]) {
      auto it = values.find(static_cast<const Value *>(dead));
      if (it == values.end())
        continue;
      held -= it->second.byteSize();
      values.erase(it);
    }
    budget.setHeldBytes(held);
    ++index;
  }
  std::vector<Tensor> outputs;
  for (const Value *out : graph.getOutputs()) {
    auto it = values.find(out);
    if (it == values.end())
      return makeError(DiagLocation::value(out->getName()),
                       "graph output '" + out->getName() + "' has no value");
    outputs.push_back(it->second);
  }
  return outputs;
}

llvm::Expected<TensorMap>
interp::makeRandomInputs(const Graph &graph, uint64_t seed,
                         const std::map<std::string, int64_t> &dims,
                         InputDistribution dist) {
  std::vector<InputSpec> specs;
  for (const Value *in : graph.getInputs()) {
    const TensorType *t = in->getType();
    if (!t->hasRank())
      return makeError(DiagLocation::value(in->getName()),
                       "graph input '" + in->getName() +
                           "' has no known rank; give its data with --input");
    Shape shape;
    for (const Dim &d : t->getShape()) {
      if (d.isStatic()) {
        shape.push_back(d.size);
        continue;
      }
      auto it = dims.find(d.isSymbolic() ? d.symbol : "?");
      shape.push_back(it == dims.end() ? 1 : it->second);
    }
    InputSpec spec{in->getName().str(), t->getStorageKind(), shape};
    // Token ids and other indices: in range of every Gather they index.
    for (const Use &u : in->getUses()) {
      if (!u.user || !u.user->isa(ops::Gather) || u.index != 1)
        continue;
      const TensorType *data = u.user->getOperand(0)->getType();
      if (!data->hasRank())
        continue;
      int64_t rank = data->getShape().size();
      int64_t axis = getIntAttrOr(*u.user, "axis", 0);
      axis = axis < 0 ? axis + rank : axis;
      if (axis < 0 || axis >= rank || !data->getShape()[axis].isStatic())
        continue;
      int64_t size = data->getShape()[axis].size;
      if (size > 0 && (spec.indexBound == 0 || size < spec.indexBound))
        spec.indexBound = size;
    }
    specs.push_back(std::move(spec));
  }
  return makeRandomInputs(specs, seed, dist);
}

llvm::Expected<TensorMap>
interp::makeRandomInputs(llvm::ArrayRef<InputSpec> specs, uint64_t seed,
                         InputDistribution dist) {
  TensorMap out;
  unsigned index = 0;
  for (const InputSpec &in : specs) {
    ElementKind kind = in.kind;
    const Shape &shape = in.shape;
    if (kind == ElementKind::Unknown || kind == ElementKind::String)
      return makeError(DiagLocation::value(in.name),
                       "graph input '" + in.name +
                           "' has no numeric element type");
    auto tensor = Tensor::allocate(kind, shape);
    if (!tensor)
      return makeError(DiagLocation::value(in.name),
                       "graph input '" + in.name +
                           "': " + llvm::toString(tensor.takeError()));
    std::mt19937_64 rng(seed * 7919 + index++);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    int64_t n = tensor->numElements();
    if (isFloatKind(kind)) {
      bool image = dist != InputDistribution::Uniform && shape.size() == 4;
      static const double mean[3] = {0.485, 0.456, 0.406};
      static const double stdev[3] = {0.229, 0.224, 0.225};
      Shape strides = stridesOf(shape);
      for (int64_t i = 0; i < n; ++i) {
        double v;
        if (image) {
          int64_t c = (i / strides[1]) % shape[1];
          int64_t y = (i / strides[2]) % shape[2];
          int64_t x = i % shape[3];
          double smooth = 0.5 + 0.25 * std::sin(0.11 * x + 0.7 * c) *
                                    std::cos(0.07 * y + 0.3 * c);
          v = std::min(1.0, std::max(0.0, smooth + 0.2 * (unit(rng) - 0.5)));
          if (dist == InputDistribution::ImageNet && shape[1] == 3)
            v = (v - mean[c]) / stdev[c];
        } else {
          v = unit(rng) * 2.0 - 1.0;
        }
        tensor->setDouble(i, v);
      }
    } else {
      auto range = getIntegerRange(kind);
      bool narrow = getElementByteSize(kind) <= 2;
      int64_t lo = narrow ? range.first : 0;
      int64_t hi = narrow ? range.second : 7;
      if (in.indexBound > 0) {
        lo = 0;
        hi = std::min(in.indexBound - 1, range.second);
      }
      std::uniform_int_distribution<int64_t> ints(lo, hi);
      for (int64_t i = 0; i < n; ++i)
        tensor->setInt(i, ints(rng));
    }
    out[in.name] = std::move(*tensor);
  }
  return out;
}
