//===- DataSteps.cpp - Table, max pool, channel copy and quantize steps ---===//
//
// The plan steps that keep int8 tensors in NHWC between conv steps without
// computing anything new: elementwise int8 ops looked up in a table, max
// pooling (order-preserving, so it runs on the stored u8 bytes as they
// are), Concat/Split along the channels, which in NHWC are copies of a
// contiguous channel range of each pixel (or of rows, in ONNX layout),
// nearest Resize as pixel copies, and quantizing f32 tensors (the model's
// input, float islands) straight into the int8 layout.
//
//===----------------------------------------------------------------------===//

#include "qopt/Interpreter/NNUtil.h"
#include "qopt/Kernels/ByteTable.h"
#include "qopt/Kernels/CopyRun.h"
#include "qopt/Plan/Plan.h"
#include "qopt/Support/Error.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include <emmintrin.h> // SSE2, every x86-64 CPU

using namespace qopt;
using namespace qopt::rt;

//===----------------------------------------------------------------------===//
// Table
//===----------------------------------------------------------------------===//

/// Elements per tile: large enough to amortize a task, small enough to
/// spread a 56x56x64 tensor over several threads.
static constexpr int64_t kTableTileElements = 16384;

int64_t TableStep::getNumTiles() const {
  return (elements + kTableTileElements - 1) / kTableTileElements;
}

