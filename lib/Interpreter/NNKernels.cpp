//===- NNKernels.cpp - Reference kernels: convolution, matmul, pooling ----===//

#include "qopt/IR/OpNames.h"
#include "qopt/Interpreter/NNUtil.h"
#include "qopt/Support/ResourceLimits.h"

#include <cmath>

using namespace qopt;
using namespace qopt::interp;

namespace {

llvm::Error requireFloat(const KernelContext &ctx, const Tensor *t,
                         const char *what) {
  if (!t)
    return ctx.error(llvm::Twine("missing ") + what);
  if (!isFloatKind(t->kind()))
    return ctx.error(llvm::Twine(what) + " must be a float tensor, got " +
                     getElementKindName(t->kind()));
  return llvm::Error::success();
}

/// Writes doubles into a new output of `kind`.
llvm::Error emit(KernelContext &ctx, size_t i, ElementKind kind, Shape shape,
                 const std::vector<double> &values) {
  if (auto err = ctx.allocateOutput(i, kind, std::move(shape)))
    return err;
  Tensor &t = ctx.outputs[i];
  if (kind == ElementKind::F32) {
    float *p = t.data<float>();
    for (int64_t j = 0; j < t.numElements(); ++j)
      p[j] = static_cast<float>(values[j]);
  } else {
    for (int64_t j = 0; j < t.numElements(); ++j)
      t.setDouble(j, values[j]);
  }
  return llvm::Error::success();
}

llvm::Error convKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0), *w = ctx.input(1), *b = ctx.input(2);
  if (auto err = requireFloat(ctx, x, "input X"))
    return err;
  if (auto err = requireFloat(ctx, w, "weight W"))
    return err;
  auto g = convGeometry(ctx, x->shape(), w->shape());
  if (!g)
    return g.takeError();
  std::vector<double> bias;
  if (b) {
    if (b->numElements() != g->outChannels)
      return ctx.error("bias has " + llvm::Twine(b->numElements()) +
                       " elements for " + llvm::Twine(g->outChannels) +
                       " output channels");
    bias = b->toDoubles();
  }
  Shape outShape = g->outputShape();
  auto count = shapeNumElements(outShape);
  if (!count)
    return ctx.error("output too large");
  std::vector<double> y(*count);
  convolve(*g, x->toDoubles().data(), w->toDoubles().data(),
           b ? bias.data() : nullptr, y.data());
  return emit(ctx, 0, x->kind(), outShape, y);
}

