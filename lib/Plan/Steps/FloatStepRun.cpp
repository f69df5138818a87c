//===- FloatStepRun.cpp - Nodes on the interpreter's kernels, and faster --===//
//
// A float step runs its node's reference kernel on copies of its operands.
// The ops a network runs most often as float (activations after convs with
// f32 results, SE blocks, GELU and LayerNorm in transformers) also have a
// loop of their own here, taken when the tensors allow, that computes what
// the kernel computes, in its order and precision (double, rounded once to
// f32), without the copies; Erf and Softmax, the hot ones of GELU and
// attention, in f32 instead (qopt/Kernels/FloatMath.h, within 2 ulp):
//
//   unary   Relu LeakyRelu Sigmoid Tanh HardSigmoid HardSwish Erf Sqrt Exp
//           on a tensor of the result's shape and layout
//   binary  Add Sub Mul Div on two tensors of the result's shape and
//           layout, or one of them a single value or (ONNX layout) the
//           result's trailing dims or middle dims ([C, 1, 1] of
//           [N, C, H, W], a layer scale); or an NHWC tensor and one value
//           per image and channel ([N, C, 1, 1], an SE block's scale);
//           with the attribute qopt.relu_after (a plan pass's fusion), a
//           Relu of each result element in the same loop
//           Pow likewise, f32 base and exponent (LayerNorm's square)
//   Softmax over the last axis (or, before opset 13, the dims from the axis
//           on) in ONNX layout
//   ReduceMean over the last axis alone in ONNX layout (LayerNorm's
//           statistics), each row summed in double in its order
//   LayerNormalization over the trailing dims in ONNX layout, with scale
//           and bias of those dims, the statistics outputs absent
//   Gemm by constant f32 weights, MatMul of f32 tensors of rank 2 or more:
//           FloatStepGemm.cpp
//   Transpose of 4-byte elements that swaps two blocks of trailing dims
//           (NCHW <-> NHWC), as one 2-D transpose per batch; any other
//           permutation of 4-byte elements ([B, T, H, D] -> [B, H, T, D]) a
//           row of the result at a time, copied where the last dim stays
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/OpNames.h"
#include "qopt/Interpreter/NNUtil.h"
#include "qopt/Kernels/ActivationMath.h"
#include "qopt/Kernels/FloatMath.h"
#include "qopt/Kernels/Transpose.h"
#include "qopt/Plan/Steps/FloatStep.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <cstring>
#include <functional>

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

//===----------------------------------------------------------------------===//
// Float steps: the interpreter's kernel
//===----------------------------------------------------------------------===//