llvm::Error TableStep::run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                           void * /*scratch*/) const {
  int64_t begin = tileBegin * kTableTileElements;
  int64_t end = std::min(elements, tileEnd * kTableTileElements);
  const uint8_t *a = reinterpret_cast<const uint8_t *>(run.read(inputs[0]));
  char *y = run.write(outputs[0]);
  if (arity == 1 && resultBytes == 1) {
    lookupBytes(run.getPlan().isa, table.data(), a + begin, end - begin,
                reinterpret_cast<uint8_t *>(y) + begin);
  } else if (arity == 1 && resultBytes == 4) {
    // Dequantize to f32: a constant size, so each copy is one move.
    for (int64_t i = begin; i < end; ++i)
      std::memcpy(y + i * 4, &table[a[i] * 4], 4);
  } else if (arity == 1) {
    for (int64_t i = begin; i < end; ++i)
      std::memcpy(y + i * resultBytes, &table[a[i] * resultBytes], resultBytes);
  } else if (broadcast.operand < 0) {
    const uint8_t *b = reinterpret_cast<const uint8_t *>(run.read(inputs[1]));
    for (int64_t i = begin; i < end; ++i)
      y[i] = static_cast<char>(table[a[i] << 8 | b[i]]);
  } else if (begin < end) {
    // One operand has every element; the other's element moves every
    // `inner` elements and wraps after `count`.
    const uint8_t *full = reinterpret_cast<const uint8_t *>(
        run.read(inputs[1 - broadcast.operand]));
    const uint8_t *along =
        reinterpret_cast<const uint8_t *>(run.read(inputs[broadcast.operand]));
    int fullShift = broadcast.operand == 1 ? 8 : 0;
    int alongShift = 8 - fullShift;
    int64_t j = (begin / broadcast.inner) % broadcast.count;
    int64_t k = begin % broadcast.inner;
    for (int64_t i = begin; i < end; ++i) {
      y[i] = static_cast<char>(
          table[full[i] << fullShift | along[j] << alongShift]);
      if (++k == broadcast.inner) {
        k = 0;
        if (++j == broadcast.count)
          j = 0;
      }
    }
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Max pool
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
// Channel copy
//===----------------------------------------------------------------------===//

/// The pieces writing one result, when they gather channels into its
/// consecutive channels: per source tensor, (its channel, the result's
/// channel from the first) pairs; the grid every piece quantizes onto, or
/// none.
struct ChannelCopyStep::Gather {
  struct Source {
    int from;
    std::vector<int64_t> fromChannels, toChannels;
  };
  int to;
  int64_t firstChannel, channels = 0;
  std::optional<QuantizeGrid> grid;
  std::vector<Source> sources;
};

/// Whether two grids are the same.
static bool sameGrid(const std::optional<QuantizeGrid> &a,
                     const std::optional<QuantizeGrid> &b) {
  return a.has_value() == b.has_value() &&
         (!a || (a->scale == b->scale && a->zero == b->zero &&
                 a->isSigned == b->isSigned && a->flip == b->flip));
}

ChannelCopyStep::ChannelCopyStep(std::string name, std::vector<Piece> pieces,
                                 int64_t rows)
    : PlanStep(Kind::ChannelCopy, std::move(name)), pieces(std::move(pieces)),
      rows(rows) {
  // Many short pieces only: a few long ones copy faster one by one.
  if (this->pieces.size() < 8)
    return;
  for (const Piece &p : this->pieces) {
    auto g = llvm::find_if(gathers, [&](auto &g) { return g.to == p.to; });
    if (g == gathers.end()) {
      gathers.push_back({p.to, p.toChannel, 0, p.grid, {}});
      g = gathers.end() - 1;
    }
    if (!p.table.empty() || p.from == p.to || p.channels < 1 ||
        p.toChannel != g->firstChannel + g->channels ||
        !sameGrid(p.grid, g->grid)) {
      gathers.clear(); // not a gather: piece by piece
      return;
    }
    auto s =
        llvm::find_if(g->sources, [&](auto &s) { return s.from == p.from; });
    if (s == g->sources.end()) {
      g->sources.push_back({p.from, {}, {}});
      s = g->sources.end() - 1;
    }
    for (int64_t c = 0; c < p.channels; ++c) {
      s->fromChannels.push_back(p.fromChannel + c);
      s->toChannels.push_back(g->channels++);
    }
  }
}

ChannelCopyStep::~ChannelCopyStep() = default;

namespace {

/// Whether `g`'s tensors are NHWC of kinds it can gather (the same kind of
/// 1 or 4 bytes, or f32 onto a grid); a plan file may pair any.
bool gatherFits(const PlanRun &run, int to, int from,
                const std::optional<QuantizeGrid> &grid) {
  const PlanTensor &t = run.tensor(to), &f = run.tensor(from);
  if (t.layout != PlanLayout::Nhwc || f.layout != PlanLayout::Nhwc)
    return false;
  size_t size = getElementByteSize(t.kind);
  return grid ? f.kind == ElementKind::F32
              : f.kind == t.kind && (size == 4 || size == 1);
}

/// One result's gather over pixels [pixelBegin, pixelEnd): the index lists
/// copied pixel by pixel; with a grid, the f32 channels gathered into a row
/// and quantized.
template <typename T, typename Gather>
void gatherChannels(const PlanRun &run, const Gather &g, int64_t pixelBegin,
                    int64_t pixelEnd) {
  int64_t toC = run.tensor(g.to).shape[1];
  char *dst = run.write(g.to);
  auto gatherPixel = [&](int64_t px, auto *out) {
    for (const auto &s : g.sources) {
      const T *in = reinterpret_cast<const T *>(run.read(s.from)) +
                    px * run.tensor(s.from).shape[1];
      const int64_t *from = s.fromChannels.data(), *to = s.toChannels.data();
      for (size_t k = 0, e = s.fromChannels.size(); k < e; ++k)
        out[to[k]] = in[from[k]];
    }
  };
  if (!g.grid) {
    for (int64_t px = pixelBegin; px < pixelEnd; ++px)
      gatherPixel(px, reinterpret_cast<T *>(dst) + px * toC + g.firstChannel);
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    std::vector<float> row(g.channels);
    Isa isa = run.getPlan().isa;
    for (int64_t px = pixelBegin; px < pixelEnd; ++px) {
      gatherPixel(px, row.data());
      quantizeFloats(isa, row.data(), g.channels, *g.grid,
                     reinterpret_cast<uint8_t *>(dst) + px * toC +
                         g.firstChannel);
    }
  }
}

} // namespace

llvm::Error ChannelCopyStep::run(PlanRun &run, int64_t tileBegin,
                                 int64_t tileEnd, void * /*scratch*/) const {
  if (tileBegin >= tileEnd)
    return llvm::Error::success();
  bool gathering = !gathers.empty();
  for (const Gather &g : gathers)
    for (const Gather::Source &s : g.sources)
      gathering &= gatherFits(run, g.to, s.from, g.grid);
  if (gathering) {
    // Rows of pixels: every tensor of the step has the same.
    int64_t width = run.tensor(gathers.front().to).shape[3];
    for (const Gather &g : gathers) {
      if (run.tensor(g.sources.front().from).kind == ElementKind::F32)
        gatherChannels<float>(run, g, tileBegin * width, tileEnd * width);
      else
        gatherChannels<uint8_t>(run, g, tileBegin * width, tileEnd * width);
    }
    return llvm::Error::success();
  }
  for (const Piece &p : pieces) {
    if (p.channels == 0)
      continue; // nothing to copy, maybe from an empty constant's null bytes
    const PlanTensor &from = run.tensor(p.from), &to = run.tensor(p.to);
    size_t size = getElementByteSize(to.kind);
    // NHWC: a tile is a row of pixels, each with its channels. ONNX layout:
    // a tile is one row, its span the elements from the axis on.
    bool nhwc = from.layout == PlanLayout::Nhwc;
    int64_t width = nhwc ? from.shape[3] : 1;
    int64_t fromC = nhwc ? from.shape[1] : from.numElements() / rows;
    int64_t toC = nhwc ? to.shape[1] : to.numElements() / rows;
    const char *src = run.read(p.from);
    char *dst = run.write(p.to);
    if (p.grid) { // f32 -> int8 bytes: the tiles' pixels in one call
      int64_t first = tileBegin * width, pixels = (tileEnd - tileBegin) * width;
      quantizeFloatRuns(
          run.getPlan().isa,
          reinterpret_cast<const float *>(src) + first * fromC + p.fromChannel,
          fromC, p.channels, pixels, *p.grid,
          reinterpret_cast<uint8_t *>(dst) + first * toC + p.toChannel, toC);
      continue;
    }
    for (int64_t pixel = tileBegin * width, end = tileEnd * width; pixel < end;
         ++pixel) {
      char *dstPixel = dst + (pixel * toC + p.toChannel) * size;
      const char *srcPixel = src + (pixel * fromC + p.fromChannel) * size;
      if (p.table.empty()) {
        // The verifier lets a piece copy within one tensor, and a plan
        // file may place two tensors on the same bytes.
        size_t bytes = p.channels * size;
        uintptr_t to = reinterpret_cast<uintptr_t>(dstPixel),
                  from = reinterpret_cast<uintptr_t>(srcPixel);
        if (to < from + bytes && from < to + bytes)
          std::memmove(dstPixel, srcPixel, bytes);
        else
          copyRun(dstPixel, srcPixel, int64_t(bytes));
        continue;
      }
      lookupBytes(run.getPlan().isa, p.table.data(),
                  reinterpret_cast<const uint8_t *>(srcPixel), p.channels,
                  reinterpret_cast<uint8_t *>(dstPixel));
    }
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Resize (nearest)
//===----------------------------------------------------------------------===//

llvm::Error ResizeStep::run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                            void * /*scratch*/) const {
  const Geometry &g = geometry;
  size_t pixelBytes =
      size_t(g.channels) * getElementByteSize(run.tensor(inputs[0]).kind);
  const char *x = run.read(inputs[0]);
  char *y = run.write(outputs[0]);
  for (int64_t row = tileBegin; row < tileEnd; ++row) {
    int64_t n = row / g.outH, oh = row % g.outH;
    const char *from = x + (n * g.inH + sourceRows[oh]) * g.inW * pixelBytes;
    char *to = y + row * g.outW * pixelBytes;
    // memmove: the verifier does not keep a file's tensors apart.
    for (int64_t ow = 0; ow < g.outW; ++ow)
      std::memmove(to + ow * pixelBytes, from + sourceCols[ow] * pixelBytes,
                   pixelBytes);
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Quantize
//===----------------------------------------------------------------------===//

int64_t QuantizeStep::getNumTiles() const {
  if (toNhwc)
    return shape[0] * shape[2];
  return (elements + kTableTileElements - 1) / kTableTileElements;
}

llvm::Error QuantizeStep::run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                              void * /*scratch*/) const {
  const float *x = reinterpret_cast<const float *>(run.read(inputs[0]));
  uint8_t *y = reinterpret_cast<uint8_t *>(run.write(outputs[0]));
  if (!toNhwc) {
    int64_t begin = tileBegin * kTableTileElements;
    int64_t end = std::min(tileEnd * kTableTileElements, elements);
    quantizeFloats(isa, x + begin, end - begin, grid, y + begin);
    return llvm::Error::success();
  }
  // Each row: the channels' planes quantized and interleaved into pixels.
  int64_t channels = shape[1], height = shape[2], width = shape[3];
  for (int64_t row = tileBegin; row < tileEnd; ++row) {
    int64_t n = row / height, h = row % height;
    quantizeFloatPlanes(isa, x + (n * channels * height + h) * width,
                        height * width, channels, width, grid,
                        y + row * width * channels);
  }
  return llvm::Error::success();
}