llvm::Error convTransposeKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0), *w = ctx.input(1), *b = ctx.input(2);
  if (auto err = requireFloat(ctx, x, "input X"))
    return err;
  if (auto err = requireFloat(ctx, w, "weight W"))
    return err;
  if (x->rank() < 3 || w->rank() != x->rank())
    return ctx.error("input " + shapeToString(x->shape()) + " and weight " +
                     shapeToString(w->shape()) +
                     " do not form a transposed convolution");
  size_t k = x->rank() - 2;
  int64_t group = ctx.getInt("group", 1);
  int64_t n = x->dim(0), c = x->dim(1);
  if (group <= 0 || c % group || w->dim(0) != c)
    return ctx.error("weight " + shapeToString(w->shape()) +
                     " does not match input channels and group");
  int64_t mPerGroup = w->dim(1), m = mPerGroup * group, cPerGroup = c / group;
  Shape kernel(w->shape().begin() + 2, w->shape().end());
  Shape strides = ctx.getInts("strides", Shape(k, 1));
  Shape dilations = ctx.getInts("dilations", Shape(k, 1));
  Shape outPad = ctx.getInts("output_padding", Shape(k, 0));
  Shape pads = ctx.getInts("pads", Shape(2 * k, 0));
  Shape outputShape = ctx.getInts("output_shape");
  std::string autoPad = ctx.getString("auto_pad", "NOTSET");
  if (strides.size() != k || dilations.size() != k || outPad.size() != k ||
      pads.size() != 2 * k)
    return ctx.error("strides/dilations/output_padding/pads have the wrong "
                     "length");
  Shape in(x->shape().begin() + 2, x->shape().end());
  Shape out(k), padBegin(k), padEnd(k);
  if (outputShape.size() == k + 2)
    outputShape.erase(outputShape.begin(), outputShape.begin() + 2);
  for (size_t i = 0; i < k; ++i) {
    int64_t full = strides[i] * (in[i] - 1) + outPad[i] +
                   (kernel[i] - 1) * dilations[i] + 1;
    if (!outputShape.empty() || autoPad == "SAME_UPPER" ||
        autoPad == "SAME_LOWER") {
      int64_t target =
          !outputShape.empty() ? outputShape[i] : in[i] * strides[i];
      int64_t total = full - target;
      // Floor division: a negative total (output_shape larger than the
      // natural size) extends the end, as in the ONNX reference.
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      if (autoPad == "SAME_UPPER") {
        padBegin[i] = half;
        padEnd[i] = total - half;
      } else {
        padBegin[i] = total - half;
        padEnd[i] = half;
      }
      out[i] = target;
    } else {
      if (autoPad == "NOTSET") {
        padBegin[i] = pads[i];
        padEnd[i] = pads[i + k];
      }
      out[i] = full - padBegin[i] - padEnd[i];
    }
    if (out[i] <= 0)
      return ctx.error("transposed convolution output is empty");
  }
  Shape outShape = {n, m};
  outShape.insert(outShape.end(), out.begin(), out.end());
  auto total = shapeNumElements(outShape);
  if (!total)
    return ctx.error("output too large");
  // Each input element scatters through M/group x kernel taps.
  if (auto err =
          ctx.chargeWork(uint64_t(x->numElements()),
                         uint64_t(w->numElements() / std::max<int64_t>(c, 1))))
    return err;
  if (auto err = ctx.chargeScratch(uint64_t(*total) + x->numElements() +
                                       w->numElements(),
                                   sizeof(double)))
    return err;
  std::vector<double> y(*total, 0.0);
  std::vector<double> xv = x->toDoubles(), wv = w->toDoubles();
  int64_t inSize = shapeNumElements(in).value_or(0);
  int64_t outSize = shapeNumElements(out).value_or(0);
  int64_t kSize = shapeNumElements(kernel).value_or(0);
  Shape outStrides = stridesOf(out);
  // Scatter each input element through the kernel.
  Shape iIdx(k), kIdx(k);
  for (int64_t b0 = 0; b0 < n; ++b0)
    for (int64_t ci = 0; ci < c; ++ci) {
      int64_t grp = ci / cPerGroup;
      std::fill(iIdx.begin(), iIdx.end(), 0);
      for (int64_t ip = 0; ip < inSize; ++ip) {
        double xvv = xv[(b0 * c + ci) * inSize + ip];
        if (xvv != 0.0) {
          std::fill(kIdx.begin(), kIdx.end(), 0);
          for (int64_t kp = 0; kp < kSize; ++kp) {
            int64_t offset = 0;
            bool inside = true;
            for (size_t d = 0; d < k && inside; ++d) {
              int64_t pos =
                  iIdx[d] * strides[d] + kIdx[d] * dilations[d] - padBegin[d];
              inside = pos >= 0 && pos < out[d];
              offset += pos * outStrides[d];
            }
            if (inside)
              for (int64_t mo = 0; mo < mPerGroup; ++mo)
                y[(b0 * m + grp * mPerGroup + mo) * outSize + offset] +=
                    xvv * wv[(ci * mPerGroup + mo) * kSize + kp];
            for (int64_t d = k - 1; d >= 0; --d) {
              if (++kIdx[d] < kernel[d])
                break;
              kIdx[d] = 0;
            }
          }
        }
        for (int64_t d = k - 1; d >= 0; --d) {
          if (++iIdx[d] < in[d])
            break;
          iIdx[d] = 0;
        }
      }
    }
  if (b) {
    if (b->numElements() != m)
      return ctx.error("bias size does not match output channels");
    for (int64_t b0 = 0; b0 < n; ++b0)
      for (int64_t mo = 0; mo < m; ++mo)
        for (int64_t p = 0; p < outSize; ++p)
          y[(b0 * m + mo) * outSize + p] += b->getDouble(mo);
  }
  return emit(ctx, 0, x->kind(), outShape, y);
}

