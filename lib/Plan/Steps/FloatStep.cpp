//===- FloatStep.cpp - Ops on the reference kernels: fields, checks, work -===//
//
// A float step runs its node's reference interpreter kernel
// (FloatStepRun.cpp has how, and the loops of its own it takes for the hot
// ops). Here: its fields in a plan file (the op, its attributes and
// quantized types), what its kernel relies on (the step passes the IR's
// verifier as a node of a graph of its own), and its work (the MACs of a
// conv, matmul or gemm, the taps of a pool, else the elements it touches).
//
// The kind's row is in qopt/Plan/PlanSteps.def.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/Steps/FloatStep.h"

#include "PlanFields.h"
#include "PlanVerifier.h"
#include "PlanWork.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/Verifier.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/ResourceLimits.h"

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;
using namespace qopt::plan::planfile;

llvm::Error FloatStep::writeFields(planfile::PlanEncoder &encoder) const {
  if (!KernelRegistry::get().lookup(op.op))
    return makeError("float step '" + getName() + "': op " + op.op +
                     " has no kernel a reader could find");
  FieldSink &out = encoder.out;
  out.i64(opset, "opset");
  out.string(op.op, "float op");
  out.string(op.description, "float op");
  out.u64(op.attributes.size(), "attributes");
  for (const NamedAttribute &a : op.attributes) {
    out.string(a.name, "attribute name");
    encoder.attribute(a.value);
  }
  out.u64(op.operandQuantTypes.size(), "operand types");
  for (const QuantType *q : op.operandQuantTypes)
    encoder.quantType(q);
  out.u64(op.resultQuantTypes.size(), "result types");
  for (const QuantType *q : op.resultQuantTypes)
    encoder.quantType(q);
  out.u64(op.resultPresent.size(), "results");
  for (bool present : op.resultPresent)
    out.flag(present, "result present");
  return llvm::Error::success();
}

std::unique_ptr<PlanStep> planfile::readFloatStep(PlanDecoder &decoder,
                                                  Plan &plan,
                                                  const std::string &name) {
  FieldSource &in = decoder.in;
  int64_t opset = in.i64("opset");
  KernelOp op;
  op.op = in.string("float op");
  op.description = in.string("float op");
  size_t attributes = in.count(9, "attributes");
  for (size_t i = 0; i < attributes && !in.failed; ++i) {
    std::string attrName = in.string("attribute name");
    std::optional<Attribute> value = decoder.attribute();
    if (value)
      op.attributes.push_back({std::move(attrName), std::move(*value)});
  }
  op.operandQuantTypes.resize(in.count(1, "operand types"));
  for (const QuantType *&q : op.operandQuantTypes)
    q = decoder.quantType(plan.types);
  op.resultQuantTypes.resize(in.count(1, "result types"));
  for (const QuantType *&q : op.resultQuantTypes)
    q = decoder.quantType(plan.types);
  size_t results = in.count(1, "results");
  for (size_t i = 0; i < results; ++i)
    op.resultPresent.push_back(in.flag("result present"));
  if (in.failed)
    return nullptr;
  KernelFn fn = KernelRegistry::get().lookup(op.op);
  if (!fn) {
    in.fail("float step '" + name + "': this qopt has no kernel for " + op.op);
    return nullptr;
  }
  return std::make_unique<FloatStep>(name, std::move(op), fn, opset);
}

/// The float step as a node of a graph of its own, through the IR's
/// verifier: operand kinds, attributes, and the result types its op
/// infers from the operands (constants by their values) against the
/// step's result tensors. A kernel then sees what it would in the
/// interpreter, whose graphs passed the same checks.
static llvm::Error verifyAsNode(const Plan &plan, const FloatStep &step) {
  const KernelOp &op = step.getOp();
  Context ctx;
  Graph graph(ctx);
  auto typeOf = [&](const PlanTensor &t, const QuantType *q) {
    const Type *element =
        q ? static_cast<const Type *>(ctx.getQuantType(
                q->getStorageKind(), q->getExpressedKind(),
                q->isPerAxis() ? std::optional<int64_t>(q->getAxis())
                               : std::nullopt,
                q->getScales(), q->getZeroPoints(), q->getBlockSize()))
          : ctx.getElementType(t.kind);
    return ctx.getTensorType(t.shape, element);
  };
  std::vector<Value *> operands;
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    if (step.inputs[i] < 0) {
      operands.push_back(nullptr);
      continue;
    }
    const PlanTensor &t = plan.tensors[step.inputs[i]];
    const TensorType *type = typeOf(t, op.getOperandQuantType(i));
    std::string name = "operand" + std::to_string(i);
    if (!t.constant || t.kind == ElementKind::String) {
      operands.push_back(graph.addInput(type, name));
      continue;
    }
    auto value = std::make_shared<const DenseElements>(
        t.kind, t.shape,
        std::string(t.constant->bytes(), t.constant->byteSize()));
    operands.push_back(graph
                           .createNode(ops::Constant, {}, {{type, name}},
                                       {{"value", Attribute(std::move(value))}})
                           ->getResult());
  }
  std::vector<ResultSpec> results;
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    if (step.outputs[i] < 0) {
      results.push_back({ctx.getUnknownTensorType(), "", true});
      continue;
    }
    const PlanTensor &t = plan.tensors[step.outputs[i]];
    results.push_back(
        {typeOf(t, op.getResultQuantType(i)), "result" + std::to_string(i)});
  }
  Node *node =
      graph.createNode(op.op, operands, results, op.attributes, "step");
  for (unsigned i = 0; i < node->getNumResults(); ++i)
    if (!node->getResult(i)->isAbsent())
      graph.addOutput(node->getResult(i));
  return verifyGraph(graph);
}

