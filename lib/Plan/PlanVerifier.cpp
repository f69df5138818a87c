//===- PlanVerifier.cpp - What a plan's steps rely on when they run -------===//
//
// The steps read and write raw bytes at the offsets their parameters give;
// the builder makes those agree with the tensors, and verifyPlan checks
// that they do before a plan from elsewhere (a plan file) runs:
//
//   tensors  a numeric kind, a shape whose bytes fit the limits, an arena
//            place inside the arena (or a constant of that kind, shape and
//            size), NHWC only for 4-D tensors
//   steps    tensor ids in range, results not constants, and per kind the
//            layouts, kinds and shapes its kernel assumes (a conv's input
//            and output against its geometry, a table's element counts, a
//            channel copy's ranges inside both tensors, ...)
//
// A plan that passes cannot make an int8, table, pool, copy, resize,
// quantize or reformat step touch bytes outside its tensors or its scratch; a
// float step passes the IR's verifier as a node of a graph of its own (operand
// and result counts, kinds, attributes, inferred result types), as every
// node the interpreter runs does. What a plan computes is the file's
// business.
//
//===----------------------------------------------------------------------===//

#include "PlanVerifier.h"
#include "qopt/Support/Error.h"

#include <cmath>

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

llvm::Error PlanVerifier::verify() {
  if (plan.arenaBytes > kMaxPlanBytes)
    return makeError("the arena of " + llvm::Twine(plan.arenaBytes) +
                     " bytes is over the limit");
  referenced.assign(plan.tensors.size(), false);
  for (const auto &s : plan.steps)
    for (const std::vector<int> *ids : {&s->inputs, &s->outputs})
      for (int id : *ids)
        if (id >= 0 && size_t(id) < plan.tensors.size())
          referenced[id] = true;
  for (const std::vector<int> *ids : {&plan.inputs, &plan.outputs})
    for (int id : *ids)
      if (id >= 0 && size_t(id) < plan.tensors.size())
        referenced[id] = true;
  for (size_t id = 0; id < plan.tensors.size(); ++id)
    if (auto err = verifyTensor(static_cast<int>(id)))
      return err;
  for (int id : plan.inputs) {
    if (auto err = checkId(id, "graph input"))
      return err;
    const PlanTensor &t = plan.tensors[id];
    if (t.constant || t.layout != PlanLayout::Onnx)
      return makeError("graph input '" + t.name +
                       "' is a constant or not in ONNX layout");
  }
  for (int id : plan.outputs)
    if (auto err = checkId(id, "graph output"))
      return err;
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (auto err = plan.steps[i]->verify(*this))
      return makeError(DiagLocation::step(i, plan.steps[i]->getName()),
                       "step " + llvm::Twine(i) + " (" +
                           plan.steps[i]->getKindName() + " '" +
                           plan.steps[i]->getName() +
                           "'): " + llvm::toString(std::move(err)));
  return checkPlanBudget(plan);
}

llvm::Error PlanVerifier::checkId(int id, const llvm::Twine &role) const {
  if (id < 0 || static_cast<size_t>(id) >= plan.tensors.size())
    return makeError(role + " names tensor %" + llvm::Twine(id) +
                     ", which the plan does not have");
  return llvm::Error::success();
}

llvm::Error PlanVerifier::verifyTensor(int id) const {
  const PlanTensor &t = plan.tensors[id];
  auto fail = [&](const llvm::Twine &why) {
    return makeError("tensor %" + llvm::Twine(id) + " '" + t.name +
                     "': " + why);
  };
  for (int64_t d : t.shape)
    if (d < 0 || d > kMaxGeometry)
      return fail("dimension " + llvm::Twine(d) + " is out of range");
  auto count = shapeNumElements(t.shape);
  unsigned size = getElementByteSize(t.kind);
  if (!count || uint64_t(*count) > kMaxPlanBytes)
    return fail("too many elements");
  if (uint64_t(*count) * std::max(size, 1u) > kMaxPlanBytes)
    return fail("too many bytes");
  if (t.layout == PlanLayout::Nhwc && t.shape.size() != 4)
    return fail("an NHWC tensor is 4-D");
  if (t.constant) {
    if (t.constant->kind() != t.kind || t.constant->shape() != t.shape ||
        t.constant->byteSize() != t.byteSize())
      return fail("the constant's value is not of the tensor's type");
    // Steps read constants as they are (no stored flip).
    if (t.layout != PlanLayout::Onnx)
      return fail("a constant not in ONNX layout");
    return llvm::Error::success();
  }
  // A tensor nothing reads or writes (a step fused away) has no place.
  if ((!referenced[id] || !requirePlacement) && t.arenaOffset == -1)
    return llvm::Error::success();
  if (size == 0)
    return fail("a tensor in the arena needs a numeric kind");
  if (t.arenaOffset < 0 || t.arenaOffset % 64 != 0 ||
      uint64_t(t.arenaOffset) > plan.arenaBytes ||
      t.byteSize() > plan.arenaBytes - uint64_t(t.arenaOffset))
    return fail("its place in the arena (offset " + llvm::Twine(t.arenaOffset) +
                ", " + llvm::Twine(t.byteSize()) +
                " bytes) is not 64-byte aligned inside the arena of " +
                llvm::Twine(plan.arenaBytes) + " bytes");
  return llvm::Error::success();
}

