//===- LowerQOperator.cpp - q.* units to ONNX QOperator form
//---------------===//
//
// Exact at the fake-quant level: each q.* unit of fuse<ort> becomes the ONNX
// QOperator node a runtime without QDQ fusion runs, with its parameters as
// initializers (ONNX Runtime computes these kernels in integers, within 1
// LSB of the fake-quant chain):
//
//   %y = q.conv(%x, %w, %b) : !q.u8<0.04>   =>   %y = onnx.QLinearConv(%x,
//                                                  %xs, %xzp, %w, %ws, %wzp,
//                                                  %ys, %yzp, %b)
//
//   q.conv / q.matmul with a quantized result   QLinearConv / QLinearMatMul
//   q.matmul with a float result                MatMulInteger -> Cast -> Mul
//                                               (scale product) -> Add (bias)
//   q.gemm                                      com.microsoft.QGemm
//   q.add, q.mul                                com.microsoft.QLinearAdd/Mul
//   q.pool                                      com.microsoft.QLinear(Global)
//                                               AveragePool
//   q.activation leaky_relu, sigmoid            com.microsoft.QLinearLeakyRelu,
//                                               QLinearSigmoid
//   q.concat                                    com.microsoft.QLinearConcat
//
// A Relu epilogue folds into the output Q when the output zero point is the
// storage minimum (the Q clamps there). What the QOperator set cannot say
// (SiLU and the other activations, a residual, ConvTranspose, Sub, Softmax)
// goes back to its fake-quant chain: a float island with Q/DQ borders.
// Last, int8 values that no Q or DQ records any more lose their quantized
// type (their parameters now travel as operands), so the model exports.
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/QdqUtils.h"

#include "llvm/ADT/DenseSet.h"

#include <cmath>

using namespace qopt;

namespace {

class Lowering {
public:
  Lowering(Graph &g, CostReport &report)
      : graph(g), rewriter(g), ctx(g.getContext()), report(report) {}
  bool run();

private:
  Graph &graph;
  PatternRewriter rewriter;
  Context &ctx;
  CostReport &report;
  /// Float biases put on the product grid, and their largest rounding
  /// error in product steps.
  unsigned biasesQuantized = 0;
  double worstBiasError = 0;
  /// Scale and zero-point initializers per grid, shared by every user.
  llvm::DenseMap<const QuantType *, std::pair<Value *, Value *>> params;

  /// The scale and zero-point operands of `q` (scalars per tensor, 1-D per
  /// axis).
  std::pair<Value *, Value *> paramsOf(const QuantType *q);
  Value *scaleOf(const Value *v) { return paramsOf(quantOf(v)).first; }
  Value *zeroPointOf(const Value *v) { return paramsOf(quantOf(v)).second; }
  static const QuantType *quantOf(const Value *v) {
    return v->getType()->getQuantType();
  }
  /// Whether the unit's epilogue is nothing, or a Relu its output Q does.
  static bool epilogueFoldsIntoQ(const Node &n);
  /// A node of `op` replacing `n`, with `n`'s result type as plain storage
  /// when `plain` (QOperator results carry their parameters as operands).
  Node *replaceWith(Node &n, llvm::StringRef op,
                    llvm::ArrayRef<Value *> operands,
                    std::vector<NamedAttribute> attrs);
  /// n's attributes without the q.* epilogue ones.
  static std::vector<NamedAttribute> anchorAttrs(const Node &n);