/// y[i][j] = sum over p of a(i, p) * b(p, j) in double, p ascending, terms
/// with a(i, p) == 0 left out; with transB, each sum reads a row of B.
template <typename BElement>
void gemmProducts(const std::vector<double> &av, const BElement *bv, int64_t m,
                  int64_t n, int64_t k, bool ta, bool tb,
                  std::vector<double> &y) {
  std::vector<int64_t> terms;
  std::vector<double> aRow;
  for (int64_t i = 0; i < m; ++i) {
    terms.clear();
    aRow.clear();
    for (int64_t p = 0; p < k; ++p) {
      double aip = ta ? av[p * m + i] : av[i * k + p];
      if (aip == 0.0)
        continue;
      terms.push_back(p);
      aRow.push_back(aip);
    }
    double *yRow = y.data() + i * n;
    if (tb) {
      // Four columns at a time: four independent sums, each over the terms
      // in order (the same bits as one column at a time, without waiting
      // on one add chain).
      int64_t j = 0;
      for (; j + 4 <= n; j += 4) {
        const BElement *b0 = bv + j * k, *b1 = b0 + k, *b2 = b1 + k,
                       *b3 = b2 + k;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        for (size_t t = 0; t < terms.size(); ++t) {
          int64_t p = terms[t];
          double a = aRow[t];
          s0 += a * double(b0[p]);
          s1 += a * double(b1[p]);
          s2 += a * double(b2[p]);
          s3 += a * double(b3[p]);
        }
        yRow[j] = s0;
        yRow[j + 1] = s1;
        yRow[j + 2] = s2;
        yRow[j + 3] = s3;
      }
      for (; j < n; ++j) {
        const BElement *bRow = bv + j * k;
        double sum = 0.0;
        for (size_t t = 0; t < terms.size(); ++t)
          sum += aRow[t] * double(bRow[terms[t]]);
        yRow[j] = sum;
      }
      continue;
    }
    for (size_t t = 0; t < terms.size(); ++t) {
      const BElement *bRow = bv + terms[t] * n;
      for (int64_t j = 0; j < n; ++j)
        yRow[j] += aRow[t] * double(bRow[j]);
    }
  }
}

llvm::Error gemmKernel(KernelContext &ctx) {
  const Tensor *a = ctx.input(0), *b = ctx.input(1), *c = ctx.input(2);
  if (!a || !b || a->rank() != 2 || b->rank() != 2)
    return ctx.error("Gemm needs 2-D A and B");
  bool ta = ctx.getInt("transA", 0), tb = ctx.getInt("transB", 0);
  double alpha = ctx.getFloat("alpha", 1.0f), beta = ctx.getFloat("beta", 1.0f);
  int64_t m = ta ? a->dim(1) : a->dim(0), k = ta ? a->dim(0) : a->dim(1);
  int64_t k2 = tb ? b->dim(1) : b->dim(0), n = tb ? b->dim(0) : b->dim(1);
  if (k != k2)
    return ctx.error("Gemm inner dimensions differ");
  if (auto err = ctx.chargeWork(saturatingProduct({uint64_t(m), uint64_t(n)}),
                                uint64_t(k)))
    return err;
  if (auto err = ctx.chargeScratch(
          saturatingSum(saturatingProduct({uint64_t(m), uint64_t(n)}),
                        a->numElements()),
          sizeof(double)))
    return err;
  std::vector<double> av = a->toDoubles();
  std::vector<double> y(m * n, 0.0);
  // f32 B (the common case: a weight) is read in place.
  if (b->kind() == ElementKind::F32)
    gemmProducts(av, b->data<float>(), m, n, k, ta, tb, y);
  else
    gemmProducts(av, b->toDoubles().data(), m, n, k, ta, tb, y);
  for (double &v : y)
    v *= alpha;
  if (c) {
    auto shape = broadcastShapes(c->shape(), {m, n});
    if (!shape || *shape != Shape({m, n}))
      return ctx.error("C " + shapeToString(c->shape()) +
                       " does not broadcast to [" + llvm::Twine(m) + "," +
                       llvm::Twine(n) + "]");
    BroadcastIndexer ci(c->shape(), {m, n});
    for (int64_t i = 0; i < m * n; ++i)
      y[i] += beta * c->getDouble(ci.offsets()[i]);
  }
  return emit(ctx, 0, a->kind(), {m, n}, y);
}

