//===- PlanBuilder.cpp - Lowering a fused graph to a CPU plan -------------===//
//
//   %y = q.conv(%x, %w, %b, %r) {activation = "relu"}
//        : tensor<1x64x56x56x!q.i8<0.05:-3>>
//     =>
//   conv step  x: NHWC u8 (zero point -3 + 128), w packed for the ISA,
//              epilogue: scale[c] = s_x * s_w[c], bias DQ(b), residual on
//              r's grid, relu, output grid 0.05 : -3 + 128
//
// Each value has one home tensor, in the layout its producer writes (NHWC
// for conv steps, ONNX layout for everything else); a consumer that wants
// the other layout reads a twin made by one reformat step, shared by all
// such consumers.
//
//===----------------------------------------------------------------------===//

#include "qopt/CodeGen/PlanBuilder.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/QuantMath.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSwitch.h"

using namespace qopt;
using namespace qopt::rt;

namespace {

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

/// The activation of a unit's `activation` attribute, if the conv epilogue
/// has it.
std::optional<Activation> parseActivation(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Activation>>(name)
      .Case("none", Activation::None)
      .Case("relu", Activation::Relu)
      .Case("leaky_relu", Activation::LeakyRelu)
      .Case("clip", Activation::Clip)
      .Case("sigmoid", Activation::Sigmoid)
      .Case("tanh", Activation::Tanh)
      .Case("hard_sigmoid", Activation::HardSigmoid)
      .Case("hard_swish", Activation::HardSwish)
      .Case("silu", Activation::Silu)
      .Default(std::nullopt);
}

/// A per-tensor s8/u8 grid over f32: the int8 kernels' activations.
const QuantType *getActivationGrid(const Value *v) {
  const QuantType *q = v ? v->getType()->getQuantType() : nullptr;
  if (!q || q->isPerAxis() || q->getExpressedKind() != ElementKind::F32)
    return nullptr;
  if (q->getStorageKind() != ElementKind::I8 &&
      q->getStorageKind() != ElementKind::U8)
    return nullptr;
  return q;
}

/// The zero point as the kernels store the tensor (u8).
int32_t storedZeroPoint(const QuantType *q) {
  return static_cast<int32_t>(q->getZeroPoint()) +
         (q->getStorageKind() == ElementKind::I8 ? 128 : 0);
}

std::vector<int64_t> intsAttr(const Node &n, llvm::StringRef name,
                              std::vector<int64_t> dflt) {
  if (const Attribute *a = n.getAttr(name))
    return a->getInts();
  return dflt;
}

class PlanBuilder {
public:
  PlanBuilder(const Model &model, const PlanBuildOptions &options, Plan &plan)
      : graph(model.getGraph()), options(options), plan(plan),
        opset(model.getDefaultOpsetVersion() ? model.getDefaultOpsetVersion()
                                             : 13) {}

  llvm::Error build();

private:
  llvm::Expected<Shape> staticShape(const Value *v) const;
  int addTensor(std::string name, ElementKind kind, Shape shape,
                PlanLayout layout);
  /// The tensor holding `v` in `layout`, adding a reformat step if needed.
  llvm::Expected<int> tensorFor(const Value *v, PlanLayout layout);
  /// A new home tensor for result `v`.
  llvm::Expected<int> defineResult(const Value *v, PlanLayout layout,
                                   ElementKind kind);

  /// The conv step of a q.conv, or null when the int8 kernels cannot run
  /// the unit as it is (it then runs as a float step).
  llvm::Expected<std::unique_ptr<ConvStep>> lowerConv(const Node &n);
  llvm::Error addFloatStep(const Node &n);
  const QuantType *copyType(const QuantType *q);
  void assignArena();

