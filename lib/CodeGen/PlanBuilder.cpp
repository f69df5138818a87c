//===- PlanBuilder.cpp - Lowering a fused graph to a CPU plan -------------===//
//
// Each value has one home tensor, in the layout its producer writes (NHWC
// for conv, pool and channel copy steps, and for elementwise steps whose
// operands are NHWC; ONNX layout for everything else); a consumer that
// wants the other layout reads a twin made by one reformat step, shared by
// all such consumers. A node whose operands are all constants is run once
// here and its results become constants of the plan.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderImpl.h"
#include "qopt/CodeGen/PlanPasses.h"
#include "qopt/IR/ConstantFolding.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"

#include "llvm/ADT/StringMap.h"

using namespace qopt;
using namespace qopt::codegen;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

std::vector<int> codegen::findProducers(const Plan &plan) {
  std::vector<int> producer(plan.tensors.size(), -1);
  for (size_t i = 0; i < plan.steps.size(); ++i)
    for (int id : plan.steps[i] ? plan.steps[i]->outputs : std::vector<int>())
      if (id >= 0)
        producer[id] = producer[id] == -1 ? int(i) : -2;
  return producer;
}

std::unique_ptr<ChannelCopyStep>
codegen::rebuildCopy(const ChannelCopyStep &old,
                     std::vector<ChannelCopyStep::Piece> pieces,
                     std::vector<int> outputs) {
  auto step = std::make_unique<ChannelCopyStep>(
      old.getName().str(), std::move(pieces), old.getNumTiles());
  step->op = old.op;
  for (const ChannelCopyStep::Piece &p : step->getPieces())
    if (!llvm::is_contained(step->inputs, p.from))
      step->inputs.push_back(p.from);
  step->outputs = std::move(outputs);
  return step;
}

PlanBuilder::PlanBuilder(const Model &model, const PlanBuildOptions &options,
                         Plan &plan)
    : graph(model.getGraph()), options(options), plan(plan),
      opset(model.getDefaultOpsetVersion() ? model.getDefaultOpsetVersion()
                                           : 13) {}

llvm::Expected<Shape> PlanBuilder::staticShape(const Value *v) const {
  const TensorType *t = v->getType();
  Shape shape;
  if (t->hasRank())
    for (const Dim &d : t->getShape()) {
      if (!d.isStatic())
        break;
      shape.push_back(d.size);
    }
  if (!t->hasRank() || static_cast<int64_t>(shape.size()) != t->getRank())
    return makeError("value '" + v->getName() + "' has no static shape (" +
                     typeToString(t) + "); the CPU plan needs every shape");
  ElementKind kind = t->getStorageKind();
  if (kind == ElementKind::Unknown || kind == ElementKind::String)
    return makeError("value '" + v->getName() + "' has element type " +
                     getElementKindName(kind) +
                     "; the CPU plan holds numeric tensors only");
  return shape;
}

int PlanBuilder::addTensor(std::string name, ElementKind kind, Shape shape,
                           PlanLayout layout) {
  PlanTensor t;
  t.name = std::move(name);
  t.kind = kind;
  t.shape = std::move(shape);
  t.layout = layout;
  plan.tensors.push_back(std::move(t));
  return static_cast<int>(plan.tensors.size() - 1);
}

llvm::Expected<int> PlanBuilder::defineResult(const Value *v, PlanLayout layout,
                                              ElementKind kind) {
  auto shape = staticShape(v);
  if (!shape)
    return shape.takeError();
  int id = addTensor(v->getName().str(), kind, std::move(*shape), layout);
  home[v] = id;
  return id;
}

llvm::Expected<int> PlanBuilder::tensorFor(const Value *v, PlanLayout layout) {
  auto it = home.find(v);
  if (it == home.end()) {
    const DenseElements *data = getConstantData(v);
    if (!data)
      return makeError("value '" + v->getName() + "' is read before the " +
                       "plan computes it");
    auto shape = staticShape(v);
    if (!shape)
      return shape.takeError();
    int id = addTensor(v->getName().str(), data->getKind(), *shape,
                       PlanLayout::Onnx);
    plan.tensors[id].constant =
        std::make_shared<const Tensor>(Tensor::fromDense(*data));
    it = home.insert({v, id}).first;
  }
  if (plan.tensors[it->second].layout == layout)
    return it->second;
  auto made = twin.find(v);
  if (made != twin.end())
    return made->second;
  // A copy: adding the twin may move the tensor table.
  PlanTensor from = plan.tensors[it->second];
  if (from.shape.size() != 4)
    return makeError("value '" + v->getName() +
                     "' is not 4-D and has no NHWC layout");
  int id = addTensor(from.name, from.kind, from.shape, layout);
  auto step = std::make_unique<ReformatStep>(
      from.name + (layout == PlanLayout::Nhwc ? " to NHWC" : " to NCHW"));
  step->shape = from.shape;
  step->inputs = {it->second};
  step->outputs = {id};
  plan.steps.push_back(std::move(step));
  twin[v] = id;
  return id;
}