FloatStep::FloatStep(std::string name, KernelOp op, KernelFn fn, int64_t opset)
    : PlanStep(Kind::Float, std::move(name)), op(std::move(op)), fn(fn),
      opset(opset), arithmetic(Arithmetic::None) {
  const KernelOp &o = this->op;
  bool noQuantTypes =
      llvm::none_of(o.operandQuantTypes, [](auto *q) { return q; }) &&
      llvm::none_of(o.resultQuantTypes, [](auto *q) { return q; });
  if (o.op == ops::LayerNormalization && noQuantTypes &&
      (o.getNumOperands() == 2 || o.getNumOperands() == 3) &&
      !o.resultPresent.empty() && o.resultPresent[0] &&
      llvm::count(o.resultPresent, true) == 1) {
    KernelContext ctx(o, {}, opset);
    arithmetic = Arithmetic::LayerNorm;
    axis = ctx.getInt("axis", -1);
    alpha = ctx.getFloat("epsilon", 1e-5f);
    return;
  }
  bool plain = o.getNumResults() == 1 && noQuantTypes;
  if (!plain)
    return;
  if (o.op == ops::Softmax && o.getNumOperands() == 1) {
    KernelContext ctx(o, {}, opset);
    arithmetic = Arithmetic::Softmax;
    axis = ctx.getInt("axis", opset >= 13 ? -1 : 1);
    return;
  }
  if (o.op == ops::Gemm &&
      (o.getNumOperands() == 2 || o.getNumOperands() == 3)) {
    KernelContext ctx(o, {}, opset);
    if (ctx.getInt("transA", 0) != 0)
      return;
    arithmetic = Arithmetic::Gemm;
    gemmTransB = ctx.getInt("transB", 0) != 0;
    alpha = ctx.getFloat("alpha", 1.0f);
    beta = ctx.getFloat("beta", 1.0f);
    return;
  }
  if (o.op == ops::MatMul && o.getNumOperands() == 2) {
    arithmetic = Arithmetic::MatMul;
    return;
  }
  if (o.op == ops::Transpose && o.getNumOperands() == 1) {
    KernelContext ctx(o, {}, opset);
    arithmetic = Arithmetic::Transpose;
    perm = ctx.getInts("perm");
    return;
  }
  if (o.op == ops::ReduceMean &&
      (o.getNumOperands() == 1 || o.getNumOperands() == 2)) {
    // One axis, kept or not: the attribute (before opset 18), or a constant
    // operand, which meanRows reads.
    KernelContext ctx(o, {}, opset);
    std::vector<int64_t> axes = ctx.getInts("axes");
    if (o.getNumOperands() == 2 || axes.size() == 1) {
      arithmetic = Arithmetic::ReduceMean;
      axis = axes.size() == 1 ? axes[0] : -1;
    }
    return;
  }
  if (o.getNumOperands() == 2)
    arithmetic = llvm::StringSwitch<Arithmetic>(o.op)
                     .Case(ops::Pow, Arithmetic::Pow)
                     .Case(ops::Add, Arithmetic::Add)
                     .Case(ops::Sub, Arithmetic::Sub)
                     .Case(ops::Mul, Arithmetic::Mul)
                     .Case(ops::Div, Arithmetic::Div)
                     .Default(Arithmetic::None);
  if (o.getNumOperands() == 1)
    arithmetic = llvm::StringSwitch<Arithmetic>(o.op)
                     .Case(ops::Relu, Arithmetic::Relu)
                     .Case(ops::LeakyRelu, Arithmetic::LeakyRelu)
                     .Case(ops::Sigmoid, Arithmetic::Sigmoid)
                     .Case(ops::Tanh, Arithmetic::Tanh)
                     .Case(ops::HardSigmoid, Arithmetic::HardSigmoid)
                     .Case(ops::HardSwish, Arithmetic::HardSwish)
                     .Case(ops::Erf, Arithmetic::Erf)
                     .Case(ops::Sqrt, Arithmetic::Sqrt)
                     .Case(ops::Exp, Arithmetic::Exp)
                     .Default(Arithmetic::None);
  // The attributes as the kernels read them (floats, widened).
  KernelContext ctx(o, {}, opset);
  reluAfter =
      (arithmetic == Arithmetic::Add || arithmetic == Arithmetic::Sub ||
       arithmetic == Arithmetic::Mul || arithmetic == Arithmetic::Div) &&
      ctx.getInt(kReluAfter, 0) != 0;
  if (arithmetic == Arithmetic::LeakyRelu)
    alpha = ctx.getFloat("alpha", 0.01f);
  if (arithmetic == Arithmetic::HardSigmoid) {
    alpha = ctx.getFloat("alpha", 0.2f);
    beta = ctx.getFloat("beta", 0.5f);
  }
}

void FloatStep::removeReluAfter(KernelOp &op) {
  llvm::erase_if(op.attributes,
                 [](const NamedAttribute &a) { return a.name == kReluAfter; });
}

/// y[i] = f(x[i]) as the reference computes it for f32: in double, rounded
/// once to float.
template <typename F>
static void mapFloats(const float *x, float *y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = float(f(double(x[i])));
}

