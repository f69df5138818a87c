//===- MicrosoftKernels.cpp - Reference kernels: com.microsoft QOperator ops
//===//
//
// The com.microsoft quantized ops lower-qoperator emits, as ONNX Runtime's
// contrib-op documentation defines them, computed as their fake-quant chain:
// the inputs dequantized with their explicit (scale, zero point) operands,
// the float op (the node's attributes carry the float op's names), the
// result quantized with the output's operands. ONNX Runtime computes them
// in integers or with lookup tables, within 1 LSB of this.
//
//   QLinearAdd/QLinearMul        A, A_s, A_zp, B, B_s, B_zp, C_s, C_zp
//   QLinearAveragePool,          X, X_s, X_zp, Y_s, Y_zp
//   QLinearGlobalAveragePool,
//   QLinearLeakyRelu (alpha),
//   QLinearSigmoid
//   QLinearConcat (axis)         Y_s, Y_zp, then (X, X_s, X_zp) per input
//   QGemm                        A, a_s, a_zp, B, b_s, b_zp, C?, y_s?, y_zp?
//                                (C is int32 on the grid a_s * b_s; no y_s:
//                                float output)
//   MatMulNBits (K, N, bits 4,   A, B, scales, zero_points?, g_idx (none),
//     block_size)                bias?: A times the weight B dequantized as
//                                a DequantizeLinear would, (code - zero
//                                point) * scale in float; a block's zero
//                                point 8 without zero_points
//
//===----------------------------------------------------------------------===//

#include "qopt/Interpreter/NNUtil.h"

#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"

using namespace qopt;
using namespace qopt::interp;