  const Graph &graph;
  const PlanBuildOptions &options;
  Plan &plan;
  int64_t opset;
  llvm::DenseMap<const Value *, int> home;
  llvm::DenseMap<const Value *, int> twin;
};

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

llvm::Expected<std::unique_ptr<ConvStep>>
PlanBuilder::lowerConv(const Node &n) {
  std::unique_ptr<ConvStep> none;
  const Value *x = n.getOperand(0);
  const Value *w = n.getNumOperands() > 1 ? n.getOperand(1) : nullptr;
  const Value *b = n.getNumOperands() > 2 ? n.getOperand(2) : nullptr;
  const Value *r = n.getNumOperands() > 3 ? n.getOperand(3) : nullptr;
  const Value *y = n.getResult();
  const QuantType *xq = getActivationGrid(x);
  if (!xq || !w || !x->getType()->hasRank() || x->getType()->getRank() != 4)
    return none;

  // Weights: a constant s8 OIHW tensor, zero points 0, per output channel
  // or per tensor.
  const DenseElements *wData = getConstantData(w);
  const QuantType *wq = w->getType()->getQuantType();
  if (!wData || !wq || wData->getKind() != ElementKind::I8 ||
      wData->getDims().size() != 4 || (wq->isPerAxis() && wq->getAxis() != 0))
    return none;
  for (int64_t z : wq->getZeroPoints())
    if (z != 0)
      return none;

  // The result: a per-tensor int8 grid, or f32.
  const QuantType *yq = getActivationGrid(y);
  if (!yq && (y->getType()->isQuantized() ||
              y->getType()->getStorageKind() != ElementKind::F32))
    return none;
  const QuantType *rq = r ? getActivationGrid(r) : nullptr;
  if (r && !rq)
    return none;

  auto activation = parseActivation(
      n.getAttr("activation") && n.getAttr("activation")->isString()
          ? llvm::StringRef(*n.getAttr("activation")->getIf<std::string>())
          : "none");
  if (!activation)
    return none;

  auto xShape = staticShape(x);
  if (!xShape)
    return xShape.takeError();
  auto yShape = staticShape(y);
  if (!yShape)
    return yShape.takeError();
  llvm::ArrayRef<int64_t> wDims = wData->getDims();
  Int8ConvShape s;
  s.batch = (*xShape)[0];
  s.inC = (*xShape)[1];
  s.inH = (*xShape)[2];
  s.inW = (*xShape)[3];
  s.outC = wDims[0];
  s.kernelH = wDims[2];
  s.kernelW = wDims[3];
  s.groups = n.getIntAttr("group").value_or(1);
  auto strides = intsAttr(n, "strides", {1, 1});
  auto dilations = intsAttr(n, "dilations", {1, 1});
  auto pads = intsAttr(n, "pads", {0, 0, 0, 0});
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4 ||
      s.groups < 1 || s.inC % s.groups || s.outC % s.groups ||
      wDims[1] != s.inC / s.groups)
    return none;
  s.strideH = strides[0];
  s.strideW = strides[1];
  s.dilationH = dilations[0];
  s.dilationW = dilations[1];
  std::string autoPad = "NOTSET";
  if (const Attribute *a = n.getAttr("auto_pad"))
    if (a->isString())
      autoPad = *a->getIf<std::string>();
  if (autoPad == "NOTSET") {
    s.padTop = pads[0];
    s.padLeft = pads[1];
    s.padBottom = pads[2];
    s.padRight = pads[3];
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    auto split = [&](int64_t in, int64_t stride, int64_t k, int64_t d,
                     int64_t &begin, int64_t &end) {
      int64_t out = (in + stride - 1) / stride;
      int64_t total =
          std::max<int64_t>(0, (out - 1) * stride + (k - 1) * d + 1 - in);
      begin = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end = total - begin;
    };
    split(s.inH, s.strideH, s.kernelH, s.dilationH, s.padTop, s.padBottom);
    split(s.inW, s.strideW, s.kernelW, s.dilationW, s.padLeft, s.padRight);
  } else if (autoPad != "VALID") {
    return none;
  }
  if (s.strideH < 1 || s.strideW < 1 || s.dilationH < 1 || s.dilationW < 1 ||
      *yShape != Shape{s.batch, s.outC, s.outH(), s.outW()})
    return none;

  Int8Epilogue e;
  e.inputZero = storedZeroPoint(xq);
  for (int64_t c = 0, count = wq->isPerAxis() ? s.outC : 1; c < count; ++c)
    e.scale.push_back(xq->getScale() * quant::getChannelScale(wq, c));
  if (b) {
    const DenseElements *bData = getConstantData(b);
    const QuantType *bq = b->getType()->getQuantType();
    if (!bData || bData->getNumElements() != s.outC ||
        (!bq && bData->getKind() != ElementKind::F32))
      return none;
    for (int64_t c = 0; c < s.outC; ++c)
      e.bias.push_back(bq ? quant::dequantizeValue(bData->getAsInt(c), bq, c)
                          : static_cast<float>(bData->getAsDouble(c)));
  }
  e.activation = *activation;
  std::vector<float> params;
  if (const Attribute *a = n.getAttr("activation_params"))
    if (auto *v = a->getIf<std::vector<float>>())
      params = *v;
  e.alpha = params.size() > 0 ? params[0] : 0;
  e.beta = params.size() > 1 ? params[1] : 0;
  if (r) {
    auto rShape = staticShape(r);
    if (!rShape)
      return rShape.takeError();
    if (*rShape != *yShape)
      return none;
    e.hasResidual = true;
    e.residualAfterActivation =
        n.getIntAttr("residual_after_activation").value_or(0) != 0;
    e.residualScale = rq->getScale();
    e.residualZero = storedZeroPoint(rq);
  }
  if (yq) {
    e.outputScale = yq->getScale();
    e.outputZero = storedZeroPoint(yq);
  }

  auto xId = tensorFor(x, PlanLayout::Nhwc);
  if (!xId)
    return xId.takeError();
  std::vector<int> inputs{*xId};
  if (r) {
    auto rId = tensorFor(r, PlanLayout::Nhwc);
    if (!rId)
      return rId.takeError();
    inputs.push_back(*rId);
  }
  auto yId = defineResult(y, PlanLayout::Nhwc,
                          yq ? yq->getStorageKind() : ElementKind::F32);
  if (!yId)
    return yId.takeError();
  auto step = std::make_unique<ConvStep>(
      n.getName().str(),
      Int8Conv(options.isa, s,
               reinterpret_cast<const int8_t *>(wData->getRawBytes().data()),
               std::move(e)));
  step->inputs = std::move(inputs);
  step->outputs = {*yId};
  return step;
}