/// y[i] = x[i % xPeriod] op z[i % zPeriod] for i in [begin, end), op one
/// f32 +, -, * or /: the reference's bits, which computes it in double and
/// rounds once to f32 (double has more than twice f32's precision, so one
/// operation in double rounded to f32 is the f32 operation's correctly
/// rounded result), in f32 vectors.
template <typename Op>
static void flatArithmetic(const float *x, int64_t xPeriod, const float *z,
                           int64_t zPeriod, float *y, int64_t begin,
                           int64_t end, Op op) {
  if (xPeriod >= end && zPeriod >= end) {
    for (int64_t i = begin; i < end; ++i)
      y[i] = op(x[i], z[i]);
    return;
  }
  if (zPeriod == 1) {
    float b = z[0];
    for (int64_t i = begin; i < end; ++i)
      y[i] = op(x[i], b); // x is the full operand
    return;
  }
  if (xPeriod < end) { // both repeat: not a pair the steps produce
    for (int64_t i = begin; i < end; ++i)
      y[i] = op(x[i % xPeriod], z[i % zPeriod]);
    return;
  }
  // x is the full operand (the caller puts the broadcast one second), z
  // repeats: a run of the result at a time over one whole period of z, a
  // loop the compiler vectorizes.
  for (int64_t i = begin; i < end;) {
    int64_t iz = i % zPeriod;
    int64_t stop = std::min(end, i + (zPeriod - iz));
    const float *zRun = z + iz - i; // zRun[i] is z[iz] and on
    for (; i < stop; ++i)
      y[i] = op(x[i], zRun[i]);
  }
}

/// How an operand of a flat arithmetic step repeats along the result's
/// elements: every element (the result's shape and layout), one, or the
/// result's trailing dims in ONNX layout (a [C] scale of a [.., C]
/// tensor); 0 when it does not.
static int64_t periodOf(const PlanTensor &t, const PlanTensor &y) {
  if (t.kind != ElementKind::F32)
    return 0;
  if (t.shape == y.shape && t.layout == y.layout)
    return y.numElements();
  int64_t n = t.numElements();
  if (n == 1)
    return 1;
  if (t.layout != PlanLayout::Onnx || y.layout != PlanLayout::Onnx)
    return 0;
  size_t lead = 0;
  while (lead < t.shape.size() && t.shape[lead] == 1)
    ++lead;
  size_t rest = t.shape.size() - lead;
  if (rest > y.shape.size() ||
      !std::equal(t.shape.begin() + lead, t.shape.end(), y.shape.end() - rest))
    return 0;
  return n;
}

/// For an operand of an ONNX-layout result that varies along a run of its
/// middle dims ([C, 1, 1] against [N, C, H, W]: a layer scale), how many
/// result elements share each of its values (H * W); 0 when it is not one.
/// Element i of the result reads its element (i / spread) % its elements.
static int64_t spreadOf(const PlanTensor &t, const PlanTensor &y) {
  if (t.kind != ElementKind::F32 || t.layout != PlanLayout::Onnx ||
      y.layout != PlanLayout::Onnx || t.shape.size() > y.shape.size())
    return 0;
  size_t offset = y.shape.size() - t.shape.size();
  size_t last = t.shape.size();
  while (last > 0 && t.shape[last - 1] == 1)
    --last;
  if (last == t.shape.size() || last == 0)
    return 0; // no trailing 1s (periodOf's case), or a single value
  size_t first = 0;
  while (first < last && t.shape[first] == 1)
    ++first;
  for (size_t d = first; d < last; ++d)
    if (t.shape[d] != y.shape[offset + d])
      return 0;
  int64_t spread = 1;
  for (size_t d = offset + last; d < y.shape.size(); ++d)
    spread *= y.shape[d];
  return spread > 1 ? spread : 0;
}

/// Elements a tile of a same-shape arithmetic step takes.
static constexpr int64_t kArithmeticTileElements = 16384;

int64_t FloatStep::sameShapeElements(const PlanRun &run) const {
  if (arithmetic == Arithmetic::None || arithmetic == Arithmetic::LayerNorm ||
      arithmetic == Arithmetic::Transpose ||
      arithmetic == Arithmetic::Softmax ||
      arithmetic == Arithmetic::ReduceMean || inputs.empty() ||
      inputs.size() > 2 || outputs.size() != 1 || outputs[0] < 0)
    return 0;
  const PlanTensor &y = run.tensor(outputs[0]);
  if (y.kind != ElementKind::F32)
    return 0;
  // Pow's exponent may be of another type than its base.
  if (arithmetic == Arithmetic::Pow && llvm::any_of(inputs, [&](int id) {
        return id < 0 || run.tensor(id).kind != ElementKind::F32;
      }))
    return 0;
  for (int id : inputs) {
    if (id < 0)
      return 0;
    int64_t period = periodOf(run.tensor(id), y);
    if (!period && inputs.size() == 2 && spreadOf(run.tensor(id), y))
      period = 1; // broadcast along middle dims: as a broadcast operand
    // An activation reads every element; arithmetic may broadcast one
    // operand (not both: the result's shape would be neither's).
    if (!period ||
        (period != y.numElements() &&
         (inputs.size() == 1 ||
          periodOf(run.tensor(inputs[0] == id ? inputs[1] : inputs[0]), y) !=
              y.numElements())))
      return 0;
  }
  return y.numElements();
}

