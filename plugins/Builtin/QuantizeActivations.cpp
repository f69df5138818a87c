//===- QuantizeActivations.cpp - Q/DQ on weighted-op outputs --------------===//
//
// Lossy, reported. Models quantized the "naive" way (pytorch-quantization's
// automatic patching: Q/DQ on every Conv input and weight, nothing else)
// leave every Conv output and activation in float. TensorRT fuses the
// activation into the conv and infers the output grid itself; ONNX
// Runtime's QDQ selectors need a Q right after the op and run everything
// else in float (measured with ORT 1.30: 0 of 63 convs of yolo_like_qat in
// INT8). This pass gives a weighted op (op table trait Weighted) whose
// inputs are quantized the grid its activation's output is quantized to
// downstream (scale-analysis' backward grid: the Q after it, through
// data-movement ops), and quantizes the activation's steps on the way:
//
//   %c = onnx.Conv(%dq_x, %dq_w)             %c  = onnx.Conv(%dq_x, %dq_w)
//   %s = onnx.Sigmoid(%c)                    %cq = Q/DQ(%c) : B
//   %m = onnx.Mul(%c, %s)            =>      %s  = onnx.Sigmoid(%cq)
//   %q = q.quantize(%m) : B                  %sq = Q/DQ(%s) : [0, 1] in 1/256
//                                            %m  = onnx.Mul(%cq, %sq)
//                                            %mq = Q/DQ(%m) : B
//                                            %q  = q.quantize(%mq) : B
//
// Activations: none, Relu, LeakyRelu, Clip, SiLU (x * Sigmoid(x)),
// HardSwish (the op, or x * HardSigmoid(x) as torch.onnx writes it before
// opset 14; its HardSigmoid gets [0, 1] in 1/255 steps, so 1 stays exact).
// The op's output takes B too: B covers the activation's output, and
// Relu/Clip are clamps (clamping at B first changes nothing the Q keeps)
// while SiLU and HardSwish only shrink negative values, so clipping the
// op's output at B's bottom changes the activation's output by little (the
// cost report says where values clip). HardSwish is taken only where B's
// bottom is at -3 or below (HardSwish is 0 there) or at 0 or above (B
// clips its negative values anyway). LeakyRelu is taken only when B's bottom is
// 0: below, the op's output would need 1/alpha times B's negative range (left
// in float, with a note). The Q/DQ added on the activation's output is exact
// (the downstream Q puts the value on B anyway).
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/QdqUtils.h"
#include "qopt/Passes/ScaleAnalysis.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace qopt;

static constexpr const char *kQuantizeActivationsPass = "quantize-activations";

namespace {

struct Activation {
  /// The activation's output (the op's output when there is none).
  Value *output = nullptr;
  /// SiLU's Sigmoid or HardSwish's HardSigmoid, whose output gets its own
  /// [0, 1] grid.
  Node *gate = nullptr;
  llvm::StringRef kind = "none";
};

/// The activation applied to `v` (its only consumer, or SiLU's pair).
Activation findActivation(Value *v) {
  Activation act{v, nullptr, "none"};
  auto users = getUsers(v);
  if (v->isGraphOutput() || users.empty())
    return act;
  if (users.size() == 1) {
    Node *u = users.front().first;
    if (u->isa(ops::Relu) || u->isa(ops::LeakyRelu) || u->isa(ops::Clip) ||
        u->isa(ops::HardSwish))
      if (users.front().second == 0)
        return {u->getResult(), nullptr, u->getOpType()};
    return act;
  }
  if (users.size() != 2)
    return act;
  Node *gate = nullptr, *mul = nullptr;
  for (auto [u, index] : users) {
    if (u->isa(ops::Sigmoid) || u->isa(ops::HardSigmoid))
      gate = u;
    else if (u->isa(ops::Mul))
      mul = u;
  }
  if (!gate || !mul || !gate->getResult()->hasOneUse() ||
      gate->getResult()->isGraphOutput() ||
      !gate->getResult()->hasUseAt(mul, mul->getOperand(0) == v ? 1 : 0))
    return act;
  return {mul->getResult(), gate,
          gate->isa(ops::Sigmoid) ? "SiLU" : "HardSwish"};
}

bool isQuantizedInput(const Value *v) {
  return getProducer(v, ops::QDequantize) != nullptr;
}

/// Puts Q/DQ with grid `q` between `v` and its users (all of them).
Value *insertQdq(PatternRewriter &r, Value *v, const QuantType *q) {
  auto users = getUsers(v);
  Node *def = v->getDefiningNode();
  Graph &g = r.getGraph();
  // Right after the producer (or first, for a graph input): every user
  // comes later.
  auto next = def ? std::next(def->getIterator()) : g.getNodes().begin();
  r.setRoot(def);
  r.setInsertionPoint(next == g.getNodes().end() ? nullptr : &*next);
  Node *qn = createQuantize(r, v, q, nullptr, v->getName().str() + "_q");
  Node *dq =
      createDequantize(r, qn->getResult(), nullptr, v->getName().str() + "_dq");
  for (auto [user, index] : users)
    user->setOperand(index, dq->getResult());
  return dq->getResult();
}

} // namespace