const QuantType *PlanBuilder::copyType(const QuantType *q) {
  if (!q)
    return nullptr;
  std::optional<int64_t> axis;
  if (q->isPerAxis())
    axis = q->getAxis();
  return plan.types.getQuantType(q->getStorageKind(), q->getExpressedKind(),
                                 axis, q->getScales(), q->getZeroPoints());
}

llvm::Error PlanBuilder::addFloatStep(const Node &n) {
  KernelFn fn = KernelRegistry::get().lookup(n.getOp());
  if (!fn)
    return makeError(n.describe() + ": the CPU plan cannot run op '" +
                     n.getOp() + "'");
  KernelOp op = KernelOp::fromNode(n);
  for (const QuantType *&q : op.operandQuantTypes)
    q = copyType(q);
  for (const QuantType *&q : op.resultQuantTypes)
    q = copyType(q);
  std::vector<int> inputs;
  for (const Value *v : n.getOperands()) {
    if (!v) {
      inputs.push_back(-1);
      continue;
    }
    auto id = tensorFor(v, PlanLayout::Onnx);
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
    auto id = defineResult(v, PlanLayout::Onnx, v->getType()->getStorageKind());
    if (!id)
      return id.takeError();
    outputs.push_back(*id);
  }
  auto step =
      std::make_unique<FloatStep>(n.getName().str(), std::move(op), fn, opset);
  step->inputs = std::move(inputs);
  step->outputs = std::move(outputs);
  plan.steps.push_back(std::move(step));
  return llvm::Error::success();
}

/// Greedy placement by size: each tensor goes to the lowest 64-byte-aligned
/// offset that no tensor alive at the same time occupies.
void PlanBuilder::assignArena() {
  size_t numSteps = plan.steps.size();
  struct Life {
    int id;
    size_t first, last, bytes;
  };
  std::vector<Life> lives;
  std::vector<size_t> first(plan.tensors.size(), SIZE_MAX),
      last(plan.tensors.size(), 0);
  for (int id : plan.inputs)
    first[id] = 0;
  for (size_t i = 0; i < numSteps; ++i) {
    for (int id : plan.steps[i]->outputs)
      if (id >= 0)
        first[id] = std::min(first[id], i);
    for (int id : plan.steps[i]->inputs)
      if (id >= 0)
        last[id] = std::max(last[id], i);
  }
  for (int id : plan.outputs)
    last[id] = numSteps;
  for (size_t id = 0; id < plan.tensors.size(); ++id) {
    if (plan.tensors[id].constant || first[id] == SIZE_MAX)
      continue;
    size_t bytes = (plan.tensors[id].byteSize() + 63) & ~size_t(63);
    lives.push_back({static_cast<int>(id), first[id],
                     std::max(last[id], first[id]), bytes});
  }
  std::stable_sort(
      lives.begin(), lives.end(),
      [](const Life &a, const Life &b) { return a.bytes > b.bytes; });
  std::vector<std::pair<size_t, size_t>> placed; // offset, index in lives
  size_t total = 0;
  for (size_t i = 0; i < lives.size(); ++i) {
    std::vector<std::pair<size_t, size_t>> busy;
    for (auto [offset, j] : placed)
      if (lives[j].first <= lives[i].last && lives[i].first <= lives[j].last)
        busy.push_back({offset, offset + lives[j].bytes});
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (auto [begin, end] : busy) {
      if (offset + lives[i].bytes <= begin)
        break;
      offset = std::max(offset, end);
    }
    placed.push_back({offset, i});
    plan.tensors[lives[i].id].arenaOffset = static_cast<int64_t>(offset);
    total = std::max(total, offset + lives[i].bytes);
  }
  plan.arenaBytes = total;
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
    if (n.isa("q.conv")) {
      auto conv = lowerConv(n);
      if (!conv)
        return makeError(n.describe() + ": " +
                         llvm::toString(conv.takeError()));
      if (*conv) {
        plan.steps.push_back(std::move(*conv));
        continue;
      }
    }
    if (auto err = addFloatStep(n))
      return err;
  }
  for (const Value *out : graph.getOutputs()) {
    auto id = tensorFor(out, PlanLayout::Onnx);
    if (!id)
      return makeError("graph output: " + llvm::toString(id.takeError()));
    plan.outputs.push_back(*id);
  }
  assignArena();
  return llvm::Error::success();
}

} // namespace

llvm::Expected<std::unique_ptr<Plan>>
qopt::buildPlan(const Model &model, const PlanBuildOptions &options) {
  auto plan = std::make_unique<Plan>();
  PlanBuilder builder(model, options, *plan);
  if (auto err = builder.build())
    return std::move(err);
  return plan;
}