  /// A float constant bias as i32 on the product grid x_scale * w_scale
  /// (rounded to nearest), or null when it is not a 1-D constant.
  Value *quantizeFloatBias(Value *bias, const QuantType *x, const QuantType *w);
  bool lowerConvOrMatMul(Node &n);
  bool lowerFloatMatMul(Node &n);
  bool lowerGemm(Node &n);
  bool lowerInt8Op(Node &n);
  /// The fake-quant chain of `n`: DQ, the ONNX op, epilogue, Q.
  void expand(Node &n);
  void dropUnrecordedQuantTypes();
};

std::pair<Value *, Value *> Lowering::paramsOf(const QuantType *q) {
  auto it = params.find(q);
  if (it != params.end())
    return it->second;
  std::vector<int64_t> dims;
  if (q->isPerAxis())
    dims.push_back(static_cast<int64_t>(q->getNumChannels()));
  // Initializers go first; the caller's insertion point is kept.
  Node *saved = rewriter.getInsertionPoint();
  rewriter.setInsertionPoint(&graph.getNodes().front());
  rewriter.setRoot(nullptr);
  Value *scale =
      createConstant(rewriter, *quant::makeDenseF32(dims, q->getScales()),
                     ctx.getElementType(q->getExpressedKind()), "qop_scale");
  Value *zp = createConstant(
      rewriter,
      *quant::makeDenseInt(q->getStorageKind(), dims, q->getZeroPoints()),
      ctx.getElementType(q->getStorageKind()), "qop_zero_point");
  rewriter.setInsertionPoint(saved);
  params[q] = {scale, zp};
  return {scale, zp};
}

bool Lowering::epilogueFoldsIntoQ(const Node &n) {
  if (n.getNumOperands() > 3 && n.getOperand(3))
    return false; // a residual
  std::string act = getStringAttrOr(n, "activation", "none");
  if (act == "none")
    return true;
  const QuantType *out = quantOf(n.getResult());
  return act == "relu" && out && !out->isPerAxis() &&
         out->getZeroPoint() ==
             quant::saturateToStorage(-1e300, out->getStorageKind());
}

std::vector<NamedAttribute> Lowering::anchorAttrs(const Node &n) {
  std::vector<NamedAttribute> attrs;
  for (const NamedAttribute &a : n.getAttrs())
    if (a.name != "activation" && a.name != "activation_params" &&
        a.name != "residual_after_activation" && a.name != "mode")
      attrs.push_back(a);
  return attrs;
}

Node *Lowering::replaceWith(Node &n, llvm::StringRef op,
                            llvm::ArrayRef<Value *> operands,
                            std::vector<NamedAttribute> attrs) {
  rewriter.setInsertionPoint(&n);
  rewriter.setRoot(&n);
  Node *lowered =
      rewriter.create(op, operands, {{n.getResult()->getType(), ""}},
                      std::move(attrs), n.getName().str());
  rewriter.replaceNode(n, {lowered->getResult()});
  return lowered;
}

bool Lowering::lowerConvOrMatMul(Node &n) {
  Value *x = n.getOperand(0), *w = n.getOperand(1);
  Value *bias = n.getNumOperands() > 2 ? n.getOperand(2) : nullptr;
  const Value *y = n.getResult();
  if (!epilogueFoldsIntoQ(n) || !quantOf(y) || quantOf(x)->isPerAxis() ||
      quantOf(y)->isPerAxis())
    return false;
  bool conv = n.isa(ops::QConv);
  // Per-channel weights: on the output channels (conv), per column (matmul).
  const QuantType *qw = quantOf(w);
  if (qw->isPerAxis() &&
      qw->getAxis() != (conv ? 0 : w->getType()->getRank() - 1))
    return false;
  if (bias && !conv)
    return false; // QLinearMatMul has no bias
  if (bias && !quantOf(bias)) {
    bias = quantizeFloatBias(bias, quantOf(x), quantOf(w));
    if (!bias)
      return false;
  }
  std::vector<Value *> operands{x,          scaleOf(x),    zeroPointOf(x),
                                w,          scaleOf(w),    zeroPointOf(w),
                                scaleOf(y), zeroPointOf(y)};
  if (bias)
    operands.push_back(bias);
  replaceWith(n, conv ? ops::QLinearConv : ops::QLinearMatMul, operands,
              conv ? anchorAttrs(n) : std::vector<NamedAttribute>{});
  return true;
}

Value *Lowering::quantizeFloatBias(Value *bias, const QuantType *x,
                                   const QuantType *w) {
  const DenseElements *data = getConstantData(bias);
  if (!data || x->isPerAxis() || data->getDims().size() != 1 ||
      (w->isPerAxis() &&
       data->getNumElements() != static_cast<int64_t>(w->getNumChannels())))
    return nullptr;
  std::vector<int64_t> stored;
  double worst = 0;
  for (int64_t c = 0; c < data->getNumElements(); ++c) {
    double step = double(x->getScale()) *
                  quant::getChannelScale(w, w->isPerAxis() ? c : 0);
    double q = std::nearbyint(data->getAsDouble(c) / step);
    if (!(std::fabs(q) < 2147483647.0))
      return nullptr;
    worst = std::max(worst, std::fabs(q * step - data->getAsDouble(c)) / step);
    stored.push_back(static_cast<int64_t>(q));
  }
  rewriter.setInsertionPoint(bias->getDefiningNode());
  rewriter.setRoot(nullptr);
  Value *q = createConstant(
      rewriter, *quant::makeDenseInt(ElementKind::I32, data->getDims(), stored),
      ctx.getElementType(ElementKind::I32), bias->getName().str() + "_i32");
  ++biasesQuantized;
  worstBiasError = std::max(worstBiasError, worst);
  return q;
}

bool Lowering::lowerFloatMatMul(Node &n) {
  // y = (a - azp)(b - bzp) * (as * bs) + bias, the product in int32.
  Value *a = n.getOperand(0), *b = n.getOperand(1);
  Value *bias = n.getNumOperands() > 2 ? n.getOperand(2) : nullptr;
  const QuantType *qa = quantOf(a), *qb = quantOf(b);
  if (getStringAttrOr(n, "activation", "none") != "none" || qa->isPerAxis() ||
      (n.getNumOperands() > 3 && n.getOperand(3)) || (bias && quantOf(bias)))
    return false;
  if (qb->isPerAxis() &&
      qb->getAxis() != b->getType()->getRank() - 1) // per column only
    return false;
  const TensorType *yt = n.getResult()->getType();
  rewriter.setInsertionPoint(&n);
  rewriter.setRoot(&n);
  std::vector<float> product;
  for (float s : qb->getScales())
    product.push_back(qa->getScale() * s);
  std::vector<int64_t> dims;
  if (qb->isPerAxis())
    dims.push_back(static_cast<int64_t>(product.size()));
  Value *scale = createConstant(rewriter, *quant::makeDenseF32(dims, product),
                                yt->getElementType(), "qop_scale_product");
  Node *mm = rewriter.create(ops::MatMulInteger,
                             {a, b, zeroPointOf(a), zeroPointOf(b)},
                             {{withElement(yt, ElementKind::I32), ""}});
  Node *cast = rewriter.create(
      ops::Cast, {mm->getResult()}, {{yt, ""}},
      {{"to", Attribute(int64_t(onnxDataTypeOf(yt->getStorageKind())))}});
  Node *mul = rewriter.create(ops::Mul, {cast->getResult(), scale}, {{yt, ""}});
  Value *out = mul->getResult();
  if (bias)
    out = rewriter.create(ops::Add, {out, bias}, {{yt, ""}})->getResult();
  rewriter.replaceNode(n, {out});
  return true;
}

bool Lowering::lowerGemm(Node &n) {
  Value *a = n.getOperand(0), *b = n.getOperand(1);
  Value *c = n.getNumOperands() > 2 ? n.getOperand(2) : nullptr;
  const Value *y = n.getResult();
  if (!epilogueFoldsIntoQ(n) || (c && !quantOf(c)) ||
      (c && getFloatAttrOr(n, "beta", 1.0f) != 1.0f) ||
      quantOf(a)->isPerAxis() || (quantOf(y) && quantOf(y)->isPerAxis()))
    return false;
  // B per tensor or per output column (N).
  const QuantType *qb = quantOf(b);
  if (qb->isPerAxis() &&
      qb->getAxis() != (getIntAttrOr(n, "transB", 0) ? 0 : 1))
    return false;
  std::vector<Value *> operands{
      a, scaleOf(a), zeroPointOf(a), b, scaleOf(b), zeroPointOf(b), c};
  if (quantOf(y)) {
    operands.push_back(scaleOf(y));
    operands.push_back(zeroPointOf(y));
  }
  std::vector<NamedAttribute> attrs;
  for (const NamedAttribute &at : anchorAttrs(n))
    if (at.name != "beta")
      attrs.push_back(at);
  replaceWith(n, ops::MsQGemm, operands, attrs);
  return true;
}

bool Lowering::lowerInt8Op(Node &n) {
  const Value *y = n.getResult();
  // The com.microsoft ops take per-tensor parameters only.
  if (!quantOf(y) || quantOf(y)->isPerAxis() ||
      llvm::any_of(n.getOperands(), [](const Value *v) {
        return v && quantOf(v) && quantOf(v)->isPerAxis();
      }))
    return false;
  std::string act = getStringAttrOr(n, "activation", "none");
  llvm::StringRef op;
  std::vector<NamedAttribute> attrs = anchorAttrs(n);
  if (n.isa(ops::QActivation)) {
    std::vector<float> p;
    if (const Attribute *a = n.getAttr("activation_params"))
      if (auto *f = a->getIf<std::vector<float>>())
        p = *f;
    if (act == "leaky_relu") {
      op = ops::MsQLinearLeakyRelu;
      attrs = {{"alpha", Attribute(p.at(0))}};
    } else if (act == "sigmoid") {
      op = ops::MsQLinearSigmoid;
      attrs.clear();
    } else {
      return false;
    }
  } else {
    if (!epilogueFoldsIntoQ(n))
      return false;
    if (n.isa(ops::QAdd))
      op = ops::MsQLinearAdd;
    else if (n.isa(ops::QMul))
      op = ops::MsQLinearMul;
    else if (n.isa(ops::QPool) &&
             getStringAttrOr(n, "mode", "") == "global_average")
      op = ops::MsQLinearGlobalAveragePool;
    else if (n.isa(ops::QPool))
      op = ops::MsQLinearAveragePool;
    else if (!n.isa(ops::QConcat))
      return false;
    if (n.isa(ops::QPool))
      attrs.push_back({"channels_last", Attribute(int64_t(0))});
  }
  std::vector<Value *> operands;
  if (n.isa(ops::QConcat)) {
    operands = {scaleOf(y), zeroPointOf(y)};
    for (Value *x : n.getOperands())
      for (Value *v : {x, scaleOf(x), zeroPointOf(x)})
        operands.push_back(v);
    replaceWith(n, ops::MsQLinearConcat, operands, attrs);
    return true;
  }
  for (Value *x : n.getOperands())
    for (Value *v : {x, scaleOf(x), zeroPointOf(x)})
      operands.push_back(v);
  operands.push_back(scaleOf(y));
  operands.push_back(zeroPointOf(y));
  replaceWith(n, op, operands, attrs);
  return true;
}

void Lowering::expand(Node &n) {
  rewriter.setInsertionPoint(&n);
  rewriter.setRoot(&n);
  const TensorType *yt = n.getResult()->getType();
  const QuantType *outGrid = quantOf(n.getResult());
  ElementKind floatKind =
      outGrid ? outGrid->getExpressedKind() : yt->getStorageKind();
  const TensorType *ft = withElement(yt, floatKind);
  auto dequantized = [&](Value *v) -> Value * {
    if (!v || !quantOf(v))
      return v;
    return createDequantize(rewriter, v)->getResult();
  };
  auto floatNode = [&](llvm::StringRef op, std::vector<Value *> operands,
                       std::vector<NamedAttribute> attrs = {}) {
    return rewriter.create(op, operands, {{ft, ""}}, std::move(attrs))
        ->getResult();
  };
  std::vector<Value *> in;
  for (Value *v : n.getOperands())
    in.push_back(dequantized(v));
  Value *cur = nullptr;
  Value *residual = nullptr;
  llvm::StringRef kind = n.getOpType();
  if (kind == "conv" || kind == "conv_transpose" || kind == "gemm" ||
      kind == "matmul") {
    llvm::StringRef anchor = kind == "conv"             ? ops::Conv
                             : kind == "conv_transpose" ? ops::ConvTranspose
                             : kind == "gemm"           ? ops::Gemm
                                                        : ops::MatMul;
    std::vector<Value *> args{in[0], in[1]};
    if (kind != "matmul" && in.size() > 2 && in[2])
      args.push_back(in[2]);
    cur = floatNode(anchor, args, anchorAttrs(n));
    if (kind == "matmul" && in.size() > 2 && in[2])
      cur = floatNode(ops::Add, {cur, in[2]});
    residual = in.size() > 3 ? in[3] : nullptr;
  } else if (kind == "pool") {
    cur = floatNode(getStringAttrOr(n, "mode", "") == "global_average"
                        ? ops::GlobalAveragePool
                        : ops::AveragePool,
                    in, anchorAttrs(n));
  } else if (kind == "activation") {
    cur = in[0];
  } else {
    static const llvm::StringMap<llvm::StringRef> onnxOf = {
        {"add", ops::Add},
        {"sub", ops::Sub},
        {"mul", ops::Mul},
        {"softmax", ops::Softmax},
        {"concat", ops::Concat}};
    cur = floatNode(onnxOf.lookup(kind), in, anchorAttrs(n));
  }
  bool residualLast = getIntAttrOr(n, "residual_after_activation", 0);
  if (residual && !residualLast)
    cur = floatNode(ops::Add, {cur, residual});
  std::string act = getStringAttrOr(n, "activation", "none");
  std::vector<float> p;
  if (const Attribute *a = n.getAttr("activation_params"))
    if (auto *f = a->getIf<std::vector<float>>())
      p = *f;
  if (act == "silu") {
    cur = floatNode(ops::Mul, {cur, floatNode(ops::Sigmoid, {cur})});
  } else if (act == "clip") {
    auto bound = [&](float v) {
      return createConstant(rewriter, *quant::makeDenseF32({}, {v}),
                            ctx.getElementType(floatKind), "clip_bound");
    };
    cur = floatNode(ops::Clip, {cur, bound(p.at(0)), bound(p.at(1))});
  } else if (act != "none") {
    static const llvm::StringMap<llvm::StringRef> onnxOf = {
        {"relu", ops::Relu},
        {"leaky_relu", ops::LeakyRelu},
        {"sigmoid", ops::Sigmoid},
        {"tanh", ops::Tanh},
        {"hard_sigmoid", ops::HardSigmoid},
        {"hard_swish", ops::HardSwish}};
    std::vector<NamedAttribute> attrs;
    if (act == "leaky_relu")
      attrs = {{"alpha", Attribute(p.at(0))}};
    if (act == "hard_sigmoid")
      attrs = {{"alpha", Attribute(p.at(0))}, {"beta", Attribute(p.at(1))}};
    cur = floatNode(onnxOf.lookup(act), {cur}, std::move(attrs));
  }
  if (residual && residualLast)
    cur = floatNode(ops::Add, {cur, residual});
  if (outGrid)
    cur = createQuantize(rewriter, cur, outGrid)->getResult();
  rewriter.replaceNode(n, {cur});
}

void Lowering::dropUnrecordedQuantTypes() {
  // A quantized value stays quantized when a Q/DQ records its parameters:
  // produced by q.quantize/q.requantize or read by q.dequantize/
  // q.requantize, or joined to such a value through int8 data movement.
  llvm::DenseSet<const Value *> recorded;
  std::vector<Value *> quantized;
  auto isQdq = [](const Node *n) {
    return n && (n->isa(ops::QQuantize) || n->isa(ops::QDequantize) ||
                 n->isa(ops::QRequantize));
  };
  auto visit = [&](Value *v) {
    if (!v || !quantOf(v))
      return;
    quantized.push_back(v);
    bool keep = isQdq(v->getDefiningNode()) ||
                (v->isGraphInput() && !v->getDefiningNode());
    for (auto [user, index] : getUsers(v))
      keep |= isQdq(user);
    if (keep)
      recorded.insert(v);
  };
  for (Value *in : graph.getInputs())
    visit(in);
  for (Node &n : graph.getNodes())
    for (Value *r : n.getResults())
      visit(r);
  for (bool changed = true; changed;) {
    changed = false;
    for (Node &n : graph.getNodes()) {
      if (!carriesIntegers(n))
        continue;
      bool any = false;
      for (unsigned i : getDataOperands(n))
        any |= recorded.count(n.getOperand(i)) != 0;
      for (Value *r : n.getResults())
        any |= recorded.count(r) != 0;
      if (!any)
        continue;
      for (unsigned i : getDataOperands(n))
        if (quantOf(n.getOperand(i)))
          changed |= recorded.insert(n.getOperand(i)).second;
      for (Value *r : n.getResults())
        if (quantOf(r))
          changed |= recorded.insert(r).second;
    }
  }
  for (Value *v : quantized)
    if (!recorded.count(v) && !v->isGraphInput())
      rewriter.setType(*v,
                       withElement(v->getType(), quantOf(v)->getStorageKind()));
}

bool Lowering::run() {
  std::vector<Node *> units;
  for (Node &n : graph.getNodes())
    if (n.getDialect() == "q" && !n.isa(ops::QQuantize) &&
        !n.isa(ops::QDequantize) && !n.isa(ops::QRequantize))
      units.push_back(&n);
  for (Node *n : units) {
    bool lowered = false;
    if (n->isa(ops::QConv) || (n->isa(ops::QMatmul) && quantOf(n->getResult())))
      lowered = lowerConvOrMatMul(*n);
    else if (n->isa(ops::QMatmul))
      lowered = lowerFloatMatMul(*n);
    else if (n->isa(ops::QGemm))
      lowered = lowerGemm(*n);
    else if (!n->isa(ops::QConvTranspose))
      lowered = lowerInt8Op(*n);
    if (!lowered)
      expand(*n);
  }
  if (units.empty())
    return false;
  dropUnrecordedQuantTypes();
  if (biasesQuantized)
    report.recordNote(
        "lower-qoperator",
        std::to_string(biasesQuantized) +
            " float bias(es) quantized to i32 on the product grid (input "
            "scale * weight scale), as ONNX Runtime's WeightBiasQuantization "
            "does: error at most " +
            std::to_string(worstBiasError) +
            " of a product step, far below one output LSB");
  return true;
}

} // namespace

PreservedAnalyses LowerQOperatorPass::run(Graph &g, AnalysisManager &am) {
  return Lowering(g, am.getCostReport()).run() ? PreservedAnalyses::none()
                                               : PreservedAnalyses::all();
}