PreservedAnalyses QuantizeActivationsPass::run(Graph &g, AnalysisManager &am) {
  const ScaleAnalysis::Result &grids = am.getResult<ScaleAnalysis>(g);
  struct Plan {
    Node *op;
    Activation act;
    const QuantType *grid;
  };
  std::vector<Plan> plans;
  for (Node &n : g.getNodes()) {
    if (!hasTrait(n, OpTrait::Weighted) || n.getNumResults() != 1 ||
        n.getNumOperands() < 2)
      continue;
    auto weight = n.getOpDef()->getWeightInfo(n);
    if (!weight || !isQuantizedInput(n.getOperand(0)) ||
        !isQuantizedInput(n.getOperand(weight->operand)))
      continue;
    Value *out = n.getResult();
    if (out->getType()->isQuantized() ||
        llvm::any_of(getUsers(out),
                     [](auto u) { return u.first->isa(ops::QQuantize); }))
      continue;
    Activation act = findActivation(out);
    const ScaleInfo *si = grids.lookupBackward(act.output);
    if (!si || si->quant->isPerAxis())
      continue;
    // LeakyRelu maps x < 0 to alpha * x: clipping x at B's bottom would cut
    // the activation's negative side to alpha times what B holds.
    if (act.kind == "LeakyRelu" &&
        quant::representableRange(si->quant).first < 0) {
      am.getCostReport().recordNote(
          kQuantizeActivationsPass,
          "%" + out->getName().str() + ": " + n.getOpType().str() +
              " output left in float: its LeakyRelu's consumer "
              "grid " +
              quant::describeParams(si->quant) +
              " holds negative values the Conv output would "
              "need 1/alpha times the range for");
      continue;
    }
    // HardSwish is 0 for every x <= -3 and takes values down to -0.375
    // between: clipping x at a bottom of B above -3 but below 0 moves those
    // (B keeps them), by up to 0.375.
    double bottom = quant::representableRange(si->quant).first;
    if (act.kind == "HardSwish" && bottom > -3.0 && bottom < 0.0) {
      am.getCostReport().recordNote(
          kQuantizeActivationsPass,
          "%" + out->getName().str() + ": " + n.getOpType().str() +
              " output left in float: its HardSwish's consumer grid " +
              quant::describeParams(si->quant) +
              llvm::formatv(" ends at {0}, where HardSwish is not 0 yet "
                            "(it is from -3 down)",
                            llvm::format("%.4g", bottom))
                  .str());
      continue;
    }
    plans.push_back({&n, act, si->quant});
  }
  if (plans.empty())
    return PreservedAnalyses::all();

  PatternRewriter r(g);
  Context &ctx = g.getContext();
  CostReport &report = am.getCostReport();
  for (Plan &p : plans) {
    const QuantType *b = p.grid;
    Value *out = p.op->getResult();
    auto [lo, hi] = quant::representableRange(b);
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "%" << out->getName() << ": " << p.op->getOpType() << " output ("
       << p.act.kind << ") quantized to " << quant::describeParams(b)
       << llvm::format(" borrowed from its activation's consumer; values "
                       "outside [%.4g, %.4g] clip",
                       lo, hi);
    if (p.act.output != out)
      insertQdq(r, p.act.output, b);
    if (p.act.gate) {
      // Sigmoid's [0, 1) in steps of 1/256 on b's storage kind, HardSigmoid's
      // [0, 1] in steps of 1/255 (it reaches 1 for every x >= 3).
      auto [qmin, qmax] = getIntegerRange(b->getStorageKind());
      bool sigmoid = p.act.gate->isa(ops::Sigmoid);
      float step =
          sigmoid ? 1.0f / 256 : 1.0f / static_cast<float>(qmax - qmin);
      const QuantType *unit =
          withParams(ctx, b, b->getStorageKind(), {step}, {qmin});
      insertQdq(r, p.act.gate->getResult(), unit);
      os << "; its " << p.act.gate->getOpType() << " quantized to "
         << quant::describeParams(unit) << " (max error 0.5 LSB"
         << (sigmoid ? ", 1.0 becomes 255/256)" : ")");
    }
    insertQdq(r, out, b);
    report.recordNote(kQuantizeActivationsPass, os.str());
  }
  return PreservedAnalyses::none();
}