int FloatStep::channelOperand(const PlanRun &run) const {
  if (inputs.size() != 2 || outputs.size() != 1 || outputs[0] < 0 ||
      inputs[0] < 0 || inputs[1] < 0 ||
      !(arithmetic == Arithmetic::Add || arithmetic == Arithmetic::Sub ||
        arithmetic == Arithmetic::Mul || arithmetic == Arithmetic::Div))
    return -1;
  const PlanTensor &y = run.tensor(outputs[0]);
  if (y.kind != ElementKind::F32 || y.layout != PlanLayout::Nhwc)
    return -1;
  for (int i = 0; i < 2; ++i) {
    const PlanTensor &whole = run.tensor(inputs[i]);
    const PlanTensor &channels = run.tensor(inputs[1 - i]);
    if (whole.kind == ElementKind::F32 && whole.layout == PlanLayout::Nhwc &&
        whole.shape == y.shape && channels.kind == ElementKind::F32 &&
        channels.shape == Shape{y.shape[0], y.shape[1], 1, 1})
      return 1 - i;
  }
  return -1;
}

/// Pixels a tile of a channel arithmetic step takes.
static constexpr int64_t kChannelTilePixels = 256;

/// For an f32 x and y of one shape in ONNX layout, the rows (the dims
/// before `axis`) and each row's elements (the dims from it on); none
/// otherwise. `axis` may be negative.
static std::optional<std::pair<int64_t, int64_t>>
rowsFromAxis(const PlanTensor &x, const PlanTensor &y, int64_t axis) {
  int64_t rank = int64_t(y.shape.size());
  int64_t a = axis < 0 ? axis + rank : axis;
  if (x.kind != ElementKind::F32 || y.kind != ElementKind::F32 ||
      x.layout != PlanLayout::Onnx || y.layout != PlanLayout::Onnx ||
      x.shape != y.shape || a < 0 || a >= rank)
    return std::nullopt;
  int64_t inner = 1;
  for (int64_t d = a; d < rank; ++d)
    inner *= y.shape[d];
  if (inner == 0)
    return std::nullopt;
  return std::make_pair(y.numElements() / inner, inner);
}

/// Rows a tile of a Softmax step takes.
static constexpr int64_t kSoftmaxTileRows = 32;

std::pair<int64_t, int64_t> FloatStep::softmaxRows(const PlanRun &run) const {
  if (arithmetic != Arithmetic::Softmax || inputs.size() != 1 ||
      outputs.size() != 1 || inputs[0] < 0 || outputs[0] < 0)
    return {0, 0};
  const PlanTensor &x = run.tensor(inputs[0]), &y = run.tensor(outputs[0]);
  int64_t rank = int64_t(y.shape.size());
  // From opset 13 the op normalizes along the axis alone, before it along
  // the dims from the axis on, flattened: contiguous rows either way when
  // the axis is the last.
  if (opset >= 13 && axis != -1 && axis != rank - 1)
    return {0, 0};
  return rowsFromAxis(x, y, axis).value_or(std::make_pair(0, 0));
}

/// Rows a tile of a ReduceMean step takes.
static constexpr int64_t kMeanTileRows = 64;

std::pair<int64_t, int64_t> FloatStep::meanRows(const PlanRun &run) const {
  if (arithmetic != Arithmetic::ReduceMean || inputs.empty() ||
      inputs.size() > 2 || outputs.size() != 1 || inputs[0] < 0 ||
      outputs[0] < 0)
    return {0, 0};
  const PlanTensor &x = run.tensor(inputs[0]), &y = run.tensor(outputs[0]);
  int64_t rank = int64_t(x.shape.size());
  int64_t reduced = axis;
  if (inputs.size() == 2) {
    // Axes as an operand: a constant of one integer.
    const Tensor *axes =
        inputs[1] < 0 ? nullptr : run.tensor(inputs[1]).constant.get();
    if (!axes || axes->numElements() != 1 || !isIntegerKind(axes->kind()))
      return {0, 0};
    reduced = axes->getInt(0);
  }
  if (rank == 0 || (reduced != -1 && reduced != rank - 1) ||
      x.kind != ElementKind::F32 || y.kind != ElementKind::F32 ||
      x.layout != PlanLayout::Onnx || y.layout != PlanLayout::Onnx)
    return {0, 0};
  int64_t inner = x.shape.back();
  if (inner == 0 || y.numElements() * inner != x.numElements())
    return {0, 0};
  return {y.numElements(), inner};
}

