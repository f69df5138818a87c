//===- NNUtil.cpp - Convolution and matrix helpers for the kernels --------===//

#include "qopt/Interpreter/NNUtil.h"
#include "qopt/Support/ResourceLimits.h"

#include <Eigen/Core>

#include <limits>

using namespace qopt;
using namespace qopt::interp;

using RowMatrix =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Shape ConvGeometry::outputShape() const {
  Shape s = {batch, outChannels};
  s.insert(s.end(), outSpatial.begin(), outSpatial.end());
  return s;
}

llvm::Error interp::windowGeometry(const KernelContext &ctx, const Shape &in,
                                   const Shape &kernel, const Shape &strides,
                                   const Shape &dilations, bool ceilMode,
                                   Shape &padBegin, Shape &padEnd, Shape &out) {
  size_t k = in.size();
  std::string autoPad = ctx.getString("auto_pad", "NOTSET");
  std::vector<int64_t> pads =
      ctx.getInts("pads", std::vector<int64_t>(2 * k, 0));
  if (pads.size() != 2 * k)
    return ctx.error("pads has " + llvm::Twine(pads.size()) +
                     " values, expected " + llvm::Twine(2 * k));
  padBegin.assign(k, 0);
  padEnd.assign(k, 0);
  out.assign(k, 0);
  for (size_t i = 0; i < k; ++i) {
    if (strides[i] <= 0 || dilations[i] <= 0 || kernel[i] <= 0)
      return ctx.error("strides, dilations and kernel sizes must be > 0");
    // In 128 bits: a dilation or pad near 2^62 overflows 64.
    __int128 window = __int128(kernel[i] - 1) * dilations[i] + 1, size;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      size = (__int128(in[i]) + strides[i] - 1) / strides[i];
      __int128 total =
          std::max<__int128>(0, (size - 1) * strides[i] + window - in[i]);
      if (total > std::numeric_limits<int64_t>::max())
        return ctx.error("the padding of spatial axis " + llvm::Twine(i) +
                         " is too large");
      int64_t small = int64_t(total / 2);
      padBegin[i] = autoPad == "SAME_UPPER" ? small : int64_t(total) - small;
      padEnd[i] = int64_t(total) - padBegin[i];
      out[i] = int64_t(size);
      continue;
    }
    if (autoPad == "VALID") {
      size = (__int128(in[i]) - window) / strides[i] + 1;
    } else if (autoPad == "NOTSET") {
      padBegin[i] = pads[i];
      padEnd[i] = pads[i + k];
      __int128 span = __int128(in[i]) + padBegin[i] + padEnd[i] - window;
      if (span < 0)
        return ctx.error("window larger than the padded input");
      size = ceilMode ? (span + strides[i] - 1) / strides[i] + 1
                      : span / strides[i] + 1;
      // A window may not start in the end padding (PyTorch/ONNX rule).
      if (ceilMode && (size - 1) * strides[i] >= __int128(in[i]) + padBegin[i])
        --size;
    } else {
      return ctx.error("unknown auto_pad '" + autoPad + "'");
    }
    if (size > std::numeric_limits<int64_t>::max())
      return ctx.error("the window's output on spatial axis " + llvm::Twine(i) +
                       " is too large");
    out[i] = size <= 0 ? 0 : int64_t(size);
    if (out[i] <= 0)
      return ctx.error("window larger than the input");
  }
  return llvm::Error::success();
}

llvm::Expected<ConvGeometry>
interp::convGeometry(const KernelContext &ctx, const Shape &x, const Shape &w) {
  if (x.size() < 3 || w.size() != x.size())
    return ctx.error("input " + shapeToString(x) + " and weight " +
                     shapeToString(w) + " do not form a convolution");
  ConvGeometry g;
  size_t k = x.size() - 2;
  g.batch = x[0];
  g.inChannels = x[1];
  g.outChannels = w[0];
  g.group = ctx.getInt("group", 1);
  if (g.group <= 0 || g.inChannels % g.group || g.outChannels % g.group ||
      w[1] * g.group != g.inChannels)
    return ctx.error("channels " + llvm::Twine(g.inChannels) + " and weight " +
                     shapeToString(w) + " do not match group " +
                     llvm::Twine(g.group));
  g.inSpatial.assign(x.begin() + 2, x.end());
  g.kernel = ctx.getInts("kernel_shape", Shape(w.begin() + 2, w.end()));
  if (g.kernel != Shape(w.begin() + 2, w.end()))
    return ctx.error("kernel_shape does not match the weight shape");
  g.strides = ctx.getInts("strides", Shape(k, 1));
  g.dilations = ctx.getInts("dilations", Shape(k, 1));
  if (g.strides.size() != k || g.dilations.size() != k)
    return ctx.error("strides/dilations have the wrong length");
  if (auto err =
          windowGeometry(ctx, g.inSpatial, g.kernel, g.strides, g.dilations,
                         false, g.padBegin, g.padEnd, g.outSpatial))
    return std::move(err);
  // convolve's work, and its scratch: a gather map of kernel x output
  // positions and one group's im2col rows, beside the output in double.
  uint64_t outSize = 1, kSize = 1;
  for (size_t i = 0; i < k; ++i) {
    outSize = saturatingProduct({outSize, uint64_t(g.outSpatial[i])});
    kSize = saturatingProduct({kSize, uint64_t(g.kernel[i])});
  }
  uint64_t outputs =
      saturatingProduct({uint64_t(g.batch), uint64_t(g.outChannels), outSize});
  uint64_t depth = saturatingProduct({uint64_t(w[1]), kSize});
  if (auto err = ctx.chargeWork(outputs, depth))
    return std::move(err);
  uint64_t scratch = saturatingSum(
      saturatingProduct({saturatingSum(kSize, depth), outSize}), outputs);
  if (auto err = ctx.chargeScratch(scratch, sizeof(double)))
    return std::move(err);
  return g;
}

