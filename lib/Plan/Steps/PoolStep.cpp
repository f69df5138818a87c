//===- PoolStep.cpp - Max pooling over NHWC -------------------------------===//
//
// MaxPool over NHWC u8 bytes as stored (order-preserving) or f32.
//
// The kind's row is in qopt/Plan/PlanSteps.def; this file has what it
// does, its fields in a plan file, what its kernel relies on and its work.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/Steps/PoolStep.h"

#include "PlanFields.h"
#include "PlanVerifier.h"
#include "PlanWork.h"
#include "qopt/Interpreter/NNUtil.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/ResourceLimits.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include <emmintrin.h> // SSE2, every x86-64 CPU

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;
using namespace qopt::plan::planfile;

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

llvm::Expected<PoolStep::Window> PoolStep::getWindow(const KernelOp &op,
                                                     const Shape &inShape,
                                                     const Shape &outShape,
                                                     Shape *padEndOut) {
  KernelContext ctx(op, {}, 0);
  std::vector<int64_t> kernel = ctx.getInts("kernel_shape");
  if (inShape.size() != 4 || outShape.size() != 4 || kernel.size() != 2)
    return ctx.error("NHWC pooling needs a 4-D input and a 2-D window");
  Shape strides = ctx.getInts("strides", {1, 1});
  Shape dilations = ctx.getInts("dilations", {1, 1});
  if (strides.size() != 2 || dilations.size() != 2)
    return ctx.error("strides and dilations need 2 values");
  Shape padBegin, padEnd, out;
  if (auto err = windowGeometry(ctx, {inShape[2], inShape[3]}, kernel, strides,
                                dilations, ctx.getInt("ceil_mode", 0) != 0,
                                padBegin, padEnd, out))
    return std::move(err);
  if (padEndOut)
    *padEndOut = padEnd;
  Window w{inShape[0],   inShape[1],   inShape[2],  inShape[3], out[0],
           out[1],       kernel[0],    kernel[1],   strides[0], strides[1],
           dilations[0], dilations[1], padBegin[0], padBegin[1]};
  if (outShape != Shape{w.batch, w.channels, w.outH, w.outW})
    return ctx.error("the window gives " +
                     shapeToString({w.batch, w.channels, w.outH, w.outW}) +
                     ", the result is " + shapeToString(outShape));
  if (auto err = checkGeometry(w))
    return ctx.error(llvm::toString(std::move(err)));
  return w;
}

llvm::Error PoolStep::checkGeometry(const Window &w) {
  auto fits = [](int64_t in, int64_t out, int64_t kernel, int64_t stride,
                 int64_t dilation, int64_t padBegin) {
    // In 128 bits: a window's parameters from a graph may be near 2^62.
    __int128 extent = __int128(dilation) * (kernel - 1) + 1;
    return padBegin < extent && __int128(out - 1) * stride - padBegin < in;
  };
  if (!fits(w.inH, w.outH, w.kernelH, w.strideH, w.dilationH, w.padTop) ||
      !fits(w.inW, w.outW, w.kernelW, w.strideW, w.dilationW, w.padLeft))
    return makeError(
        "a window of " + llvm::Twine(w.kernelH) + "x" + llvm::Twine(w.kernelW) +
        " (stride " + llvm::Twine(w.strideH) + "x" + llvm::Twine(w.strideW) +
        ", pads " + llvm::Twine(w.padTop) + "," + llvm::Twine(w.padLeft) +
        ") over " + llvm::Twine(w.inH) + "x" + llvm::Twine(w.inW) +
        " gives no " + llvm::Twine(w.outH) + "x" + llvm::Twine(w.outW) +
        " result whose windows all touch the input");
  return llvm::Error::success();
}