/// Rows a tile of a LayerNormalization step takes.
static constexpr int64_t kLayerNormTileRows = 16;

std::pair<int64_t, int64_t> FloatStep::layerNormRows(const PlanRun &run) const {
  if (arithmetic != Arithmetic::LayerNorm || inputs.size() < 2 ||
      inputs[0] < 0 || inputs[1] < 0 || outputs.empty() || outputs[0] < 0)
    return {0, 0};
  for (size_t i = 1; i < outputs.size(); ++i)
    if (outputs[i] >= 0)
      return {0, 0};
  const PlanTensor &x = run.tensor(inputs[0]), &y = run.tensor(outputs[0]);
  auto rows = rowsFromAxis(x, y, axis);
  if (!rows)
    return {0, 0};
  int64_t inner = rows->second;
  for (size_t k = 1; k < inputs.size(); ++k)
    if (inputs[k] >= 0 && periodOf(run.tensor(inputs[k]), y) != inner)
      return {0, 0};
  return *rows;
}

void FloatStep::runLayerNorm(PlanRun &run, int64_t inner, int64_t begin,
                             int64_t end) const {
  const float *x = reinterpret_cast<const float *>(run.read(inputs[0]));
  const float *scale = reinterpret_cast<const float *>(run.read(inputs[1]));
  const float *bias = inputs.size() > 2 && inputs[2] >= 0
                          ? reinterpret_cast<const float *>(run.read(inputs[2]))
                          : nullptr;
  float *y = reinterpret_cast<float *>(run.write(outputs[0]));
  double eps = alpha;
  // The reference kernel's arithmetic, operation for operation.
  for (int64_t o = begin; o < end; ++o) {
    const float *xo = x + o * inner;
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < inner; ++i)
      sum += double(xo[i]);
    double mu = sum / double(inner);
    for (int64_t i = 0; i < inner; ++i) {
      double d = double(xo[i]) - mu;
      sq += d * d;
    }
    double inv = 1.0 / std::sqrt(sq / double(inner) + eps);
    float *yo = y + o * inner;
    for (int64_t i = 0; i < inner; ++i) {
      double v = (double(xo[i]) - mu) * inv * double(scale[i]);
      if (bias)
        v += double(bias[i]);
      yo[i] = float(v);
    }
  }
}

int64_t FloatStep::getNumTiles(const PlanRun &run) const {
  if (int64_t tiles = gemmTiles(run))
    return tiles;
  if (int64_t tiles = matmulTiles(run))
    return tiles;
  if (int64_t batches = transposeBlocks(run)[0])
    return batches;
  if (int64_t tiles = permuteTiles(run))
    return tiles;
  if (int64_t rows = layerNormRows(run).first)
    return (rows + kLayerNormTileRows - 1) / kLayerNormTileRows;
  if (int64_t rows = softmaxRows(run).first)
    return (rows + kSoftmaxTileRows - 1) / kSoftmaxTileRows;
  if (int64_t rows = meanRows(run).first)
    return (rows + kMeanTileRows - 1) / kMeanTileRows;
  int64_t n = sameShapeElements(run);
  if (!n && channelOperand(run) >= 0) {
    const Shape &s = run.tensor(outputs[0]).shape;
    int64_t pixels = s[0] * s[2] * s[3];
    return (pixels + kChannelTilePixels - 1) / kChannelTilePixels;
  }
  return n ? (n + kArithmeticTileElements - 1) / kArithmeticTileElements : 1;
}

bool FloatStep::runsReferenceKernel(const PlanRun &run) const {
  return !gemmWeights(run) && !matmulShape(run).batches &&
         !transposeBlocks(run)[0] && !permutedRows(run) &&
         !layerNormRows(run).first && !softmaxRows(run).first &&
         !meanRows(run).first && !sameShapeElements(run) &&
         channelOperand(run) < 0;
}