llvm::Error matmulKernel(KernelContext &ctx) {
  const Tensor *a = ctx.input(0), *b = ctx.input(1);
  if (!a || !b)
    return ctx.error("MatMul needs two inputs");
  Shape outShape;
  std::vector<double> y;
  if (auto err = matmul(ctx, a->shape(), a->toDoubles(), b->shape(),
                        b->toDoubles(), outShape, y))
    return err;
  return emit(ctx, 0, a->kind(), outShape, y);
}

enum class PoolKind { Max, Average };

llvm::Error poolKernel(KernelContext &ctx, PoolKind kind) {
  const Tensor *x = ctx.input(0);
  if (!x || x->rank() < 3)
    return ctx.error("pooling needs an input of rank >= 3");
  size_t k = x->rank() - 2;
  Shape kernel = ctx.getInts("kernel_shape");
  if (kernel.size() != k)
    return ctx.error("kernel_shape must have " + llvm::Twine(k) + " values");
  Shape strides = ctx.getInts("strides", Shape(k, 1));
  Shape dilations = ctx.getInts("dilations", Shape(k, 1));
  if (strides.size() != k || dilations.size() != k)
    return ctx.error("strides/dilations have the wrong length");
  bool ceilMode = ctx.getInt("ceil_mode", 0);
  bool countPad = ctx.getInt("count_include_pad", 0);
  Shape in(x->shape().begin() + 2, x->shape().end());
  Shape padBegin, padEnd, out;
  if (auto err = windowGeometry(ctx, in, kernel, strides, dilations, ceilMode,
                                padBegin, padEnd, out))
    return err;
  int64_t n = x->dim(0), c = x->dim(1);
  Shape outShape = {n, c};
  outShape.insert(outShape.end(), out.begin(), out.end());
  auto total = shapeNumElements(outShape);
  if (!total)
    return ctx.error("output too large");
  // The loops visit the taps of each window inside the input only.
  uint64_t taps = 1;
  for (size_t i = 0; i < k; ++i)
    taps = saturatingProduct({taps, uint64_t(std::min(kernel[i], in[i]))});
  if (auto err = ctx.chargeWork(uint64_t(*total), taps))
    return err;
  if (auto err = ctx.chargeScratch(uint64_t(*total) * 2 + x->numElements(),
                                   sizeof(double)))
    return err;
  std::vector<double> y(*total);
  std::vector<int64_t> indices(kind == PoolKind::Max ? *total : 0);
  std::vector<double> xv = x->toDoubles();
  int64_t inSize = shapeNumElements(in).value_or(0);
  int64_t outSize = shapeNumElements(out).value_or(0);
  Shape inStrides = stridesOf(in);
  // Per window and dim, the taps inside the input are kIdx in [lo, hi): the
  // loops visit those only (a window of 2^31 taps padded around a 1x1
  // input costs one tap), and count the padded taps arithmetically.
  Shape oIdx(k), kIdx(k), lo(k), hi(k);
  for (int64_t plane = 0; plane < n * c; ++plane) {
    const double *xp = xv.data() + plane * inSize;
    std::fill(oIdx.begin(), oIdx.end(), 0);
    for (int64_t o = 0; o < outSize; ++o) {
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      int64_t bestIdx = -1, counted = 0;
      double padded = 1; // taps inside the padded input (may pass 2^63)
      bool empty = false;
      for (size_t d = 0; d < k; ++d) {
        int64_t base = oIdx[d] * strides[d] - padBegin[d];
        int64_t dil = dilations[d];
        std::tie(lo[d], hi[d]) = tapsInside(base, dil, in[d], kernel[d]);
        // Taps below in + padEnd count with count_include_pad (128 bits:
        // pads and bases may be near 2^63).
        __int128 padLimit = __int128(in[d]) + padEnd[d] - base;
        __int128 taps = padLimit <= 0 ? 0 : (padLimit - 1) / dil + 1;
        padded *= static_cast<double>(std::min<__int128>(taps, kernel[d]));
        empty |= lo[d] >= hi[d];
        kIdx[d] = lo[d];
      }
      while (!empty) {
        int64_t offset = 0;
        for (size_t d = 0; d < k; ++d)
          offset +=
              (oIdx[d] * strides[d] - padBegin[d] + kIdx[d] * dilations[d]) *
              inStrides[d];
        double v = xp[offset];
        if (v > best || bestIdx < 0) {
          best = v;
          bestIdx = offset;
        }
        sum += v;
        ++counted;
        int64_t d = k - 1;
        for (; d >= 0; --d) {
          if (++kIdx[d] < hi[d])
            break;
          kIdx[d] = lo[d];
        }
        empty = d < 0;
      }
      int64_t oi = plane * outSize + o;
      if (kind == PoolKind::Max) {
        y[oi] = best;
        indices[oi] = bestIdx < 0 ? -1 : plane * inSize + bestIdx;
      } else {
        double div = countPad ? padded : static_cast<double>(counted);
        y[oi] = div != 0 ? sum / div : 0.0;
      }
      for (int64_t d = k - 1; d >= 0; --d) {
        if (++oIdx[d] < out[d])
          break;
        oIdx[d] = 0;
      }
    }
  }
  if (auto err = emit(ctx, 0, x->kind(), outShape, y))
    return err;
  if (kind == PoolKind::Max && ctx.wantsOutput(1)) {
    if (auto err = ctx.allocateOutput(1, ElementKind::I64, outShape))
      return err;
    if (ctx.getInt("storage_order", 0) != 0) {
      // Column-major within each plane: reverse the spatial strides.
      Shape colStrides(k, 1);
      for (size_t d = 1; d < k; ++d)
        colStrides[d] = colStrides[d - 1] * in[d - 1];
      for (int64_t &idx : indices) {
        if (idx < 0)
          continue;
        int64_t plane = idx / inSize, rem = idx % inSize, col = 0;
        for (size_t d = 0; d < k; ++d)
          col += (rem / inStrides[d]) % in[d] * colStrides[d];
        idx = plane * inSize + col;
      }
    }
    std::copy(indices.begin(), indices.end(), ctx.outputs[1].data<int64_t>());
  }
  return llvm::Error::success();
}