void interp::convolve(const ConvGeometry &g, const double *x, const double *w,
                      const double *bias, double *y) {
  size_t k = g.inSpatial.size();
  int64_t inSize = 1, outSize = 1, kSize = 1;
  for (size_t i = 0; i < k; ++i) {
    inSize *= g.inSpatial[i];
    outSize *= g.outSpatial[i];
    kSize *= g.kernel[i];
  }
  int64_t cPerGroup = g.inChannels / g.group;
  int64_t mPerGroup = g.outChannels / g.group;
  int64_t rows = cPerGroup * kSize;
  // For each (kernel offset, output position): the input offset or -1.
  std::vector<int64_t> gather(kSize * outSize);
  Shape inStrides = stridesOf(g.inSpatial);
  Shape kIdx(k, 0);
  for (int64_t kf = 0; kf < kSize; ++kf) {
    Shape oIdx(k, 0);
    for (int64_t of = 0; of < outSize; ++of) {
      int64_t offset = 0;
      bool inside = true;
      for (size_t d = 0; d < k && inside; ++d) {
        int64_t pos =
            oIdx[d] * g.strides[d] - g.padBegin[d] + kIdx[d] * g.dilations[d];
        inside = pos >= 0 && pos < g.inSpatial[d];
        offset += pos * inStrides[d];
      }
      gather[kf * outSize + of] = inside ? offset : -1;
      for (int64_t d = k - 1; d >= 0; --d) {
        if (++oIdx[d] < g.outSpatial[d])
          break;
        oIdx[d] = 0;
      }
    }
    for (int64_t d = k - 1; d >= 0; --d) {
      if (++kIdx[d] < g.kernel[d])
        break;
      kIdx[d] = 0;
    }
  }
  RowMatrix cols(rows, outSize);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.group; ++grp) {
      const double *xg = x + (n * g.inChannels + grp * cPerGroup) * inSize;
      for (int64_t c = 0; c < cPerGroup; ++c)
        for (int64_t kf = 0; kf < kSize; ++kf) {
          double *row = cols.data() + (c * kSize + kf) * outSize;
          const int64_t *src = gather.data() + kf * outSize;
          const double *xc = xg + c * inSize;
          for (int64_t of = 0; of < outSize; ++of)
            row[of] = src[of] < 0 ? 0.0 : xc[src[of]];
        }
      Eigen::Map<const RowMatrix> wm(w + grp * mPerGroup * rows, mPerGroup,
                                     rows);
      Eigen::Map<RowMatrix> ym(y + (n * g.outChannels + grp * mPerGroup) *
                                       outSize,
                               mPerGroup, outSize);
      ym.noalias() = wm * cols;
      if (bias)
        for (int64_t m = 0; m < mPerGroup; ++m)
          ym.row(m).array() += bias[grp * mPerGroup + m];
    }
  }
}

llvm::Error interp::matmul(const KernelContext &ctx, const Shape &aShapeIn,
                           const std::vector<double> &a, const Shape &bShapeIn,
                           const std::vector<double> &b, Shape &outShape,
                           std::vector<double> &out) {
  if (aShapeIn.empty() || bShapeIn.empty())
    return ctx.error("MatMul operands must have rank >= 1");
  Shape aShape = aShapeIn, bShape = bShapeIn;
  bool aVec = aShape.size() == 1, bVec = bShape.size() == 1;
  if (aVec)
    aShape.insert(aShape.begin(), 1);
  if (bVec)
    bShape.push_back(1);
  int64_t m = aShape[aShape.size() - 2], k = aShape.back();
  int64_t k2 = bShape[bShape.size() - 2], n = bShape.back();
  if (k != k2)
    return ctx.error("MatMul inner dimensions differ: " +
                     shapeToString(aShapeIn) + " x " + shapeToString(bShapeIn));
  Shape aBatch(aShape.begin(), aShape.end() - 2);
  Shape bBatch(bShape.begin(), bShape.end() - 2);
  auto batch = broadcastShapes(aBatch, bBatch);
  if (!batch)
    return ctx.error("MatMul batch dimensions do not broadcast: " +
                     shapeToString(aShapeIn) + " x " + shapeToString(bShapeIn));
  int64_t batches = shapeNumElements(*batch).value_or(0);
  uint64_t outputs =
      saturatingProduct({uint64_t(batches), uint64_t(m), uint64_t(n)});
  if (auto err = ctx.chargeWork(outputs, uint64_t(k)))
    return err;
  if (auto err = ctx.chargeScratch(outputs, sizeof(double)))
    return err;
  BroadcastIndexer ai(aBatch, *batch), bi(bBatch, *batch);
  out.assign(batches * m * n, 0.0);
  for (int64_t i = 0; i < batches; ++i) {
    Eigen::Map<const RowMatrix> am(a.data() + ai.offsets()[i] * m * k, m, k);
    Eigen::Map<const RowMatrix> bm(b.data() + bi.offsets()[i] * k * n, k, n);
    Eigen::Map<RowMatrix> om(out.data() + i * m * n, m, n);
    om.noalias() = am * bm;
  }
  outShape = *batch;
  if (!aVec)
    outShape.push_back(m);
  if (!bVec)
    outShape.push_back(n);
  return llvm::Error::success();
}
