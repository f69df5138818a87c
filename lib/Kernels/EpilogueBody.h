//===- EpilogueBody.h - The conv epilogue over any vector width -*- C++ -*-===//
//
// Private to lib/Kernels: included by EpilogueAvx2.cpp (8 lanes) and
// EpilogueAvx512.cpp (16 lanes) only, each built for its instruction set,
// after defining the lane operations `V`:
//
//   F, I                     float and int32 vectors of V::kLanes lanes
//   M                        a lane mask (a compare's result)
//   set1, set1i, zero        splats
//   add sub mul div min max  IEEE operations, lane by lane (min and max
//                            return the second operand where either is NaN)
//   fma(a, b, c)             a * b + c rounded once
//   fnmsub(a, b, c)          -(a * b) - c rounded once
//   timesPowerOf2(a, n)      a * 2^n, n integral in [-126, 127], the
//                            product normal (so exact)
//   round                    to nearest, ties to even
//   subi                     int32 lanes
//   toFloat, toInt, asFloat  cvtdq2ps, cvtps2dq, a bit cast
//   less(a, b), unordered(a) compares, ordered and quiet
//   select(m, a, b)          b where m is set, a elsewhere
//   loadI, loadBytes         kLanes int32s, or bytes widened to int32
//   storeF, storeBytes       kLanes floats, or lanes holding 0..255 as
//                            bytes (an integer grid's: 0 or more,
//                            saturated to 255)
//   kIntegerGrid, gridInts   whether V has gridInts(quotient, zero): the
//                            int32 lanes of nearbyint(quotient) + zero,
//                            NaN and below 0 as 0, more than 255 as
//                            anything above it
//
// whole vectors only: a row's last channels, fewer than kLanes, go through
// padded copies here (loadLanes, storeLanes), unless V::kMaskedTails: then
// V's loadIMasked, loadBytesMasked, storeBytesMasked and storeFMasked
// read and write only the first `count` lanes' memory.
//
// Everything else is here once, so the widths cannot drift apart: both give
// the scalar epilogue's bits (EpilogueKernels.h). An anonymous namespace:
// each file keeps its own copy, built for its own instructions.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_EPILOGUEBODY_H
#define QOPT_LIB_KERNELS_EPILOGUEBODY_H

#include "EpilogueKernels.h"
#include "SigmoidFloat.h"

#include <cstddef>
#include <cstring>
#include <type_traits>

#define QOPT_EPILOGUE_INLINE __attribute__((always_inline)) inline