const QuantType *PlanBuilder::copyType(const QuantType *q) {
  if (!q)
    return nullptr;
  std::optional<int64_t> axis;
  if (q->isPerAxis())
    axis = q->getAxis();
  return plan.types.getQuantType(q->getStorageKind(), q->getExpressedKind(),
                                 axis, q->getScales(), q->getZeroPoints(),
                                 q->getBlockSize());
}

KernelOp PlanBuilder::makeKernelOp(const Node &n) {
  KernelOp op = KernelOp::fromNode(n);
  for (const QuantType *&q : op.operandQuantTypes)
    q = copyType(q);
  for (const QuantType *&q : op.resultQuantTypes)
    q = copyType(q);
  return op;
}

void PlanBuilder::addStep(std::unique_ptr<PlanStep> step, const Node &n,
                          std::vector<int> inputs, std::vector<int> outputs) {
  step->op = n.getOp().str();
  step->inputs = std::move(inputs);
  step->outputs = std::move(outputs);
  plan.steps.push_back(std::move(step));
}

PlanLayout PlanBuilder::homeLayout(const Value *v) const {
  auto it = home.find(v);
  return it == home.end() ? PlanLayout::Onnx : plan.tensors[it->second].layout;
}

bool PlanBuilder::isConstant(const Value *v) const {
  auto it = home.find(v);
  return it == home.end() ? getConstantData(v) != nullptr
                          : plan.tensors[it->second].constant != nullptr;
}

bool PlanBuilder::isLayoutFreeElementwise(const Node &n) const {
  if (!hasTrait(n, OpTrait::Elementwise) || n.getNumResults() != 1)
    return false;
  const Value *y = n.getResult();
  auto yShape = staticShape(y);
  if (!yShape) {
    llvm::consumeError(yShape.takeError());
    return false;
  }
  auto perAxis = [](const Value *v) {
    const QuantType *q = v->getType()->getQuantType();
    return q && q->isPerAxis();
  };
  // Reformat steps move 1- and 4-byte elements.
  auto reformable = [](const Value *v) {
    size_t size = getElementByteSize(v->getType()->getStorageKind());
    return size == 1 || size == 4;
  };
  if (yShape->size() != 4 || perAxis(y) || !reformable(y))
    return false;
  for (const Value *v : n.getOperands()) {
    if (!v)
      continue;
    auto shape = staticShape(v);
    if (!shape) {
      llvm::consumeError(shape.takeError());
      return false;
    }
    bool single = shapeNumElements(*shape).value_or(0) == 1;
    if (perAxis(v) || (*shape != *yShape && !single) ||
        (!single && !reformable(v)))
      return false;
  }
  return true;
}

const Value *PlanBuilder::getChannelOperand(const Node &n) const {
  if (!(n.isa(ops::Add) || n.isa(ops::Sub) || n.isa(ops::Mul) ||
        n.isa(ops::Div)) ||
      n.getNumOperands() != 2 || n.getNumResults() != 1)
    return nullptr;
  auto f32Shape = [&](const Value *v) -> std::optional<Shape> {
    if (!v || v->getType()->getQuantType() ||
        v->getType()->getStorageKind() != ElementKind::F32)
      return std::nullopt;
    auto shape = staticShape(v);
    if (!shape) {
      llvm::consumeError(shape.takeError());
      return std::nullopt;
    }
    return *shape;
  };
  auto y = f32Shape(n.getResult());
  if (!y || y->size() != 4)
    return nullptr;
  for (unsigned i = 0; i < 2; ++i) {
    auto whole = f32Shape(n.getOperand(i));
    auto channels = f32Shape(n.getOperand(1 - i));
    if (whole && channels && *whole == *y &&
        *channels == Shape{(*y)[0], (*y)[1], 1, 1} &&
        ((*y)[2] != 1 || (*y)[3] != 1))
      return n.getOperand(1 - i);
  }
  return nullptr;
}

llvm::Error PlanBuilder::addFloatStep(const Node &n) {
  KernelFn fn = KernelRegistry::get().lookup(n.getOp());
  if (!fn)
    return makeError(n.describe() + ": the CPU plan cannot run op '" +
                     n.getOp() + "'");
  KernelOp op = makeKernelOp(n);
  // The plan's own attribute (a Relu fused by a plan pass) means nothing on
  // a node of the graph: a node that carries it runs as the reference
  // interpreter runs it, which ignores it.
  FloatStep::removeReluAfter(op);
  // An elementwise op reads NHWC operands in place when any operand is
  // NHWC already; single elements stay in ONNX layout (any order reads
  // them the same).
  PlanLayout layout = PlanLayout::Onnx;
  if (isLayoutFreeElementwise(n))
    for (const Value *v : n.getOperands())
      if (v && homeLayout(v) == PlanLayout::Nhwc)
        layout = PlanLayout::Nhwc;
  // Add/Sub/Mul/Div of an NHWC tensor and one value per image and channel
  // (an SE block's scale): the step's arithmetic reads the channel operand
  // as it lies ([N, C, 1, 1] is stored alike in both layouts).
  const Value *channelOperand = getChannelOperand(n);
  if (channelOperand) {
    const Value *whole = n.getOperand(n.getOperand(0) == channelOperand);
    layout = homeLayout(whole);
  }
  std::vector<int> inputs;
  for (const Value *v : n.getOperands()) {
    if (!v) {
      inputs.push_back(-1);
      continue;
    }
    auto shape = staticShape(v);
    if (!shape)
      return shape.takeError();
    bool single = shapeNumElements(*shape).value_or(0) == 1;
    auto id = tensorFor(v, single                ? PlanLayout::Onnx
                           : v == channelOperand ? homeLayout(v)
                                                 : layout);
    if (!id)
      return id.takeError();
    inputs.push_back(*id);
  }
  std::vector<int> outputs;
  for (const Value *v : n.getResults()) {
    if (v->isAbsent()) {
      outputs.push_back(-1);
      continue;
    }
    auto id = defineResult(v, layout, v->getType()->getStorageKind());
    if (!id)
      return id.takeError();
    outputs.push_back(*id);
  }
  addStep(
      std::make_unique<FloatStep>(n.getName().str(), std::move(op), fn, opset),
      n, std::move(inputs), std::move(outputs));
  return llvm::Error::success();
}