llvm::Error maxPoolKernel(KernelContext &ctx) {
  return poolKernel(ctx, PoolKind::Max);
}
llvm::Error averagePoolKernel(KernelContext &ctx) {
  return poolKernel(ctx, PoolKind::Average);
}

llvm::Error globalPoolKernel(KernelContext &ctx, PoolKind kind) {
  const Tensor *x = ctx.input(0);
  if (!x || x->rank() < 2)
    return ctx.error("global pooling needs an input of rank >= 2");
  int64_t planes = x->dim(0) * x->dim(1);
  int64_t size = x->numElements() / std::max<int64_t>(planes, 1);
  Shape outShape(x->rank(), 1);
  outShape[0] = x->dim(0);
  outShape[1] = x->dim(1);
  std::vector<double> y(planes);
  for (int64_t p = 0; p < planes; ++p) {
    double acc =
        kind == PoolKind::Max ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t i = 0; i < size; ++i) {
      double v = x->getDouble(p * size + i);
      acc = kind == PoolKind::Max ? std::max(acc, v) : acc + v;
    }
    y[p] = kind == PoolKind::Max ? acc : acc / size;
  }
  return emit(ctx, 0, x->kind(), outShape, y);
}

llvm::Error globalAveragePoolKernel(KernelContext &ctx) {
  return globalPoolKernel(ctx, PoolKind::Average);
}
llvm::Error globalMaxPoolKernel(KernelContext &ctx) {
  return globalPoolKernel(ctx, PoolKind::Max);
}