namespace {

using qopt::kernels::epilogue::Params;
using qopt::kernels::epilogue::VectorActivation;

/// `count` elements at `at` through a whole-vector load (`load` of a
/// pointer to Element): the rest of the lanes zero.
template <typename V, typename Element, typename Load>
QOPT_EPILOGUE_INLINE auto loadPadded(const Element *at, int64_t count,
                                     Load load) {
  if (count == V::kLanes)
    return load(at);
  alignas(64) Element pad[V::kLanes] = {};
  std::memcpy(pad, at, size_t(count) * sizeof(Element));
  return load(pad);
}

template <typename V>
QOPT_EPILOGUE_INLINE typename V::I loadLanes(const int32_t *at, int64_t count) {
  if constexpr (V::kMaskedTails)
    if (count < V::kLanes)
      return V::loadIMasked(at, count);
  return loadPadded<V>(at, count, [](const int32_t *p) { return V::loadI(p); });
}
template <typename V>
QOPT_EPILOGUE_INLINE typename V::F loadLanes(const float *at, int64_t count) {
  return V::asFloat(loadLanes<V>(reinterpret_cast<const int32_t *>(at), count));
}
template <typename V>
QOPT_EPILOGUE_INLINE typename V::I loadByteLanes(const uint8_t *at,
                                                 int64_t count) {
  if constexpr (V::kMaskedTails)
    if (count < V::kLanes)
      return V::loadBytesMasked(at, count);
  return loadPadded<V>(at, count,
                       [](const uint8_t *p) { return V::loadBytes(p); });
}

/// The first `count` elements of what `store` writes as a whole vector to
/// a pointer to Element.
template <typename V, typename Element, typename Store>
QOPT_EPILOGUE_INLINE void storePadded(Element *out, int64_t count,
                                      Store store) {
  if (count == V::kLanes) {
    store(out);
    return;
  }
  alignas(64) Element tmp[V::kLanes];
  store(tmp);
  std::memcpy(out, tmp, size_t(count) * sizeof(Element));
}

/// sigmoid::expOfNegated on every lane, operation for operation.
template <typename V>
QOPT_EPILOGUE_INLINE typename V::F expOfNegatedLanes(typename V::F x) {
  using namespace qopt::kernels::sigmoid;
  using F = typename V::F;
  F c = V::max(V::min(x, V::set1(kHighestX)), V::set1(kLowestX));
  F n = V::round(V::mul(c, V::set1(-kLog2E)));
  F r = V::fnmsub(n, V::set1(kLn2Hi), c); // n * -ln2hi + t, as t = -c
  r = V::fma(n, V::set1(-kLn2Lo), r);
  F one = V::set1(1.0f);
  F e = V::set1(kPoly[0]);
#pragma GCC unroll 5
  for (int i = 1; i < 6; ++i)
    e = V::fma(e, r, V::set1(kPoly[i]));
  e = V::fma(V::fma(e, r, one), r, one);
  return V::timesPowerOf2(e, n);
}

/// sigmoid::scalar on every lane: NaN lanes stay NaN.
template <typename V>
QOPT_EPILOGUE_INLINE typename V::F sigmoidLanes(typename V::F x) {
  typename V::F one = V::set1(1.0f);
  typename V::F s = V::div(one, V::add(one, expOfNegatedLanes<V>(x)));
  return V::select(V::unordered(x), s, x);
}

/// The row's constants, splat once.
template <typename V> struct Lanes {
  typename V::F outputScale, outputZero, residualScale, alpha, beta, zero, top;
  typename V::I residualZero, outputZeroI, pairOutputZeroI;
  typename V::F pairScaleV, pairZeroV, pairScaleW, pairLow, pairHigh,
      pairOutputScale, pairOutputZero;
  typename V::I pairZeroW;

  explicit Lanes(const Params &p)
      : outputScale(V::set1(p.outputScale)), outputZero(V::set1(p.outputZero)),
        residualScale(V::set1(p.residualScale)), alpha(V::set1(p.alpha)),
        beta(V::set1(p.beta)), zero(V::zero()), top(V::set1(255.0f)),
        residualZero(V::set1i(p.residualZero)),
        outputZeroI(V::set1i(int32_t(p.outputZero))),
        pairOutputZeroI(V::set1i(int32_t(p.pairOutputZero))),
        pairScaleV(V::set1(p.pairScaleV)), pairZeroV(V::set1(p.pairZeroV)),
        pairScaleW(V::set1(p.pairScaleW)), pairLow(V::set1(p.pairLow)),
        pairHigh(V::set1(p.pairHigh)),
        pairOutputScale(V::set1(p.pairOutputScale)),
        pairOutputZero(V::set1(p.pairOutputZero)),
        pairZeroW(V::set1i(p.pairZeroW)) {}
};

/// One vector of channels of one pixel: the sums, their per-channel
/// constants, the residual (widened); returns y before the output grid, or
/// with OverScale (SiLU onto a grid: sigmoid::siluOverScale) y already
/// divided by the output scale.
template <typename V, VectorActivation Act, bool Residual, bool ResidualLast,
          bool OverScale>
QOPT_EPILOGUE_INLINE typename V::F
finishLanes(const Params &p, const Lanes<V> &l, typename V::I acc,
            typename V::I zeroTerm, typename V::F scale, typename V::F bias,
            typename V::I residual) {
  using F = typename V::F;
  F y = V::mul(V::toFloat(V::subi(acc, zeroTerm)), scale);
  if (p.bias)
    y = V::add(y, bias);
  F r = l.zero;
  if (Residual)
    r = V::mul(V::toFloat(V::subi(residual, l.residualZero)), l.residualScale);
  if (Residual && !ResidualLast)
    y = V::add(y, r);
  switch (Act) {
  case VectorActivation::None:
    break;
  case VectorActivation::Relu: // v < 0 ? 0 : v
    y = V::select(V::less(y, l.zero), y, l.zero);
    break;
  case VectorActivation::LeakyRelu: // v < 0 ? alpha * v : v
    y = V::select(V::less(y, l.zero), y, V::mul(y, l.alpha));
    break;
  case VectorActivation::Clip: // min(max(v, lo), hi) as std:: does them
    y = V::select(V::less(y, l.alpha), y, l.alpha);
    y = V::select(V::less(l.beta, y), y, l.beta);
    break;
  case VectorActivation::Sigmoid:
    y = sigmoidLanes<V>(y);
    break;
  case VectorActivation::Silu: // sigmoid::silu; NaN / d is NaN
    if constexpr (OverScale)
      y = V::div(y,
                 V::fma(expOfNegatedLanes<V>(y), l.outputScale, l.outputScale));
    else
      y = V::div(y, V::add(V::set1(1.0f), expOfNegatedLanes<V>(y)));
    break;
  }
  if (Residual && ResidualLast)
    y = V::add(y, r);
  return y;
}

/// clamp(nearbyint(quotient) + zero, 0, 255) with NaN -> 0, in float.
template <typename V>
QOPT_EPILOGUE_INLINE typename V::F
gridLanes(const Lanes<V> &l, typename V::F quotient, typename V::F zero) {
  typename V::F q = V::add(V::round(quotient), zero);
  return V::min(V::max(q, l.zero), l.top); // max: NaN -> 0
}

/// gridLanes as int32 lanes for V::storeBytes: V's own integer sequence
/// where it has one (V::kIntegerGrid; the same values, or more than 255
/// where the store saturates them to 255), else gridLanes converted.
template <typename V>
QOPT_EPILOGUE_INLINE typename V::I
gridInts(const Lanes<V> &l, typename V::F quotient, typename V::F zero,
         typename V::I zeroI) {
  if constexpr (V::kIntegerGrid)
    return V::gridInts(quotient, zeroI);
  else
    return V::toInt(gridLanes<V>(l, quotient, zero));
}

/// Stores y (the first `count` lanes) at `out`: as u8 = clamp(nearbyint(y /
/// scale) + zero, 0, 255) with NaN -> 0 (y / scale given if OverScale),
/// then through the pair stage with the pair operand's bytes `w` if Pair,
/// or as floats.
template <typename V, bool Quantized, bool Pair, bool OverScale>
QOPT_EPILOGUE_INLINE void storeLanes(const Lanes<V> &l, typename V::F y,
                                     typename V::I w, void *out,
                                     int64_t count) {
  if constexpr (Quantized) {
    typename V::F quotient = OverScale ? y : V::div(y, l.outputScale);
    typename V::I bytes;
    if constexpr (Pair) { // RequantizedAdd::apply, operation for operation
      typename V::F q = gridLanes<V>(l, quotient, l.outputZero);
      typename V::F sum =
          V::add(V::mul(V::sub(q, l.pairZeroV), l.pairScaleV),
                 V::mul(V::toFloat(V::subi(w, l.pairZeroW)), l.pairScaleW));
      sum = V::select(V::less(sum, l.pairLow), sum, l.pairLow);
      sum = V::select(V::less(l.pairHigh, sum), sum, l.pairHigh);
      bytes = gridInts<V>(l, V::div(sum, l.pairOutputScale), l.pairOutputZero,
                          l.pairOutputZeroI);
    } else {
      bytes = gridInts<V>(l, quotient, l.outputZero, l.outputZeroI);
    }
    if constexpr (V::kMaskedTails)
      if (count < V::kLanes)
        return V::storeBytesMasked(bytes, static_cast<uint8_t *>(out), count);
    storePadded<V>(static_cast<uint8_t *>(out), count,
                   [&](uint8_t *to) { V::storeBytes(bytes, to); });
  } else {
    if constexpr (V::kMaskedTails)
      if (count < V::kLanes)
        return V::storeFMasked(y, static_cast<float *>(out), count);
    storePadded<V>(static_cast<float *>(out), count,
                   [&](float *to) { V::storeF(y, to); });
  }
}

/// What a row's loops fix at compile time (P: the pair stage, whose
/// operand comes in residual's place).
template <VectorActivation A, bool R, bool RL, bool Q, bool P = false>
struct Variant {
  static_assert(!P || (Q && !R), "a pair stage on an int8 result alone");
  static constexpr VectorActivation kActivation = A;
  static constexpr bool kResidual = R, kResidualLast = RL, kQuantized = Q,
                        kPair = P;
  /// SiLU onto a grid divides once (sigmoid::siluOverScale), but for a
  /// residual added after it. (Int8Conv runs subnormal output scales
  /// scalar.)
  static constexpr bool kOverScale =
      A == VectorActivation::Silu && Q && !(R && RL);
};

/// One vector of channels from c on (or the last `count` of a row) of
/// `Pixels` adjacent pixels, from the sums to the stored results. The
/// pixels' chains are independent: a long activation (SiLU: some 40
/// dependent operations) runs several at once instead of one after the
/// other, and the channels' constants are loaded once.
template <typename V, typename Var, int Pixels>
QOPT_EPILOGUE_INLINE void
finishChannels(const Params &p, const Lanes<V> &l, const int32_t *acc,
               int64_t channels, const uint8_t *residual, void *output,
               int64_t stride, int64_t c, int64_t count) {
  using F = typename V::F;
  using I = typename V::I;
  size_t elementBytes = Var::kQuantized ? 1 : sizeof(float);
  I zeroTerm = loadLanes<V>(p.zeroTerm + c, count);
  F scale = loadLanes<V>(p.scale + c, count);
  F bias = p.bias ? loadLanes<V>(p.bias + c, count) : l.zero;
  F y[Pixels];
#pragma GCC unroll 8
  for (int i = 0; i < Pixels; ++i)
    y[i] = finishLanes<V, Var::kActivation, Var::kResidual, Var::kResidualLast,
                       Var::kOverScale>(
        p, l, loadLanes<V>(acc + i * channels + c, count), zeroTerm, scale,
        bias,
        Var::kResidual ? loadByteLanes<V>(residual + i * stride + c, count)
                       : V::set1i(0));
#pragma GCC unroll 8
  for (int i = 0; i < Pixels; ++i)
    storeLanes<V, Var::kQuantized, Var::kPair, Var::kOverScale>(
        l, y[i],
        Var::kPair ? loadByteLanes<V>(residual + i * stride + c, count)
                   : V::set1i(0),
        static_cast<char *>(output) + (i * stride + c) * elementBytes, count);
}

/// The rows, with everything but the sizes fixed: kPixelBatch pixels at a
/// time, full vectors then the last channels; the pixels left one at a
/// time.
template <typename V, typename Var>
void finishRows(const Params &p, const Lanes<V> &l, const int32_t *acc,
                int64_t pixels, int64_t channels, const uint8_t *residual,
                void *output, int64_t stride) {
  constexpr int kPixelBatch = 8;
  constexpr int64_t kLanes = V::kLanes;
  size_t elementBytes = Var::kQuantized ? 1 : sizeof(float);
  int64_t full = channels / kLanes * kLanes;
  auto pixelsFrom = [&](int64_t px, auto batch) {
    constexpr int B = decltype(batch)::value;
    const int32_t *a = acc + px * channels;
    const uint8_t *res =
        Var::kResidual || Var::kPair ? residual + px * stride : nullptr;
    void *out = static_cast<char *>(output) + px * stride * elementBytes;
    for (int64_t c = 0; c < full; c += kLanes)
      finishChannels<V, Var, B>(p, l, a, channels, res, out, stride, c, kLanes);
    if (full < channels)
      finishChannels<V, Var, B>(p, l, a, channels, res, out, stride, full,
                                channels - full);
  };
  int64_t px = 0;
  for (; px + kPixelBatch <= pixels; px += kPixelBatch)
    pixelsFrom(px, std::integral_constant<int, kPixelBatch>());
  for (; px < pixels; ++px)
    pixelsFrom(px, std::integral_constant<int, 1>());
}

/// The row loop for p's residual, bias and kind of result, activation Act.
template <typename V, VectorActivation Act>
void finishRowsWith(const Params &p, const Lanes<V> &l, const int32_t *acc,
                    int64_t pixels, int64_t channels, const uint8_t *residual,
                    void *output, int64_t stride) {
  auto run = [&](auto variant) {
    finishRows<V, decltype(variant)>(p, l, acc, pixels, channels, residual,
                                     output, stride);
  };
  bool quantized = p.outputScale != 0;
  if (p.hasPair) // Int8Conv gives it an int8 result without a residual
    return run(Variant<Act, false, false, true, true>());
  if (!p.hasResidual)
    return quantized ? run(Variant<Act, false, false, true>())
                     : run(Variant<Act, false, false, false>());
  if (p.residualAfterActivation)
    return quantized ? run(Variant<Act, true, true, true>())
                     : run(Variant<Act, true, true, false>());
  return quantized ? run(Variant<Act, true, false, true>())
                   : run(Variant<Act, true, false, false>());
}

/// The whole epilogue: the activation's row loop.
template <typename V>
void runEpilogue(const Params &p, const int32_t *acc, int64_t pixels,
                 int64_t channels, const uint8_t *residual, void *output,
                 int64_t stride) {
  Lanes<V> l(p);
  using Rows = void (*)(const Params &, const Lanes<V> &, const int32_t *,
                        int64_t, int64_t, const uint8_t *, void *, int64_t);
  // In VectorActivation's order.
  static constexpr Rows kRowsByActivation[] = {
      finishRowsWith<V, VectorActivation::None>,
      finishRowsWith<V, VectorActivation::Relu>,
      finishRowsWith<V, VectorActivation::LeakyRelu>,
      finishRowsWith<V, VectorActivation::Clip>,
      finishRowsWith<V, VectorActivation::Sigmoid>,
      finishRowsWith<V, VectorActivation::Silu>};
  static_assert(uint8_t(VectorActivation::Silu) == 5, "one entry each");
  kRowsByActivation[uint8_t(p.activation)](p, l, acc, pixels, channels,
                                           residual, output, stride);
}

} // namespace

#endif // QOPT_LIB_KERNELS_EPILOGUEBODY_H