bool FloatStep::isComputeBound(const PlanRun &run) const {
  switch (arithmetic) {
  case Arithmetic::Gemm:
  case Arithmetic::MatMul:
  case Arithmetic::Erf:
  case Arithmetic::Exp:
  case Arithmetic::Tanh:
  case Arithmetic::Sigmoid:
  case Arithmetic::Softmax:
  case Arithmetic::LayerNorm:
    return true;
  default:
    return runsReferenceKernel(run);
  }
}

/// The reference Relu of an f32 value: NaN and -0 stay.
static float reluOf(float v) { return float(act::relu(double(v))); }

template <typename F> void FloatStep::withBinaryOp(F &&f) const {
  // With a Relu after it: the op's f32 result, then the Relu's.
  auto then = [&](auto op) {
    if (reluAfter)
      f([op](float a, float b) { return reluOf(op(a, b)); });
    else
      f(op);
  };
  switch (arithmetic) {
  case Arithmetic::Add:
    return then(std::plus<float>());
  case Arithmetic::Sub:
    return then(std::minus<float>());
  case Arithmetic::Mul:
    return then(std::multiplies<float>());
  case Arithmetic::Div:
    return then(std::divides<float>());
  case Arithmetic::Pow:
    // The reference's pow in double, rounded once; a square is the f32
    // product (the double one is exact, and rounds to it).
    return f([](float a, float b) {
      return b == 2.0f ? a * a : float(std::pow(double(a), double(b)));
    });
  default:
    return;
  }
}

void FloatStep::runChannelArithmetic(PlanRun &run, int channel, int64_t begin,
                                     int64_t end) const {
  const Shape &s = run.tensor(outputs[0]).shape;
  int64_t c = s[1], imagePixels = s[2] * s[3];
  const float *x =
      reinterpret_cast<const float *>(run.read(inputs[1 - channel]));
  const float *scale =
      reinterpret_cast<const float *>(run.read(inputs[channel]));
  float *out = reinterpret_cast<float *>(run.write(outputs[0]));
  // Operands in the op's order: the channel value first or second.
  auto apply = [&](auto op) {
    for (int64_t p = begin; p < end; ++p) {
      const float *sp = scale + (p / imagePixels) * c;
      const float *xp = x + p * c;
      float *yp = out + p * c;
      if (channel == 0)
        for (int64_t k = 0; k < c; ++k)
          yp[k] = op(sp[k], xp[k]);
      else
        for (int64_t k = 0; k < c; ++k)
          yp[k] = op(xp[k], sp[k]);
    }
  };
  withBinaryOp(apply);
}