llvm::Error batchNormKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0), *scale = ctx.input(1), *bias = ctx.input(2),
               *mean = ctx.input(3), *var = ctx.input(4);
  if (!x || !scale || !bias || !mean || !var || x->rank() < 2)
    return ctx.error("BatchNormalization needs X, scale, B, mean and var");
  int64_t c = x->dim(1);
  for (const Tensor *p : {scale, bias, mean, var})
    if (p->numElements() != c)
      return ctx.error("BatchNormalization parameters must have " +
                       llvm::Twine(c) + " elements");
  double eps = ctx.getFloat("epsilon", 1e-5f);
  int64_t inner = x->numElements() / std::max<int64_t>(x->dim(0) * c, 1);
  std::vector<double> useMean = mean->toDoubles(), useVar = var->toDoubles();
  bool training = ctx.getInt("training_mode", 0);
  std::vector<double> batchMean(c, 0.0), batchVar(c, 0.0);
  if (training) {
    // Statistics of this batch (population variance), per channel.
    int64_t perChannel = x->dim(0) * inner;
    for (int64_t i = 0; i < x->numElements(); ++i)
      batchMean[(i / inner) % c] += x->getDouble(i);
    for (double &m : batchMean)
      m /= perChannel;
    for (int64_t i = 0; i < x->numElements(); ++i) {
      double d = x->getDouble(i) - batchMean[(i / inner) % c];
      batchVar[(i / inner) % c] += d * d;
    }
    for (double &v : batchVar)
      v /= perChannel;
    useMean = batchMean;
    useVar = batchVar;
  }
  std::vector<double> y(x->numElements());
  for (int64_t i = 0; i < x->numElements(); ++i) {
    int64_t ch = (i / inner) % c;
    y[i] = (x->getDouble(i) - useMean[ch]) / std::sqrt(useVar[ch] + eps) *
               scale->getDouble(ch) +
           bias->getDouble(ch);
  }
  if (auto err = emit(ctx, 0, x->kind(), x->shape(), y))
    return err;
  if (training) {
    double momentum = ctx.getFloat("momentum", 0.9f);
    std::vector<double> runMean(c), runVar(c);
    for (int64_t ch = 0; ch < c; ++ch) {
      runMean[ch] =
          mean->getDouble(ch) * momentum + batchMean[ch] * (1 - momentum);
      runVar[ch] =
          var->getDouble(ch) * momentum + batchVar[ch] * (1 - momentum);
    }
    if (ctx.wantsOutput(1))
      if (auto err = emit(ctx, 1, mean->kind(), mean->shape(), runMean))
        return err;
    if (ctx.wantsOutput(2))
      if (auto err = emit(ctx, 2, var->kind(), var->shape(), runVar))
        return err;
  }
  return llvm::Error::success();
}

llvm::Error layerNormKernel(KernelContext &ctx) {
  const Tensor *x = ctx.input(0), *scale = ctx.input(1), *bias = ctx.input(2);
  if (!x || !scale)
    return ctx.error("LayerNormalization needs X and Scale");
  auto axis = normalizeAxis(ctx, ctx.getInt("axis", -1), x->rank());
  if (!axis)
    return axis.takeError();
  double eps = ctx.getFloat("epsilon", 1e-5f);
  Shape normShape(x->shape().begin() + *axis, x->shape().end());
  int64_t inner = shapeNumElements(normShape).value_or(1);
  int64_t outer = x->numElements() / std::max<int64_t>(inner, 1);
  auto sShape = broadcastShapes(scale->shape(), normShape);
  if (!sShape || *sShape != normShape)
    return ctx.error("Scale does not broadcast to the normalized shape");
  BroadcastIndexer si(scale->shape(), normShape);
  std::optional<BroadcastIndexer> bi;
  if (bias)
    bi.emplace(bias->shape(), normShape);
  std::vector<double> y(x->numElements()), means(outer), invStd(outer);
  for (int64_t o = 0; o < outer; ++o) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < inner; ++i)
      sum += x->getDouble(o * inner + i);
    double mu = sum / inner;
    for (int64_t i = 0; i < inner; ++i) {
      double d = x->getDouble(o * inner + i) - mu;
      sq += d * d;
    }
    double inv = 1.0 / std::sqrt(sq / inner + eps);
    means[o] = mu;
    invStd[o] = inv;
    for (int64_t i = 0; i < inner; ++i) {
      double v = (x->getDouble(o * inner + i) - mu) * inv *
                 scale->getDouble(si.offsets()[i]);
      if (bias)
        v += bias->getDouble(bi->offsets()[i]);
      y[o * inner + i] = v;
    }
  }
  if (auto err = emit(ctx, 0, x->kind(), x->shape(), y))
    return err;
  Shape statShape = x->shape();
  for (size_t d = *axis; d < statShape.size(); ++d)
    statShape[d] = 1;
  ElementKind statKind =
      elementKindFromOnnxDataType(ctx.getInt("stash_type", 1))
          .value_or(ElementKind::F32);
  if (ctx.wantsOutput(1))
    if (auto err = emit(ctx, 1, statKind, statShape, means))
      return err;
  if (ctx.wantsOutput(2))
    if (auto err = emit(ctx, 2, statKind, statShape, invStd))
      return err;
  return llvm::Error::success();
}