llvm::Expected<std::vector<Shape>>
PlanBuilder::staticShapes(llvm::ArrayRef<const Value *> values) const {
  std::vector<Shape> shapes;
  for (const Value *v : values) {
    auto shape = staticShape(v);
    if (!shape)
      return shape.takeError();
    shapes.push_back(std::move(*shape));
  }
  return shapes;
}

llvm::Expected<bool> PlanBuilder::addStepFor(
    const Node &n, llvm::ArrayRef<std::pair<const Value *, PlanLayout>> reads,
    const Value *result, PlanLayout resultLayout, ElementKind resultKind,
    llvm::function_ref<std::unique_ptr<PlanStep>(const PlanTensor &)> make) {
  std::vector<int> inputs;
  for (auto [value, layout] : reads) {
    auto id = tensorFor(value, layout);
    if (!id)
      return id.takeError();
    inputs.push_back(*id);
  }
  auto id = defineResult(result, resultLayout, resultKind);
  if (!id)
    return id.takeError();
  addStep(make(plan.tensors[*id]), n, std::move(inputs), {*id});
  return true;
}

llvm::Expected<bool> PlanBuilder::lower(const Node &n) {
  using Lowering = llvm::Expected<bool> (PlanBuilder::*)(const Node &);
  static const llvm::StringMap<Lowering> lowerings = [] {
    llvm::StringMap<Lowering> table;
#define LOWERING(OP, MEMBER) table[ops::OP] = &PlanBuilder::MEMBER;
#include "Lowerings.def"
    return table;
  }();
  auto it = lowerings.find(n.getOp());
  return (this->*(it == lowerings.end() ? &PlanBuilder::lowerTable
                                        : it->second))(n);
}

llvm::Error PlanBuilder::build() {
  plan.isa = options.isa;
  for (const Value *in : graph.getInputs()) {
    auto id =
        defineResult(in, PlanLayout::Onnx, in->getType()->getStorageKind());
    if (!id)
      return makeError("graph input: " + llvm::toString(id.takeError()));
    plan.inputs.push_back(*id);
  }
  for (const Node &n : graph.getNodes()) {
    if (n.getNumResults() == 1 && getConstantData(n.getResult()))
      continue; // read where used
    if (keepsInt4Dequantize(n))
      continue; // its MatMuls read the codes (lowerInt4Gemm)
    llvm::Expected<bool> lowered = lower(n);
    if (!lowered)
      return makeError(DiagLocation::node(n.getName()),
                       n.describe() + ": " +
                           llvm::toString(lowered.takeError()));
    if (*lowered)
      continue;
    if (auto err = addFloatStep(n))
      return err;
  }
  for (const Value *out : graph.getOutputs()) {
    auto id = tensorFor(out, PlanLayout::Onnx);
    if (!id)
      return makeError("graph output: " + llvm::toString(id.takeError()));
    plan.outputs.push_back(*id);
  }
  return runPlanPasses(plan, {}, options.passes);
}

llvm::Expected<std::unique_ptr<Plan>>
qopt::buildPlan(Model &model, const PlanBuildOptions &options) {
  // What the plan would compute on constants is computed once, by the one
  // constant folder: a weight's q.quantize and q.dequantize a float step
  // reads become constants, and what reads them folds after them.
  FoldOptions fold;
  fold.maxElements = kMaxFoldedElements;
  fold.foldQdq = true;
  fold.keepDequantize = keepsInt4Dequantize;
  if (auto folded = foldConstants(model.getGraph(), fold); !folded)
    return folded.takeError();
  auto plan = std::make_unique<Plan>();
  PlanBuilder builder(model, options, *plan);
  if (auto err = builder.build())
    return std::move(err);
  // A plan a run could not afford is refused before anything allocates it.
  if (auto err = checkPlanBudget(*plan))
    return std::move(err);
  if (!options.allowFloatPlan)
    if (auto err = checkMostlyInt8(*plan))
      return std::move(err);
  return plan;
}