void FloatStep::runSameShapeArithmetic(PlanRun &run, int64_t begin,
                                       int64_t end) const {
  const float *x = reinterpret_cast<const float *>(run.read(inputs[0]));
  const float *z = inputs.size() == 2
                       ? reinterpret_cast<const float *>(run.read(inputs[1]))
                       : nullptr;
  float *y = reinterpret_cast<float *>(run.write(outputs[0]));
  const PlanTensor &result = run.tensor(outputs[0]);
  int64_t xPeriod = periodOf(run.tensor(inputs[0]), result);
  int64_t zPeriod = z ? periodOf(run.tensor(inputs[1]), result) : 0;
  if (z && (!xPeriod || !zPeriod)) {
    // One operand spread along middle dims, the other every element.
    bool xSpread = !xPeriod;
    const float *full = xSpread ? z : x, *spreadValues = xSpread ? x : z;
    int64_t spread = spreadOf(run.tensor(inputs[xSpread ? 0 : 1]), result);
    int64_t count = run.tensor(inputs[xSpread ? 0 : 1]).numElements();
    auto blocks = [&](auto op) {
      for (int64_t i = begin; i < end;) {
        int64_t block = i / spread;
        float v = spreadValues[block % count];
        int64_t stop = std::min(end, (block + 1) * spread);
        if (xSpread)
          for (; i < stop; ++i)
            y[i] = op(v, full[i]);
        else
          for (; i < stop; ++i)
            y[i] = op(full[i], v);
      }
    };
    withBinaryOp(blocks);
    return;
  }
  // Whole tensors and element indices [begin, end) (x and out below are
  // the unary loops', from `begin` on).
  auto binary = [xBase = x, zBase = z, y, xPeriod, zPeriod, begin,
                 end](auto op) {
    if (xPeriod == 1 || (zPeriod != 1 && xPeriod < zPeriod)) {
      // The broadcast operand second, the op's operands in their order.
      flatArithmetic(zBase, zPeriod, xBase, xPeriod, y, begin, end,
                     [&](float b, float a) { return op(a, b); });
      return;
    }
    flatArithmetic(xBase, xPeriod, zBase, zPeriod, y, begin, end, op);
  };
  x += begin;
  float *out = y + begin;
  int64_t n = end - begin;
  double alpha = this->alpha, beta = this->beta;
  switch (arithmetic) {
  case Arithmetic::Relu:
    mapFloats(x, out, n, [](double v) { return act::relu(v); });
    break;
  case Arithmetic::LeakyRelu:
    mapFloats(x, out, n, [=](double v) { return act::leakyRelu(v, alpha); });
    break;
  case Arithmetic::Sigmoid:
    mapFloats(x, out, n, [](double v) { return act::sigmoid(v); });
    break;
  case Arithmetic::Tanh:
    mapFloats(x, out, n, [](double v) { return std::tanh(v); });
    break;
  case Arithmetic::HardSigmoid: // MobileNetV3's hot ops, vectorized
    hardSigmoidFloats(run.getPlan().isa, x, out, n, alpha, beta);
    break;
  case Arithmetic::HardSwish:
    hardSwishFloats(run.getPlan().isa, x, out, n);
    break;
  case Arithmetic::Erf:
    // f32 and vectorized, within 2 ulp (FloatMath.h): GELU's hot op.
    erfFloats(run.getPlan().isa, x, out, n);
    break;
  case Arithmetic::Sqrt:
    mapFloats(x, out, n, [](double v) { return std::sqrt(v); });
    break;
  case Arithmetic::Exp:
    mapFloats(x, out, n, [](double v) { return std::exp(v); });
    break;
  default: // Add, Sub, Mul, Div below; the rest have loops of their own
    withBinaryOp(binary);
    break;
  }
}