enum class SoftmaxKind { Softmax, LogSoftmax, Hardmax };

llvm::Error softmaxImpl(KernelContext &ctx, SoftmaxKind kind) {
  const Tensor *x = ctx.input(0);
  if (!x)
    return ctx.error("missing input");
  bool legacy = ctx.opset < 13;
  auto axis =
      normalizeAxis(ctx, ctx.getInt("axis", legacy ? 1 : -1), x->rank());
  if (!axis)
    return axis.takeError();
  int64_t n = x->numElements();
  std::vector<double> xv = x->toDoubles(), y(n);
  // Legacy: the input is coerced to 2-D [before axis, from axis on].
  int64_t axisSize, inner;
  if (legacy) {
    axisSize = 1;
    for (int64_t d = *axis; d < x->rank(); ++d)
      axisSize *= x->dim(d);
    inner = 1;
  } else {
    axisSize = x->rank() ? x->dim(*axis) : 1;
    inner = 1;
    for (int64_t d = *axis + 1; d < x->rank(); ++d)
      inner *= x->dim(d);
  }
  int64_t outer = n / std::max<int64_t>(axisSize * inner, 1);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * axisSize * inner + i;
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t a = 0; a < axisSize; ++a)
        mx = std::max(mx, xv[base + a * inner]);
      if (kind == SoftmaxKind::Hardmax) {
        // 1 at the first largest value, 0 elsewhere.
        bool found = false;
        for (int64_t a = 0; a < axisSize; ++a) {
          bool first = !found && xv[base + a * inner] == mx;
          found |= first;
          y[base + a * inner] = first ? 1.0 : 0.0;
        }
        continue;
      }
      double sum = 0;
      for (int64_t a = 0; a < axisSize; ++a)
        sum += std::exp(xv[base + a * inner] - mx);
      for (int64_t a = 0; a < axisSize; ++a) {
        double e = xv[base + a * inner] - mx;
        y[base + a * inner] = kind == SoftmaxKind::LogSoftmax
                                  ? e - std::log(sum)
                                  : std::exp(e) / sum;
      }
    }
  return emit(ctx, 0, x->kind(), x->shape(), y);
}

llvm::Error softmaxKernel(KernelContext &ctx) {
  return softmaxImpl(ctx, SoftmaxKind::Softmax);
}
llvm::Error logSoftmaxKernel(KernelContext &ctx) {
  return softmaxImpl(ctx, SoftmaxKind::LogSoftmax);
}
llvm::Error hardmaxKernel(KernelContext &ctx) {
  return softmaxImpl(ctx, SoftmaxKind::Hardmax);
}

} // namespace

void interp::registerNNKernels(KernelRegistry &r) {
  r.add(ops::Conv, convKernel);
  r.add(ops::ConvTranspose, convTransposeKernel);
  r.add(ops::Gemm, gemmKernel);
  r.add(ops::MatMul, matmulKernel);
  r.add(ops::MaxPool, maxPoolKernel);
  r.add(ops::AveragePool, averagePoolKernel);
  r.add(ops::GlobalAveragePool, globalAveragePoolKernel);
  r.add(ops::GlobalMaxPool, globalMaxPoolKernel);
  r.add(ops::BatchNormalization, batchNormKernel);
  r.add(ops::LayerNormalization, layerNormKernel);
  r.add(ops::Softmax, softmaxKernel);
  r.add(ops::LogSoftmax, logSoftmaxKernel);
  r.add(ops::Hardmax, hardmaxKernel);
}