namespace {

/// (x - zp) * scale with per-tensor parameters, or per-axis ones along
/// `axis` (one scale per index there).
llvm::Expected<Tensor> dequantizeWith(const KernelContext &ctx, const Tensor *x,
                                      const Tensor *scale, const Tensor *zp,
                                      int64_t axis = -1) {
  if (!x || !scale)
    return ctx.error("missing a quantized input or its scale");
  if (!isIntegerKind(x->kind()))
    return ctx.error("quantized input must be an integer tensor");
  int64_t channels = scale->numElements();
  if (channels != 1 &&
      (axis < 0 || axis >= x->rank() || x->dim(axis) != channels))
    return ctx.error("scale with " + llvm::Twine(channels) +
                     " elements does not fit input " +
                     shapeToString(x->shape()));
  if (zp && zp->numElements() != channels)
    return ctx.error("scale and zero point sizes differ");
  auto y = Tensor::allocate(ElementKind::F32, x->shape());
  if (!y)
    return ctx.error(llvm::toString(y.takeError()));
  int64_t inner = 1;
  if (channels != 1)
    for (int64_t d = axis + 1; d < x->rank(); ++d)
      inner *= x->dim(d);
  for (int64_t i = 0; i < x->numElements(); ++i) {
    int64_t c = channels == 1 ? 0 : (i / inner) % channels;
    y->setDouble(i, quant::dequantizeValue(
                        x->getInt(i), static_cast<float>(scale->getDouble(c)),
                        zp ? zp->getInt(c) : 0));
  }
  return std::move(*y);
}

/// Output 0 = Q(y) with per-tensor scale and zero point. Without a zero
/// point, of `like`'s type (the QLinear* ops give X, the zero points and Y
/// one type variable), or u8 without `like`.
llvm::Error quantizeInto(KernelContext &ctx, const Tensor &y,
                         const Tensor *scale, const Tensor *zp,
                         const Tensor *like) {
  if (!scale || scale->numElements() != 1 || (zp && zp->numElements() != 1))
    return ctx.error("output scale and zero point must be scalars");
  ElementKind storage = zp ? zp->kind()
                        : like && isQuantStorageKind(like->kind())
                            ? like->kind()
                            : ElementKind::U8;
  if (auto err = ctx.allocateOutput(0, storage, y.shape()))
    return err;
  float s = static_cast<float>(scale->getDouble(0));
  int64_t z = zp ? zp->getInt(0) : 0;
  for (int64_t i = 0; i < y.numElements(); ++i)
    ctx.outputs[0].setInt(
        i, quant::quantizeValue(static_cast<float>(y.getDouble(i)), s, z,
                                storage));
  return llvm::Error::success();
}

/// The float kernel `op` with this node's attributes.
llvm::Expected<Tensor> runFloat(const KernelContext &ctx, llvm::StringRef op,
                                std::vector<const Tensor *> inputs) {
  KernelFn fn = KernelRegistry::get().lookup(op);
  KernelContext inner(ctx.op, std::move(inputs), ctx.opset);
  if (auto err = fn(inner))
    return std::move(err);
  return std::move(inner.outputs[0]);
}

/// X, X_s, X_zp, Y_s, Y_zp around the float op `op`.
llvm::Error unaryQLinear(KernelContext &ctx, llvm::StringRef op) {
  auto x = dequantizeWith(ctx, ctx.input(0), ctx.input(1), ctx.input(2));
  if (!x)
    return x.takeError();
  auto y = runFloat(ctx, op, {&*x});
  if (!y)
    return y.takeError();
  return quantizeInto(ctx, *y, ctx.input(3), ctx.input(4), ctx.input(0));
}

/// A, A_s, A_zp, B, B_s, B_zp, C_s, C_zp around the float op `op`.
llvm::Error binaryQLinear(KernelContext &ctx, llvm::StringRef op) {
  auto a = dequantizeWith(ctx, ctx.input(0), ctx.input(1), ctx.input(2));
  if (!a)
    return a.takeError();
  auto b = dequantizeWith(ctx, ctx.input(3), ctx.input(4), ctx.input(5));
  if (!b)
    return b.takeError();
  auto y = runFloat(ctx, op, {&*a, &*b});
  if (!y)
    return y.takeError();
  return quantizeInto(ctx, *y, ctx.input(6), ctx.input(7), ctx.input(0));
}

llvm::Error qlinearAddKernel(KernelContext &ctx) {
  return binaryQLinear(ctx, ops::Add);
}
llvm::Error qlinearMulKernel(KernelContext &ctx) {
  return binaryQLinear(ctx, ops::Mul);
}
llvm::Error qlinearAveragePoolKernel(KernelContext &ctx) {
  if (ctx.getInt("channels_last", 0))
    return ctx.error("channels_last is not supported");
  return unaryQLinear(ctx, ops::AveragePool);
}
llvm::Error qlinearGlobalAveragePoolKernel(KernelContext &ctx) {
  if (ctx.getInt("channels_last", 0))
    return ctx.error("channels_last is not supported");
  return unaryQLinear(ctx, ops::GlobalAveragePool);
}
llvm::Error qlinearLeakyReluKernel(KernelContext &ctx) {
  return unaryQLinear(ctx, ops::LeakyRelu);
}
llvm::Error qlinearSigmoidKernel(KernelContext &ctx) {
  return unaryQLinear(ctx, ops::Sigmoid);
}

llvm::Error qlinearConcatKernel(KernelContext &ctx) {
  if (ctx.numInputs() < 5 || (ctx.numInputs() - 2) % 3 != 0)
    return ctx.error("QLinearConcat takes Y_scale, Y_zero_point, then "
                     "(X, X_scale, X_zero_point) triples");
  std::vector<Tensor> parts;
  for (size_t i = 2; i < ctx.numInputs(); i += 3) {
    auto x =
        dequantizeWith(ctx, ctx.input(i), ctx.input(i + 1), ctx.input(i + 2));
    if (!x)
      return x.takeError();
    parts.push_back(std::move(*x));
  }
  std::vector<const Tensor *> inputs;
  for (const Tensor &t : parts)
    inputs.push_back(&t);
  auto y = runFloat(ctx, ops::Concat, inputs);
  if (!y)
    return y.takeError();
  return quantizeInto(ctx, *y, ctx.input(0), ctx.input(1), ctx.input(2));
}

llvm::Error qgemmKernel(KernelContext &ctx) {
  const Tensor *b = ctx.input(3);
  if (!b || b->rank() != 2)
    return ctx.error("QGemm needs a 2-D B");
  // b's scale is per tensor or one per output column (N).
  int64_t nAxis = ctx.getInt("transB", 0) ? 0 : 1;
  auto af = dequantizeWith(ctx, ctx.input(0), ctx.input(1), ctx.input(2));
  if (!af)
    return af.takeError();
  auto bf = dequantizeWith(ctx, b, ctx.input(4), ctx.input(5), nAxis);
  if (!bf)
    return bf.takeError();
  std::optional<Tensor> cf;
  if (const Tensor *c = ctx.input(6)) {
    // int32 C on the grid alpha * a_scale * b_scale (per column for
    // per-column B; ONNX Runtime's contrib-op documentation: C's scale is
    // alpha / beta * a_scale * b_scale, and QGemm's beta is 1), added to
    // alpha * A * B. dequantizeWith saw to a_scale's one value and
    // b_scale's one per column of B (none where B has no columns). With
    // per-column scales, a C that broadcasts along the columns (a scalar,
    // [1], [M, 1]) is spread to one value per column first: each column
    // has its grid.
    const Tensor *bs = ctx.input(4);
    int64_t columns = bs->numElements();
    Shape shape = c->shape();
    int64_t last = shape.empty() ? 1 : shape.back();
    if (columns != 1) {
      if (last != columns && last != 1)
        return ctx.error("C " + shapeToString(c->shape()) +
                         " does not broadcast to " + llvm::Twine(columns) +
                         " columns");
      if (shape.empty())
        shape.push_back(1);
      shape.back() = columns;
    }
    float as = static_cast<float>(ctx.input(1)->getDouble(0));
    float alpha = ctx.getFloat("alpha", 1.0f);
    auto t = Tensor::allocate(ElementKind::F32, shape);
    if (!t)
      return ctx.error(llvm::toString(t.takeError()));
    for (int64_t i = 0; i < t->numElements(); ++i) {
      int64_t col = columns == 1 ? 0 : i % columns;
      int64_t from = columns != 1 && last == 1 ? i / columns : i;
      t->setDouble(i,
                   double(c->getInt(from)) *
                       (as * static_cast<float>(bs->getDouble(col)) * alpha));
    }
    cf = std::move(*t);
  }
  std::vector<const Tensor *> inputs{&*af, &*bf};
  if (cf)
    inputs.push_back(&*cf);
  auto y = runFloat(ctx, ops::Gemm, inputs);
  if (!y)
    return y.takeError();
  if (!ctx.input(7)) {
    ctx.outputs[0] = std::move(*y);
    return llvm::Error::success();
  }
  return quantizeInto(ctx, *y, ctx.input(7), ctx.input(8), nullptr);
}

/// MatMulNBits: B u8 [N, blocks, block / 2] (each column's codes along K,
/// low nibble first), scales [N * blocks], zero_points u8 [N * ceil(blocks
/// / 2)] (two a byte along the blocks) or float [N * blocks].
llvm::Error matMulNBitsKernel(KernelContext &ctx) {
  int64_t k = ctx.getInt("K", 0), n = ctx.getInt("N", 0);
  int64_t block = ctx.getInt("block_size", 0);
  if (ctx.getInt("bits", 4) != 4)
    return ctx.error("MatMulNBits with bits " +
                     llvm::Twine(ctx.getInt("bits", 4)) +
                     " is not supported (4 is)");
  if (k < 1 || n < 1 || block < 16 || (block & (block - 1)))
    return ctx.error("MatMulNBits needs K and N of at least 1 and a "
                     "block_size that is a power of two from 16");
  const Tensor *a = ctx.input(0), *b = ctx.input(1), *scales = ctx.input(2);
  const Tensor *zeros = ctx.input(3), *bias = ctx.input(5);
  if (ctx.input(4))
    return ctx.error("MatMulNBits with g_idx is not supported");
  int64_t blocks = (k + block - 1) / block, blob = block / 2;
  int64_t packedZeros = n * ((blocks + 1) / 2);
  if (!a || !b || !scales || b->kind() != ElementKind::U8 ||
      b->numElements() != n * blocks * blob ||
      scales->numElements() != n * blocks ||
      (zeros && !(zeros->kind() == ElementKind::U8
                      ? zeros->numElements() == packedZeros
                      : zeros->numElements() == n * blocks)))
    return ctx.error("MatMulNBits operands do not fit K " + llvm::Twine(k) +
                     ", N " + llvm::Twine(n) + ", block_size " +
                     llvm::Twine(block));
  auto w = Tensor::allocate(scales->kind(), {k, n});
  if (!w)
    return ctx.error(llvm::toString(w.takeError()));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t p = 0; p < k; ++p) {
      int64_t blk = p / block, i = p % block;
      int64_t byte = b->getInt((j * blocks + blk) * blob + i / 2);
      int64_t code = (byte >> (4 * (i % 2))) & 0xF;
      float scale = static_cast<float>(scales->getDouble(j * blocks + blk));
      float value;
      if (zeros && zeros->kind() != ElementKind::U8) {
        float zero = static_cast<float>(zeros->getDouble(j * blocks + blk));
        value = (float(code) - zero) * scale;
      } else {
        int64_t zero = 8;
        if (zeros)
          zero = (zeros->getInt(j * ((blocks + 1) / 2) + blk / 2) >>
                  (4 * (blk % 2))) &
                 0xF;
        value = float(code - zero) * scale;
      }
      w->setDouble(p * n + j, value);
    }
  auto y = runFloat(ctx, ops::MatMul, {a, &*w});
  if (!y)
    return y.takeError();
  if (!bias) {
    ctx.outputs[0] = std::move(*y);
    return llvm::Error::success();
  }
  auto sum = runFloat(ctx, ops::Add, {&*y, bias});
  if (!sum)
    return sum.takeError();
  ctx.outputs[0] = std::move(*sum);
  return llvm::Error::success();
}

} // namespace

void interp::registerMicrosoftKernels(KernelRegistry &r) {
  r.add(ops::MsMatMulNBits, matMulNBitsKernel);
  r.add(ops::MsQLinearAdd, qlinearAddKernel);
  r.add(ops::MsQLinearMul, qlinearMulKernel);
  r.add(ops::MsQLinearAveragePool, qlinearAveragePoolKernel);
  r.add(ops::MsQLinearGlobalAveragePool, qlinearGlobalAveragePoolKernel);
  r.add(ops::MsQLinearLeakyRelu, qlinearLeakyReluKernel);
  r.add(ops::MsQLinearSigmoid, qlinearSigmoidKernel);
  r.add(ops::MsQLinearConcat, qlinearConcatKernel);
  r.add(ops::MsQGemm, qgemmKernel);
}
