//===- QuantGrid.cpp - Containment and cost between quantization grids ----===//
//
// Whether one grid holds every value of another, and what moving values
// between grids costs. Both walk every stored value through the same
// quantize/dequantize functions the interpreter uses, so "exact" here means
// bit-identical there.
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/Float8.h"
#include "qopt/IR/QuantMath.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <charconv>
#include <cmath>

using namespace qopt;

namespace {

/// Channels to compare: the per-axis count of either type (1 when both are
/// per tensor), or 0 when two per-axis types do not line up.
int64_t pairedChannels(const QuantType *a, const QuantType *b) {
  if (a->isPerAxis() && b->isPerAxis() &&
      (a->getAxis() != b->getAxis() ||
       a->getNumChannels() != b->getNumChannels()))
    return 0;
  return static_cast<int64_t>(
      std::max(a->getNumChannels(), b->getNumChannels()));
}

/// Calls fn(channel, stored) for every stored value of `from` in every
/// channel paired with `to`; stops when fn returns false. Returns false when
/// the channels do not line up.
template <typename Fn>
bool forEachStored(const QuantType *from, const QuantType *to, Fn fn) {
  int64_t channels = pairedChannels(from, to);
  if (channels == 0 || !from->hasIntegerStorage() || !to->hasIntegerStorage())
    return false; // float8/float4 codes are no integer range to walk
  auto [lo, hi] = getIntegerRange(from->getStorageKind());
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t q = lo; q <= hi; ++q)
      if (!fn(c, q))
        return true;
  return true;
}

std::string shortest(float v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

} // namespace

bool quant::gridContains(const QuantType *to, const QuantType *from) {
  if (to == from)
    return true;
  bool exact = true;
  bool paired = forEachStored(from, to, [&](int64_t c, int64_t q) {
    float x = dequantizeValue(q, from, c);
    float back = dequantizeValue(requantizeValue(q, from, c, to, c), to, c);
    // Compare as floats: -0 and +0 dequantize alike downstream.
    exact = back == x;
    return exact;
  });
  return paired && exact;
}

double quant::maxRegridErrorLsb(const QuantType *from, const QuantType *to) {
  double worst = 0;
  bool paired = forEachStored(from, to, [&](int64_t c, int64_t q) {
    float x = dequantizeValue(q, from, c);
    float back = dequantizeValue(requantizeValue(q, from, c, to, c), to, c);
    double lsb = getChannelScale(from, c);
    worst = std::max(worst, std::fabs(double(back) - double(x)) / lsb);
    return true;
  });
  return paired ? worst : INFINITY;
}

std::pair<double, double> quant::representableRange(const QuantType *q) {
  if (q->hasMinifloatStorage()) {
    // The largest finite code's value, either sign, times each scale.
    double largest = 0;
    for (unsigned code = 0; code < 256; ++code) {
      double v = decodeFloat8(uint8_t(code), q->getStorageKind());
      if (std::isfinite(v))
        largest = std::max(largest, std::fabs(v));
    }
    double s = 0;
    for (float c : q->getScales())
      s = std::max(s, double(c));
    return {-largest * s, largest * s};
  }
  auto [lo, hi] = getIntegerRange(q->getStorageKind());
  double rangeLo = INFINITY, rangeHi = -INFINITY;
  for (size_t c = 0; c < q->getNumChannels(); ++c) {
    double s = q->getScales()[c];
    double z = static_cast<double>(q->getZeroPoints()[c]);
    rangeLo = std::min(rangeLo, (static_cast<double>(lo) - z) * s);
    rangeHi = std::max(rangeHi, (static_cast<double>(hi) - z) * s);
  }
  return {rangeLo, rangeHi};
}

std::string quant::describeParams(const QuantType *q) {
  std::string storage = getElementKindName(q->getStorageKind()).str();
  if (!q->isPerAxis())
    return storage + " scale " + shortest(q->getScale()) + " zp " +
           std::to_string(q->getZeroPoint());
  std::string s = storage + " scales {", z = "zps {";
  for (size_t c = 0; c < q->getNumChannels(); ++c) {
    s += (c ? "," : "") + shortest(q->getScales()[c]);
    z += (c ? "," : "") + std::to_string(q->getZeroPoints()[c]);
  }
  return s + "} " + z + "} axis " + std::to_string(q->getAxis());
}

std::string quant::checkBiasGrid(const QuantType *bias, const QuantType *x,
                                 const QuantType *w) {
  if (bias->getStorageKind() != ElementKind::I32)
    return "bias is " + getElementKindName(bias->getStorageKind()).str() +
           ", not i32";
  if (x->isPerAxis())
    return "the input is quantized per axis, so the bias has no single "
           "product grid";
  if (bias->isPerAxis() && !w->isPerAxis())
    return "the bias is quantized per axis but the weight per tensor";
  if (bias->isPerAxis() && bias->getNumChannels() != w->getNumChannels())
    return "the bias has " + std::to_string(bias->getNumChannels()) +
           " scales for " + std::to_string(w->getNumChannels()) +
           " weight channels";
  for (size_t c = 0; c < w->getNumChannels(); ++c) {
    int64_t bc = bias->isPerAxis() ? static_cast<int64_t>(c) : 0;
    if (getChannelZeroPoint(bias, bc) != 0)
      return "bias zero point " +
             std::to_string(getChannelZeroPoint(bias, bc)) + ", not 0";
    double want = double(x->getScale()) * getChannelScale(w, c);
    double have = getChannelScale(bias, bc);
    if (std::fabs(have - want) > kBiasScaleTolerance * std::fabs(want)) {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "bias scale " << llvm::format("%g", have) << " at channel " << c
         << " is not input scale * weight scale = " << llvm::format("%g", want);
      return os.str();
    }
  }
  return {};
}