/// The ids a step reads and writes; `optional` allows -1 (absent).
llvm::Error PlanVerifier::checkOperands(const PlanStep &s, size_t inputs,
                                        size_t outputs, bool optional) const {
  if (s.inputs.size() != inputs || s.outputs.size() != outputs)
    return makeError("expects " + llvm::Twine(inputs) + " inputs and " +
                     llvm::Twine(outputs) + " outputs, has " +
                     llvm::Twine(s.inputs.size()) + " and " +
                     llvm::Twine(s.outputs.size()));
  return checkIds(s, optional);
}

llvm::Error PlanVerifier::checkIds(const PlanStep &s, bool optional) const {
  for (int id : s.inputs)
    if (!(optional && id == -1))
      if (auto err = checkId(id, "an input"))
        return err;
  for (int id : s.outputs) {
    if (optional && id == -1)
      continue;
    if (auto err = checkId(id, "an output"))
      return err;
    if (plan.tensors[id].constant)
      return makeError("writes constant tensor %" + llvm::Twine(id));
  }
  return llvm::Error::success();
}

/// Tensor `id` is NHWC with `shape`, i8 or u8 (`int8`) or else f32.
llvm::Error PlanVerifier::expectNhwc(int id, const Shape &shape, bool int8,
                                     const llvm::Twine &role) const {
  const PlanTensor &t = plan.tensors[id];
  if (t.layout != PlanLayout::Nhwc || t.shape != shape ||
      (int8 ? !isInt8Kind(t.kind) : t.kind != ElementKind::F32))
    return makeError(role + " '" + t.name + "' is " +
                     getElementKindName(t.kind) + shapeToString(t.shape) +
                     (t.layout == PlanLayout::Nhwc ? " nhwc" : "") +
                     "; the step needs " + (int8 ? "i8 or u8" : "f32") +
                     shapeToString(shape) + " nhwc");
  return llvm::Error::success();
}

/// Tensor `id` is `rows` x `columns` in ONNX layout (its last dim the
/// columns), int8 or f32.
llvm::Error PlanVerifier::expectRows(int id, int64_t rows, int64_t columns,
                                     bool int8, const llvm::Twine &role) const {
  const PlanTensor &t = plan.tensors[id];
  if (t.layout != PlanLayout::Onnx || t.shape.empty() ||
      t.shape.back() != columns || t.numElements() != rows * columns ||
      (int8 ? !isInt8Kind(t.kind) : t.kind != ElementKind::F32))
    return makeError(role + " '" + t.name + "' is " +
                     getElementKindName(t.kind) + shapeToString(t.shape) +
                     (t.layout == PlanLayout::Nhwc ? " nhwc" : "") +
                     "; the step needs " + llvm::Twine(rows) + " rows of " +
                     llvm::Twine(columns) + " " + (int8 ? "i8 or u8" : "f32") +
                     " in ONNX layout");
  return llvm::Error::success();
}

/// A quantize grid onto int8 tensor `y`: a positive finite scale, a zero
/// point of y's type, y's signedness and stored flip.
llvm::Error PlanVerifier::checkGrid(const QuantizeGrid &g,
                                    const PlanTensor &y) const {
  int32_t lowest = g.isSigned ? -128 : 0, highest = g.isSigned ? 127 : 255;
  if (!(g.scale > 0) || !std::isfinite(g.scale) || g.zero < lowest ||
      g.zero > highest || g.isSigned != (y.kind == ElementKind::I8) ||
      g.flip != y.getStoredFlip())
    return makeError("its grid does not fit its result '" + y.name + "'");
  return llvm::Error::success();
}

llvm::Error PlanVerifier::checkWindow(const PoolStep::Window &w) {
  for (int64_t v :
       {w.batch, w.channels, w.inH, w.inW, w.outH, w.outW, w.kernelH, w.kernelW,
        w.strideH, w.strideW, w.dilationH, w.dilationW})
    if (v < 1 || v > kMaxGeometry)
      return makeError("a window parameter is out of range");
  if (w.padTop < 0 || w.padTop > kMaxGeometry || w.padLeft < 0 ||
      w.padLeft > kMaxGeometry)
    return makeError("a pad is out of range");
  return PoolStep::checkGeometry(w);
}

llvm::Error plan::verifyPlan(const Plan &plan, bool requirePlacement) {
  return PlanVerifier(plan, requirePlacement).verify();
}