/// A float step's kernel trusts its operand and result counts to be its
/// op's (in a graph, the IR's verifier sees to that): the op table's
/// bounds, or one result for the ops the table does not define.
llvm::Error FloatStep::verify(const PlanVerifier &check) const {
  const FloatStep &step = *this;
  const Plan &plan = check.getPlan();
  const KernelOp &op = step.getOp();
  unsigned operands = op.getNumOperands(), results = op.getNumResults();
  const OpDef *def = lookupOpDef(op.op);
  bool fits = step.inputs.size() == operands &&
              step.outputs.size() == results &&
              op.resultQuantTypes.size() <= results &&
              (def ? operands >= def->getMinOperands() &&
                         operands <= def->getMaxOperands() &&
                         results >= def->getMinResults() &&
                         results <= def->getMaxResults() && results > 0
                   : results == 1);
  if (!fits)
    return makeError(llvm::Twine(step.inputs.size()) + " operands and " +
                     llvm::Twine(step.outputs.size()) + " results do not fit " +
                     op.op);
  if (auto err = check.checkIds(step, /*optional=*/true))
    return err;
  return verifyAsNode(plan, step);
}

std::optional<uint64_t> FloatStep::getFloatMacs(const Plan &plan) const {
  const FloatStep &step = *this;
  const KernelOp &op = step.getOp();
  auto shapeOf = [&](size_t i, bool result) -> const Shape * {
    const std::vector<int> &ids = result ? step.outputs : step.inputs;
    if (i >= ids.size() || ids[i] < 0)
      return nullptr;
    return &plan.tensors[ids[i]].shape;
  };
  const Shape *y = shapeOf(0, true);
  uint64_t results = y ? planwork::elementsOf(*y) : 0;
  llvm::StringRef name = op.op;
  // Convolutions: each output sums weight elements / output channels.
  int weight = -1;
  if (name == ops::Conv || name == ops::ConvInteger || name == ops::QConv)
    weight = 1;
  else if (name == ops::QLinearConv)
    weight = 3;
  if (weight >= 0)
    if (const Shape *w = shapeOf(weight, false); w && !w->empty())
      return saturatingProduct(
          {results,
           planwork::elementsOf(*w) / uint64_t(std::max<int64_t>((*w)[0], 1))});
  if (name == ops::ConvTranspose || name == ops::QConvTranspose) {
    const Shape *x = shapeOf(0, false), *w = shapeOf(1, false);
    if (x && w && !w->empty())
      return saturatingProduct(
          {planwork::elementsOf(*x),
           planwork::elementsOf(*w) / uint64_t(std::max<int64_t>((*w)[0], 1))});
  }
  // Products: each output sums K, at most the larger of A's last two dims.
  if (name == ops::MatMul || name == ops::MatMulInteger ||
      name == ops::QLinearMatMul || name == ops::QMatmul || name == ops::Gemm ||
      name == ops::QGemm || name == ops::MsQGemm) {
    const Shape *a = shapeOf(0, false);
    int64_t depth = 1;
    if (a)
      for (size_t i = a->size() >= 2 ? a->size() - 2 : 0; i < a->size(); ++i)
        depth = std::max(depth, (*a)[i]);
    return saturatingProduct({results, uint64_t(depth)});
  }
  if (name == ops::MaxPool || name == ops::AveragePool || name == ops::QPool ||
      name == ops::MsQLinearAveragePool) {
    const Shape *x = shapeOf(0, false);
    const Attribute *kernel = op.getAttr("kernel_shape");
    if (x && kernel) {
      uint64_t taps = 1;
      std::vector<int64_t> k = kernel->getInts();
      for (size_t i = 0; i < k.size() && i + 2 < x->size(); ++i)
        taps = saturatingProduct({taps, uint64_t(std::max<int64_t>(
                                            std::min(k[i], (*x)[i + 2]), 1))});
      return saturatingProduct({results, taps});
    }
  }
  return std::nullopt;
}

uint64_t FloatStep::getWork(const Plan &plan) const {
  if (std::optional<uint64_t> macs = getFloatMacs(plan))
    return *macs;
  return getElementsTouched(plan);
}