namespace {

/// max(x, acc) as the reference's window loop takes it, acc = x > acc ? x :
/// acc (a NaN already in acc stays, a NaN in x does not enter): maxps and
/// pmaxub give their second operand where either is NaN. SSE2, which every
/// x86-64 CPU has, a 64-byte block of channels in four registers.
template <int K> struct FloatBlock {
  static constexpr int64_t kChannels = 4 * K;
  __m128 r[K];
  void load(const float *x) {
    for (int k = 0; k < K; ++k)
      r[k] = _mm_loadu_ps(x + 4 * k);
  }
  void maxWith(const float *x) {
    for (int k = 0; k < K; ++k)
      r[k] = _mm_max_ps(_mm_loadu_ps(x + 4 * k), r[k]);
  }
  void store(float *y) const {
    for (int k = 0; k < K; ++k)
      _mm_storeu_ps(y + 4 * k, r[k]);
  }
};
/// K registers of 16 bytes, or (K = 0) the low 8 bytes of one.
template <int K> struct ByteBlock {
  static constexpr int N = K ? K : 1;
  static constexpr int64_t kChannels = K ? 16 * K : 8;
  __m128i r[N];
  static __m128i at(const uint8_t *x, int k) {
    const auto *p = reinterpret_cast<const __m128i *>(x + 16 * k);
    return K ? _mm_loadu_si128(p) : _mm_loadl_epi64(p);
  }
  void load(const uint8_t *x) {
    for (int k = 0; k < N; ++k)
      r[k] = at(x, k);
  }
  void maxWith(const uint8_t *x) {
    for (int k = 0; k < N; ++k)
      r[k] = _mm_max_epu8(at(x, k), r[k]);
  }
  void store(uint8_t *y) const {
    for (int k = 0; k < N; ++k) {
      auto *p = reinterpret_cast<__m128i *>(y + 16 * k);
      if (K)
        _mm_storeu_si128(p, r[k]);
      else
        _mm_storel_epi64(p, r[k]);
    }
  }
};
/// The blocks a row of channels is cut into, widest first: 64 channels,
/// then 16 and 8 (bytes) or 16 and 4 (f32), the rest one at a time.
template <typename T> struct BlocksOf;
template <> struct BlocksOf<float> {
  using Wide = FloatBlock<4>;
  using Narrow = FloatBlock<1>;
};
template <> struct BlocksOf<uint8_t> {
  using Wide = ByteBlock<4>;
  using Narrow = ByteBlock<1>;
  using Narrowest = ByteBlock<0>;
};

/// Max pooling, ONNX's rules: the window skips padding; the first NaN in a
/// window stays (a value replaces the running max only where greater, so
/// NaN never replaces and is never replaced); a window with no value
/// inside the input holds -inf (0 as stored for int8, where -inf
/// saturates to the lowest value). A block of channels at a time is kept
/// in registers over its window.
template <typename T>
void maxPoolRows(const PoolStep::Window &w, const T *in, T *out,
                 int64_t rowBegin, int64_t rowEnd) {
  int64_t c = w.channels;
  T empty = std::numeric_limits<T>::has_infinity
                ? -std::numeric_limits<T>::infinity()
                : std::numeric_limits<T>::lowest();
  for (int64_t row = rowBegin; row < rowEnd; ++row) {
    int64_t n = row / w.outH, oh = row % w.outH;
    for (int64_t ow = 0; ow < w.outW; ++ow) {
      T *y = out + ((n * w.outH + oh) * w.outW + ow) * c;
      // Only the taps inside the input are visited (tapsInside), so a
      // window of 2^31 x 2^31 around a small input costs that input.
      int64_t baseH = oh * w.strideH - w.padTop;
      int64_t baseW = ow * w.strideW - w.padLeft;
      int64_t kyBegin, kyEnd, kxBegin, kxEnd;
      std::tie(kyBegin, kyEnd) =
          tapsInside(baseH, w.dilationH, w.inH, w.kernelH);
      std::tie(kxBegin, kxEnd) =
          tapsInside(baseW, w.dilationW, w.inW, w.kernelW);
      // f(x) for the window's pixels inside the input, in the reference's
      // order; whether there was one.
      auto forEachTap = [&](auto f) {
        bool any = false;
        for (int64_t ky = kyBegin; ky < kyEnd; ++ky) {
          int64_t ih = baseH + ky * w.dilationH;
          for (int64_t kx = kxBegin; kx < kxEnd; ++kx) {
            int64_t iw = baseW + kx * w.dilationW;
            f(in + ((n * w.inH + ih) * w.inW + iw) * c, !any);
            any = true;
          }
        }
        return any;
      };
      int64_t ch = 0;
      // Blocks of `Block::kChannels` from ch on while they fit; false when
      // the window has no tap inside the input.
      auto blocks = [&](auto block) {
        using Block = decltype(block);
        for (; ch + Block::kChannels <= c; ch += Block::kChannels) {
          if (!forEachTap([&](const T *x, bool first) {
                first ? block.load(x + ch) : block.maxWith(x + ch);
              }))
            return false;
          block.store(y + ch);
        }
        return true;
      };
      bool inside = blocks(typename BlocksOf<T>::Wide()) &&
                    blocks(typename BlocksOf<T>::Narrow());
      if constexpr (std::is_same_v<T, uint8_t>)
        inside = inside && blocks(typename BlocksOf<T>::Narrowest());
      (void)inside; // the channels left take the loop below, empty or not
      for (; ch < c; ++ch) {
        T m = empty;
        forEachTap([&](const T *x, bool first) {
          m = first || x[ch] > m ? x[ch] : m;
        });
        y[ch] = m;
      }
    }
  }
}

} // namespace

llvm::Error PoolStep::run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                          void * /*scratch*/) const {
  if (isFloat)
    maxPoolRows(window, reinterpret_cast<const float *>(run.read(inputs[0])),
                reinterpret_cast<float *>(run.write(outputs[0])), tileBegin,
                tileEnd);
  else
    maxPoolRows(window, reinterpret_cast<const uint8_t *>(run.read(inputs[0])),
                reinterpret_cast<uint8_t *>(run.write(outputs[0])), tileBegin,
                tileEnd);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Fields, checks, work
//===----------------------------------------------------------------------===//

llvm::Error PoolStep::writeFields(planfile::PlanEncoder &encoder) const {
  encoder.window(window);
  encoder.out.flag(isFloat, "pool kind");
  return llvm::Error::success();
}

std::unique_ptr<PlanStep> planfile::readPoolStep(PlanDecoder &decoder, Plan &,
                                                 const std::string &name) {
  PoolStep::Window w = decoder.window();
  bool isFloat = decoder.in.flag("pool kind");
  return std::make_unique<PoolStep>(name, w, isFloat);
}

uint64_t PoolStep::getWindowWork(const Window &w) {
  return saturatingProduct(
      {uint64_t(w.batch), uint64_t(w.channels), uint64_t(w.outH),
       uint64_t(w.outW),
       planwork::tapsInside(w.kernelH, w.kernelW, w.inH, w.inW)});
}

uint64_t PoolStep::getWork(const Plan &) const { return getWindowWork(window); }

llvm::Error PoolStep::verify(const PlanVerifier &check) const {
  const PoolStep &step = *this;
  if (auto err = check.checkOperands(step, 1, 1))
    return err;
  const PoolStep::Window &w = step.getWindow();
  if (auto err = PlanVerifier::checkWindow(w))
    return err;
  bool int8 = !step.isFloatPool();
  if (auto err =
          check.expectNhwc(step.inputs[0], {w.batch, w.channels, w.inH, w.inW},
                           int8, "its input"))
    return err;
  return check.expectNhwc(step.outputs[0],
                          {w.batch, w.channels, w.outH, w.outW}, int8,
                          "its result");
}