llvm::Error FloatStep::run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                           void * /*scratch*/) const {
  if (gemmWeights(run)) {
    runGemm(run, tileBegin, tileEnd);
    return llvm::Error::success();
  }
  if (MatMulShape mm = matmulShape(run); mm.batches) {
    runMatMul(run, mm, tileBegin, tileEnd);
    return llvm::Error::success();
  }
  if (auto [batches, rows, cols] = transposeBlocks(run); batches) {
    // Each batch's [rows, cols] block becomes [cols, rows]: moved bits.
    const auto *x = reinterpret_cast<const uint32_t *>(run.read(inputs[0]));
    auto *y = reinterpret_cast<uint32_t *>(run.write(outputs[0]));
    for (int64_t b = tileBegin; b < std::min(tileEnd, batches); ++b)
      transpose32(run.getPlan().isa, x + b * rows * cols, cols, rows, cols,
                  y + b * rows * cols, rows);
    return llvm::Error::success();
  }
  if (permutedRows(run)) {
    runPermute(run, tileBegin, tileEnd);
    return llvm::Error::success();
  }
  if (auto [rows, inner] = layerNormRows(run); rows) {
    runLayerNorm(run, inner, std::min(rows, tileBegin * kLayerNormTileRows),
                 std::min(rows, tileEnd * kLayerNormTileRows));
    return llvm::Error::success();
  }
  if (auto [rows, inner] = softmaxRows(run); rows) {
    int64_t first = std::min(rows, tileBegin * kSoftmaxTileRows);
    int64_t last = std::min(rows, tileEnd * kSoftmaxTileRows);
    // f32 and vectorized (FloatMath.h): attention's hot op.
    kernels::softmaxRows(
        run.getPlan().isa,
        reinterpret_cast<const float *>(run.read(inputs[0])) + first * inner,
        reinterpret_cast<float *>(run.write(outputs[0])) + first * inner,
        last - first, inner);
    return llvm::Error::success();
  }
  if (auto [rows, inner] = meanRows(run); rows) {
    // The reference's sums: each row in double, in order, then / inner.
    // Eight rows side by side: a row alone waits on each add.
    const float *x = reinterpret_cast<const float *>(run.read(inputs[0]));
    float *y = reinterpret_cast<float *>(run.write(outputs[0]));
    constexpr int64_t kSideBySide = 8;
    int64_t r = std::min(rows, tileBegin * kMeanTileRows);
    int64_t last = std::min(rows, tileEnd * kMeanTileRows);
    for (; r + kSideBySide <= last; r += kSideBySide) {
      double sums[kSideBySide] = {};
      const float *v = x + r * inner;
      for (int64_t i = 0; i < inner; ++i)
        for (int64_t k = 0; k < kSideBySide; ++k)
          sums[k] += double(v[k * inner + i]);
      for (int64_t k = 0; k < kSideBySide; ++k)
        y[r + k] = float(sums[k] / double(inner));
    }
    for (; r < last; ++r) {
      double sum = 0.0;
      for (const float *v = x + r * inner, *end = v + inner; v < end; ++v)
        sum += double(*v);
      y[r] = float(sum / double(inner));
    }
    return llvm::Error::success();
  }
  if (int64_t n = sameShapeElements(run)) {
    runSameShapeArithmetic(run,
                           std::min(n, tileBegin * kArithmeticTileElements),
                           std::min(n, tileEnd * kArithmeticTileElements));
    return llvm::Error::success();
  }
  if (int channel = channelOperand(run); channel >= 0) {
    const Shape &s = run.tensor(outputs[0]).shape;
    int64_t pixels = s[0] * s[2] * s[3];
    runChannelArithmetic(run, channel,
                         std::min(pixels, tileBegin * kChannelTilePixels),
                         std::min(pixels, tileEnd * kChannelTilePixels));
    return llvm::Error::success();
  }
  if (tileBegin > 0 || tileEnd <= tileBegin)
    return llvm::Error::success(); // the kernel runs whole, as tile 0
  std::vector<Tensor> values;
  values.reserve(inputs.size()); // operands point into it
  std::vector<const Tensor *> operands;
  for (int id : inputs) {
    if (id < 0) {
      operands.push_back(nullptr);
      continue;
    }
    // Constants (ONNX layout) are read where they are: a folded weight
    // is not copied on every run.
    if (const Tensor *constant = run.tensor(id).constant.get()) {
      operands.push_back(constant);
      continue;
    }
    values.push_back(run.copyOut(id));
    // An elementwise op may read NHWC tensors as flat arrays; int8 ones go
    // back to s8 for the kernel.
    if (uint8_t flip = run.tensor(id).getStoredFlip())
      for (char &b : llvm::MutableArrayRef<char>(values.back().bytes(),
                                                 values.back().byteSize()))
        b ^= flip;
    operands.push_back(&values.back());
  }
  KernelContext ctx(op, std::move(operands), opset);
  {
    // The plan's check bounded its tensors and work; this bounds what the
    // reference kernel allocates beside them (im2col rows, doubles).
    RunBudget budget;
    ScopedRunBudget scope(budget);
    if (auto err = fn(ctx))
      return err;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i] < 0)
      continue;
    const PlanTensor &t = run.tensor(outputs[i]);
    const Tensor &y = ctx.outputs[i];
    if (!y.isValid() || y.kind() != t.kind || y.shape() != t.shape)
      return ctx.error("result #" + llvm::Twine(i) + " is " +
                       (y.isValid() ? getElementKindName(y.kind()).str() + " " +
                                          shapeToString(y.shape())
                                    : std::string("missing")) +
                       "; the plan expects " + getElementKindName(t.kind) +
                       " " + shapeToString(t.shape));
    char *to = run.write(outputs[i]);
    if (t.byteSize())
      std::memcpy(to, y.bytes(), t.byteSize());
    if (reluAfter && i == 0 && t.kind == ElementKind::F32) {
      float *values = reinterpret_cast<float *>(to);
      for (int64_t k = 0, n = t.numElements(); k < n; ++k)
        values[k] = reluOf(values[k]);
    }
    if (uint8_t flip = t.getStoredFlip())
      for (size_t b = 0, e = t.byteSize(); b < e; ++b)
        to[b] ^= flip;
  }
  return llvm::Error::success();
}
