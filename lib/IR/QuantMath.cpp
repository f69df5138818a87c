//===- QuantMath.cpp - Quantization arithmetic shared by all layers -------===//
//
// Values are computed exactly as the reference interpreter always did
// (float32 arithmetic, nearbyintf in the default round-to-nearest-even mode,
// saturation in double), so constants folded by passes are bit-identical to
// the interpreter's results. Dense data is read and written little-endian in
// the ONNX raw_data layout.
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/QuantMath.h"
#include "qopt/IR/Float8.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/FloatFormat.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

using namespace qopt;
using namespace qopt::quant;

//===----------------------------------------------------------------------===//
// One value
//===----------------------------------------------------------------------===//

int64_t quant::saturateToStorage(double v, ElementKind storage) {
  if (std::isnan(v))
    return 0;
  auto range = getIntegerRange(storage);
  // Compare in double first: the int64 bounds of wide kinds are not exact
  // doubles, and converting a double beyond them would be undefined.
  if (v <= static_cast<double>(range.first))
    return range.first;
  if (v >= static_cast<double>(range.second))
    return range.second;
  return static_cast<int64_t>(v);
}

int64_t quant::quantizeValue(float x, float scale, int64_t zeroPoint,
                             ElementKind storage) {
  float r = std::nearbyintf(x / scale);
  return saturateToStorage(
      static_cast<double>(r) + static_cast<double>(zeroPoint), storage);
}

float quant::dequantizeValue(int64_t q, float scale, int64_t zeroPoint) {
  return static_cast<float>(q - zeroPoint) * scale;
}

int64_t quant::requantizeValue(int64_t q, float inScale, int64_t inZp,
                               float outScale, int64_t outZp,
                               ElementKind outStorage) {
  return quantizeValue(dequantizeValue(q, inScale, inZp), outScale, outZp,
                       outStorage);
}

int64_t quant::quantizeWithMultiplier(float x, float multiplier,
                                      int64_t zeroPoint, ElementKind storage) {
  float r = std::nearbyintf(x * multiplier);
  return saturateToStorage(
      static_cast<double>(r) + static_cast<double>(zeroPoint), storage);
}

float quant::getChannelScale(const QuantType *q, int64_t channel) {
  return q->isPerAxis() ? q->getScales()[channel] : q->getScale();
}

int64_t quant::getChannelZeroPoint(const QuantType *q, int64_t channel) {
  return q->isPerAxis() ? q->getZeroPoints()[channel] : q->getZeroPoint();
}

int64_t quant::quantizeValue(float x, const QuantType *q, int64_t channel,
                             bool saturate) {
  if (q->hasMinifloatStorage()) // ONNX: x / scale to the nearest code
    return encodeFloat8(x / getChannelScale(q, channel), q->getStorageKind(),
                        saturate);
  return quantizeValue(x, getChannelScale(q, channel),
                       getChannelZeroPoint(q, channel), q->getStorageKind());
}

float quant::dequantizeValue(int64_t stored, const QuantType *q,
                             int64_t channel) {
  if (q->hasMinifloatStorage()) // the code's value times the scale
    return static_cast<float>(decodeFloat8(static_cast<uint8_t>(stored),
                                           q->getStorageKind())) *
           getChannelScale(q, channel);
  return dequantizeValue(stored, getChannelScale(q, channel),
                         getChannelZeroPoint(q, channel));
}

float quant::roundToKind(float v, ElementKind kind) {
  switch (kind) {
  case ElementKind::F16:
    return halfToFloat(floatToHalf(v));
  case ElementKind::BF16:
    return bfloat16ToFloat(floatToBFloat16(v));
  default:
    return v;
  }
}

int64_t quant::requantizeValue(int64_t stored, const QuantType *from,
                               int64_t fromChannel, const QuantType *to,
                               int64_t toChannel) {
  float mid = roundToKind(dequantizeValue(stored, from, fromChannel),
                          from->getExpressedKind());
  return quantizeValue(mid, to, toChannel);
}

ChannelIndexer::ChannelIndexer(llvm::ArrayRef<int64_t> dims, int64_t axis,
                               int64_t blockSize) {
  if (axis < 0 || axis >= static_cast<int64_t>(dims.size()) || dims[axis] <= 0)
    return;
  channels = dims[axis];
  for (size_t d = axis + 1; d < dims.size(); ++d)
    inner *= std::max<int64_t>(dims[d], 1);
  if (blockSize > 0) {
    block = blockSize;
    blocks = blocksAlong(channels, block);
  }
}

ChannelIndexer::ChannelIndexer(llvm::ArrayRef<int64_t> dims, const QuantType *q)
    : ChannelIndexer(dims, q->isPerAxis() ? q->getAxis() : -1,
                     q->getBlockSize()) {}

std::vector<int64_t> quant::blockedScaleDims(llvm::ArrayRef<int64_t> dims,
                                             const QuantType *q) {
  std::vector<int64_t> out(dims.begin(), dims.end());
  if (q->isBlocked() && q->getAxis() >= 0 &&
      q->getAxis() < static_cast<int64_t>(out.size()))
    out[q->getAxis()] = blocksAlong(out[q->getAxis()], q->getBlockSize());
  return out;
}

std::string quant::shapeString(llvm::ArrayRef<int64_t> dims) {
  if (dims.empty())
    return "scalar";
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

llvm::Error quant::checkQuantTypeFits(const QuantType *q,
                                      llvm::ArrayRef<int64_t> dims) {
  if (q->getScales().size() != q->getZeroPoints().size() ||
      q->getScales().empty())
    return makeError("quantized type " + typeToString(q) +
                     " has mismatched scales and zero points");
  if (!q->isPerAxis()) {
    if (q->getNumChannels() != 1)
      return makeError("per-tensor type " + typeToString(q) +
                       " has more than one scale");
    return llvm::Error::success();
  }
  int64_t axis = q->getAxis();
  if (axis < 0 || axis >= static_cast<int64_t>(dims.size()))
    return makeError("axis " + llvm::Twine(axis) + " of " + typeToString(q) +
                     " is out of range for shape " + shapeString(dims));
  if (q->isBlocked()) {
    std::vector<int64_t> want = blockedScaleDims(dims, q);
    int64_t count = 1;
    for (int64_t d : want)
      count *= d;
    if (count != static_cast<int64_t>(q->getNumChannels()))
      return makeError(llvm::Twine(q->getNumChannels()) + " parameters of " +
                       typeToString(q) + " do not fit shape " +
                       shapeString(dims) + ": blocks of " +
                       llvm::Twine(q->getBlockSize()) + " along axis " +
                       llvm::Twine(axis) + " need " + shapeString(want));
    return llvm::Error::success();
  }
  if (dims[axis] != static_cast<int64_t>(q->getNumChannels()))
    return makeError(llvm::Twine(q->getNumChannels()) + " channels of " +
                     typeToString(q) + " do not fit axis " + llvm::Twine(axis) +
                     " of size " + llvm::Twine(dims[axis]) + " (shape " +
                     shapeString(dims) + ")");
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Element storage
//===----------------------------------------------------------------------===//

namespace {

template <typename T> void storeAt(std::string &bytes, int64_t i, T v) {
  std::memcpy(&bytes[i * sizeof(T)], &v, sizeof(T));
}

/// Float-to-integer conversion without undefined behaviour: truncates
/// toward zero, NaN becomes 0, out-of-range values saturate.
template <typename T> T toInteger(double v) {
  if (std::isnan(v))
    return 0;
  if (v <= static_cast<double>(std::numeric_limits<T>::min()))
    return std::numeric_limits<T>::min();
  if (v >= static_cast<double>(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

/// True when v is an integer that T represents. (max + 1 is a power of two,
/// exact as a double even where max itself is not.)
template <typename T> bool fitsInteger(double v) {
  return v == std::trunc(v) &&
         v >= static_cast<double>(std::numeric_limits<T>::min()) &&
         v < static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
}

[[maybe_unused]] bool isNumericKind(ElementKind k) {
  return isFloatKind(k) || isIntegerKind(k) || k == ElementKind::Bool;
}

/// Stores a double into element i of `bytes` with Tensor::setDouble's
/// conversion (floats round once, integers truncate and saturate). Returns
/// whether the value was representable exactly (integers) for asserts.
bool storeDouble(std::string &bytes, ElementKind kind, int64_t i, double v) {
  switch (kind) {
  case ElementKind::F32:
    storeAt<float>(bytes, i, static_cast<float>(v));
    return true;
  case ElementKind::F64:
    storeAt<double>(bytes, i, v);
    return true;
  case ElementKind::F16:
    storeAt<uint16_t>(bytes, i, floatToHalf(roundToFloatOdd(v)));
    return true;
  case ElementKind::BF16:
    storeAt<uint16_t>(bytes, i, floatToBFloat16(roundToFloatOdd(v)));
    return true;
  case ElementKind::Bool:
    storeAt<uint8_t>(bytes, i, v != 0);
    return v == 0 || v == 1;
#define QOPT_INT_CASE(KIND, T)                                                 \
  case ElementKind::KIND:                                                      \
    storeAt<T>(bytes, i, toInteger<T>(v));                                     \
    return fitsInteger<T>(v);
    QOPT_INT_CASE(I8, int8_t)
    QOPT_INT_CASE(U8, uint8_t)
  case ElementKind::F8E4M3FN:
  case ElementKind::F8E4M3FNUZ:
  case ElementKind::F8E5M2:
  case ElementKind::F8E5M2FNUZ:
  case ElementKind::F4E2M1: {
    uint8_t code = encodeFloat8(v, kind);
    storeAt<uint8_t>(bytes, i, code);
    return decodeFloat8(code, kind) == v || std::isnan(v);
  }
  case ElementKind::I4:
  case ElementKind::U4: {
    auto [lo, hi] = getIntegerRange(kind);
    double c =
        std::isnan(v) ? 0.0 : std::clamp(std::trunc(v), double(lo), double(hi));
    storeAt<int8_t>(bytes, i, static_cast<int8_t>(c));
    return !std::isnan(v) && v == std::trunc(v) && v >= double(lo) &&
           v <= double(hi);
  }
    QOPT_INT_CASE(I16, int16_t)
    QOPT_INT_CASE(U16, uint16_t)
    QOPT_INT_CASE(I32, int32_t)
    QOPT_INT_CASE(U32, uint32_t)
    QOPT_INT_CASE(I64, int64_t)
    QOPT_INT_CASE(U64, uint64_t)
#undef QOPT_INT_CASE
  default:
    return false;
  }
}

/// Stores an integer into element i, saturating to the kind's range
/// (exact for every int64 value, unlike a trip through double). Returns
/// whether the value fitted.
bool storeInt(std::string &bytes, ElementKind kind, int64_t i, int64_t v) {
  if (isFloatKind(kind)) {
    storeDouble(bytes, kind, i, static_cast<double>(v));
    return true;
  }
  if (isMinifloatKind(kind)) { // a code
    storeAt<uint8_t>(bytes, i, static_cast<uint8_t>(v));
    return true;
  }
  std::pair<int64_t, int64_t> range = getIntegerRange(kind);
  if (kind == ElementKind::U64)
    range.first = 0;
  int64_t s = std::min(range.second, std::max(range.first, v));
  switch (kind) {
  case ElementKind::I8:
  case ElementKind::I4:
  case ElementKind::U4:
    storeAt<int8_t>(bytes, i, static_cast<int8_t>(s));
    break;
  case ElementKind::U8:
  case ElementKind::Bool:
    storeAt<uint8_t>(bytes, i, static_cast<uint8_t>(s));
    break;
  case ElementKind::I16:
    storeAt<int16_t>(bytes, i, static_cast<int16_t>(s));
    break;
  case ElementKind::U16:
    storeAt<uint16_t>(bytes, i, static_cast<uint16_t>(s));
    break;
  case ElementKind::I32:
    storeAt<int32_t>(bytes, i, static_cast<int32_t>(s));
    break;
  case ElementKind::U32:
    storeAt<uint32_t>(bytes, i, static_cast<uint32_t>(s));
    break;
  case ElementKind::I64:
    storeAt<int64_t>(bytes, i, s);
    break;
  case ElementKind::U64:
    storeAt<uint64_t>(bytes, i, static_cast<uint64_t>(s));
    break;
  default:
    return false;
  }
  return s == v;
}

/// Float32 value into a float element (one rounding for f16/bf16).
void storeFloat(std::string &bytes, ElementKind kind, int64_t i, float v) {
  switch (kind) {
  case ElementKind::F32:
    storeAt<float>(bytes, i, v);
    break;
  case ElementKind::F64:
    storeAt<double>(bytes, i, v);
    break;
  case ElementKind::F16:
    storeAt<uint16_t>(bytes, i, floatToHalf(v));
    break;
  case ElementKind::BF16:
    storeAt<uint16_t>(bytes, i, floatToBFloat16(v));
    break;
  default:
    break;
  }
}

std::vector<int64_t> toVector(llvm::ArrayRef<int64_t> dims) {
  return std::vector<int64_t>(dims.begin(), dims.end());
}

/// Product of dims, or nullopt if one is negative or it overflows.
std::optional<int64_t> product(llvm::ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      return std::nullopt;
  return n;
}

/// Zero-filled bytes for `count` elements of `kind`.
std::string zeroBytes(ElementKind kind, int64_t count) {
  return std::string(static_cast<size_t>(count) * getElementByteSize(kind),
                     '\0');
}

bool isQuantizableFloat(ElementKind k) {
  return k == ElementKind::F32 || k == ElementKind::F16 ||
         k == ElementKind::BF16 || k == ElementKind::F64;
}

/// Checks that `stored` holds q's storage kind and q fits its dims.
llvm::Error checkStored(const DenseElements &stored, const QuantType *q) {
  if (stored.getKind() != q->getStorageKind())
    return makeError("stored data of kind " +
                     getElementKindName(stored.getKind()) +
                     " does not match the storage of " + typeToString(q));
  return checkQuantTypeFits(q, stored.getDims());
}

llvm::Error checkStorageKind(const QuantType *q) {
  if (!isIntegerKind(q->getStorageKind()))
    return makeError("storage kind of " + typeToString(q) +
                     " is not an integer kind");
  return llvm::Error::success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Dense constants
//===----------------------------------------------------------------------===//

llvm::Expected<DenseElementsRef>
quant::quantizeDense(const DenseElements &floats, const QuantType *q,
                     bool saturate) {
  if (!isQuantizableFloat(floats.getKind()))
    return makeError("cannot quantize elements of kind " +
                     getElementKindName(floats.getKind()) +
                     ": expected f32, f16, bf16 or f64");
  if (!q->hasMinifloatStorage())
    if (auto err = checkStorageKind(q))
      return err;
  if (auto err = checkQuantTypeFits(q, floats.getDims()))
    return err;
  ElementKind storage = q->getStorageKind();
  int64_t n = floats.getNumElements();
  std::string bytes = zeroBytes(storage, n);
  ChannelIndexer channel(floats.getDims(), q);
  for (int64_t i = 0; i < n; ++i) {
    float x = static_cast<float>(floats.getAsDouble(i));
    storeInt(bytes, storage, i, quantizeValue(x, q, channel(i), saturate));
  }
  return std::make_shared<const DenseElements>(
      storage, toVector(floats.getDims()), std::move(bytes),
      floats.getName().str());
}

llvm::Expected<DenseElementsRef>
quant::dequantizeDense(const DenseElements &stored, const QuantType *q,
                       ElementKind floatKind) {
  if (!isQuantizableFloat(floatKind))
    return makeError("cannot dequantize to " + getElementKindName(floatKind) +
                     ": expected f32, f16, bf16 or f64");
  if (auto err = checkStored(stored, q))
    return err;
  int64_t n = stored.getNumElements();
  std::string bytes = zeroBytes(floatKind, n);
  ChannelIndexer channel(stored.getDims(), q);
  for (int64_t i = 0; i < n; ++i)
    storeFloat(bytes, floatKind, i,
               dequantizeValue(stored.getAsInt(i), q, channel(i)));
  return std::make_shared<const DenseElements>(
      floatKind, toVector(stored.getDims()), std::move(bytes),
      stored.getName().str());
}

llvm::Expected<DenseElementsRef>
quant::requantizeDense(const DenseElements &stored, const QuantType *from,
                       const QuantType *to) {
  if (auto err = checkStored(stored, from))
    return err;
  if (auto err = checkStorageKind(to))
    return err;
  if (auto err = checkQuantTypeFits(to, stored.getDims()))
    return err;
  ElementKind storage = to->getStorageKind();
  int64_t n = stored.getNumElements();
  std::string bytes = zeroBytes(storage, n);
  ChannelIndexer fromChannel(stored.getDims(), from);
  ChannelIndexer toChannel(stored.getDims(), to);
  for (int64_t i = 0; i < n; ++i)
    storeInt(bytes, storage, i,
             requantizeValue(stored.getAsInt(i), from, fromChannel(i), to,
                             toChannel(i)));
  return std::make_shared<const DenseElements>(
      storage, toVector(stored.getDims()), std::move(bytes),
      stored.getName().str());
}

//===----------------------------------------------------------------------===//
// Fixed-point requantization
//===----------------------------------------------------------------------===//

FixedPointMultiplier quant::computeFixedPointMultiplier(double real) {
  assert(std::isfinite(real) && real >= 0 && real < 2147483648.0 &&
         "real multiplier must be finite and in [0, 2^31)");
  if (!(real > 0))
    return {0, 0};
  if (real >= 2147483648.0) // release builds: the largest representable
    return {std::numeric_limits<int32_t>::max(), 31};
  int exponent;
  double fraction = std::frexp(real, &exponent); // in [0.5, 1)
  int64_t multiplier = std::llround(std::ldexp(fraction, 31));
  if (multiplier == (int64_t(1) << 31)) { // fraction rounded up to 1
    multiplier >>= 1;
    ++exponent;
  }
  if (exponent < -62)
    return {0, 0};
  return {static_cast<int32_t>(multiplier), exponent};
}

/// round(product / 2^exponent) the way gemmlowp's doubling high multiply
/// rounds (exponent 31): add 2^(exponent-1), or 1 - 2^(exponent-1) for a
/// negative product, and truncate. Ties go toward +infinity. exponent is in
/// [0, 62].
static int64_t nudgedDivideByPowerOfTwo(int64_t product, int exponent) {
  if (exponent == 0)
    return product;
  int64_t half = int64_t(1) << (exponent - 1);
  int64_t nudge = product >= 0 ? half : 1 - half;
  return (product + nudge) / (int64_t(1) << exponent);
}

/// round(x / 2^exponent), ties away from zero (gemmlowp's
/// RoundingDivideByPOT), for exponent in [0, 62].
static int64_t roundingDivideByPowerOfTwo(int64_t x, int exponent) {
  if (exponent == 0)
    return x;
  int64_t mask = (int64_t(1) << exponent) - 1;
  int64_t remainder = x & mask;
  int64_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

static int32_t saturateToInt32(int64_t v) {
  return static_cast<int32_t>(std::min<int64_t>(
      std::numeric_limits<int32_t>::max(),
      std::max<int64_t>(std::numeric_limits<int32_t>::min(), v)));
}

int32_t quant::applyFixedPointMultiplier(int32_t acc, FixedPointMultiplier m) {
  // |acc * multiplier| < 2^62: the 64-bit product is exact.
  int64_t product = static_cast<int64_t>(acc) * m.multiplier;
  if (m.shift > 0) {
    // The doubling high multiply of acc * 2^shift, with the left shift
    // exact (no int32 overflow before the multiply): one rounding of
    // product / 2^(31 - shift).
    int shift = std::min<int32_t>(m.shift, 31);
    return saturateToInt32(nudgedDivideByPowerOfTwo(product, 31 - shift));
  }
  // Saturating rounding doubling high multiply; it saturates only for
  // INT32_MIN * INT32_MIN, which a non-negative multiplier excludes.
  int32_t high = saturateToInt32(nudgedDivideByPowerOfTwo(product, 31));
  int exponent = std::min<int32_t>(-m.shift, 62);
  return saturateToInt32(roundingDivideByPowerOfTwo(high, exponent));
}

//===----------------------------------------------------------------------===//
// Typed dense-constant builders
//===----------------------------------------------------------------------===//

DenseElementsRef quant::makeDense(ElementKind kind,
                                  llvm::ArrayRef<int64_t> dims,
                                  llvm::ArrayRef<double> values) {
  assert(isNumericKind(kind) && "makeDense needs a numeric element kind");
  std::optional<int64_t> count = product(dims);
  assert(count && "makeDense: dims must be non-negative");
  assert(static_cast<size_t>(count.value_or(0)) == values.size() &&
         "makeDense: one value per element");
  int64_t n = count.value_or(0);
  std::string bytes = zeroBytes(kind, n);
  for (int64_t i = 0; i < n && i < static_cast<int64_t>(values.size()); ++i) {
    bool exact = storeDouble(bytes, kind, i, values[i]);
    assert(exact && "makeDense: value does not fit the integer kind");
    (void)exact;
  }
  return std::make_shared<const DenseElements>(kind, toVector(dims),
                                               std::move(bytes));
}

DenseElementsRef quant::makeDenseF32(llvm::ArrayRef<int64_t> dims,
                                     llvm::ArrayRef<float> values) {
  std::optional<int64_t> count = product(dims);
  assert(count && "makeDenseF32: dims must be non-negative");
  assert(static_cast<size_t>(count.value_or(0)) == values.size() &&
         "makeDenseF32: one value per element");
  int64_t n = count.value_or(0);
  std::string bytes = zeroBytes(ElementKind::F32, n);
  size_t copied = std::min<size_t>(n, values.size());
  if (copied)
    std::memcpy(&bytes[0], values.data(), copied * sizeof(float));
  return std::make_shared<const DenseElements>(ElementKind::F32, toVector(dims),
                                               std::move(bytes));
}

DenseElementsRef quant::makeDenseInt(ElementKind kind,
                                     llvm::ArrayRef<int64_t> dims,
                                     llvm::ArrayRef<int64_t> values) {
  assert((isIntegerKind(kind) || kind == ElementKind::Bool) &&
         "makeDenseInt needs an integer or bool kind");
  std::optional<int64_t> count = product(dims);
  assert(count && "makeDenseInt: dims must be non-negative");
  assert(static_cast<size_t>(count.value_or(0)) == values.size() &&
         "makeDenseInt: one value per element");
  int64_t n = count.value_or(0);
  std::string bytes = zeroBytes(kind, n);
  for (int64_t i = 0; i < n && i < static_cast<int64_t>(values.size()); ++i) {
    bool fits = storeInt(bytes, kind, i, values[i]);
    assert(fits && "makeDenseInt: value out of range for the kind");
    (void)fits;
  }
  return std::make_shared<const DenseElements>(kind, toVector(dims),
                                               std::move(bytes));
}

//===----------------------------------------------------------------------===//
// Layout transforms and per-axis remapping
//===----------------------------------------------------------------------===//

static std::string listString(llvm::ArrayRef<int64_t> values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? "," : "") + std::to_string(values[i]);
  return s + "]";
}

llvm::Error quant::checkPermutation(llvm::ArrayRef<int64_t> perm,
                                    int64_t rank) {
  if (static_cast<int64_t>(perm.size()) != rank)
    return makeError("perm " + listString(perm) + " has " +
                     llvm::Twine(perm.size()) + " entries for rank " +
                     llvm::Twine(rank));
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return makeError("perm " + listString(perm) +
                       " is not a permutation of 0.." + llvm::Twine(rank - 1));
    seen[p] = true;
  }
  return llvm::Error::success();
}

/// Normalises a possibly negative axis for `rank`.
static llvm::Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return makeError("axis " + llvm::Twine(axis) +
                     " is out of range for rank " + llvm::Twine(rank));
  return axis < 0 ? axis + rank : axis;
}

llvm::Expected<int64_t>
quant::remapAxisThroughTranspose(llvm::ArrayRef<int64_t> perm, int64_t axis) {
  int64_t rank = static_cast<int64_t>(perm.size());
  if (auto err = checkPermutation(perm, rank))
    return err;
  auto a = normalizeAxis(axis, rank);
  if (!a)
    return a.takeError();
  for (int64_t i = 0; i < rank; ++i)
    if (perm[i] == *a)
      return i;
  llvm_unreachable("a permutation contains every axis");
}

llvm::Expected<int64_t>
quant::remapAxisThroughReshape(llvm::ArrayRef<int64_t> inShape,
                               llvm::ArrayRef<int64_t> outShape, int64_t axis) {
  std::string what = "the reshape from " + shapeString(inShape) + " to " +
                     shapeString(outShape);
  auto a = normalizeAxis(axis, static_cast<int64_t>(inShape.size()));
  if (!a)
    return a.takeError();
  std::optional<int64_t> inCount = product(inShape);
  std::optional<int64_t> outCount = product(outShape);
  if (!inCount || !outCount)
    return makeError(what + " needs static shapes to follow axis " +
                     llvm::Twine(*a));
  if (*inCount != *outCount)
    return makeError(what + " changes the number of elements (" +
                     llvm::Twine(*inCount) + " to " + llvm::Twine(*outCount) +
                     ")");
  if (*inCount == 0)
    return makeError("cannot follow axis " + llvm::Twine(*a) + " through " +
                     what + ": the tensor is empty");
  int64_t before = 1; // elements per step of axis a's index, outer part
  for (int64_t d = 0; d < *a; ++d)
    before *= inShape[d];
  int64_t size = inShape[*a];
  // The dimension survives where the output has the same outer product and
  // exactly its size.
  int64_t outBefore = 1;
  for (size_t j = 0; j < outShape.size(); ++j) {
    if (outBefore == before && outShape[j] == size)
      return static_cast<int64_t>(j);
    outBefore *= outShape[j];
  }
  // Diagnose: the output dimension j that holds the axis' first index.
  outBefore = 1;
  size_t j = 0;
  while (j < outShape.size() && outBefore * outShape[j] <= before)
    outBefore *= outShape[j++];
  assert(j < outShape.size() && "before < element count");
  std::string head = "axis " + std::to_string(*a) + " of size " +
                     std::to_string(size) + " is ";
  auto mergedWith = [&](int64_t other) {
    return makeError(head + "merged with axis " + llvm::Twine(other) +
                     " of size " + llvm::Twine(inShape[other]) + " by " + what);
  };
  if (outBefore < before) { // output dim j spans earlier input axes too
    int64_t k = *a - 1;
    while (k > 0 && inShape[k] == 1)
      --k;
    return mergedWith(k);
  }
  if (outShape[j] > size) { // output dim j spans later input axes too
    int64_t k = *a + 1;
    while (k + 1 < static_cast<int64_t>(inShape.size()) && inShape[k] == 1)
      ++k;
    return mergedWith(k);
  }
  return makeError(head + "split by " + what + " (output axis " +
                   llvm::Twine(j) + " has size " + llvm::Twine(outShape[j]) +
                   ")");
}

DenseElementsRef quant::transposeDense(const DenseElements &elements,
                                       llvm::ArrayRef<int64_t> perm) {
  llvm::ArrayRef<int64_t> dims = elements.getDims();
  int64_t rank = static_cast<int64_t>(dims.size());
  if (llvm::Error err = checkPermutation(perm, rank)) {
    llvm::consumeError(std::move(err));
    assert(false && "transposeDense: perm is not a permutation of the rank");
    return nullptr;
  }
  std::vector<int64_t> outDims(rank);
  std::vector<int64_t> inStrides(rank, 1), strideOfOut(rank);
  for (int64_t d = rank - 2; d >= 0; --d)
    inStrides[d] = inStrides[d + 1] * dims[d + 1];
  for (int64_t i = 0; i < rank; ++i) {
    outDims[i] = dims[perm[i]];
    strideOfOut[i] = inStrides[perm[i]];
  }
  int64_t n = elements.getNumElements();
  bool isString = elements.getKind() == ElementKind::String;
  size_t width = getElementByteSize(elements.getKind());
  std::vector<std::string> strings(isString ? n : 0);
  std::string bytes(isString ? 0 : n * width, '\0');
  llvm::StringRef in = elements.getRawBytes();
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0; // input offset of the output element `out`
  for (int64_t out = 0; out < n; ++out) {
    if (isString) {
      if (static_cast<size_t>(offset) < elements.getStrings().size())
        strings[out] = elements.getStrings()[offset];
    } else if (static_cast<size_t>(offset + 1) * width <= in.size())
      std::memcpy(&bytes[out * width], in.data() + offset * width, width);
    for (int64_t d = rank - 1; d >= 0; --d) {
      offset += strideOfOut[d];
      if (++index[d] < outDims[d])
        break;
      offset -= strideOfOut[d] * outDims[d];
      index[d] = 0;
    }
  }
  if (isString)
    return std::make_shared<const DenseElements>(
        std::move(outDims), std::move(strings), elements.getName().str());
  return std::make_shared<const DenseElements>(
      elements.getKind(), std::move(outDims), std::move(bytes),
      elements.getName().str());
}

DenseElementsRef quant::reshapeDense(const DenseElements &elements,
                                     llvm::ArrayRef<int64_t> newDims) {
  std::optional<int64_t> count = product(newDims);
  if (!count || *count != elements.getNumElements()) {
    assert(false && "reshapeDense: new dims must hold the same elements");
    return nullptr;
  }
  if (elements.getKind() == ElementKind::String)
    return std::make_shared<const DenseElements>(
        toVector(newDims),
        std::vector<std::string>(elements.getStrings().begin(),
                                 elements.getStrings().end()),
        elements.getName().str());
  return std::make_shared<const DenseElements>(
      elements.getKind(), toVector(newDims), elements.getRawBytes().str(),
      elements.getName().str());
}

const QuantType *quant::withAxis(Context &ctx, const QuantType *q,
                                 int64_t newAxis) {
  if (!q->isPerAxis())
    return q;
  return ctx.getQuantType(q->getStorageKind(), q->getExpressedKind(), newAxis,
                          q->getScales(), q->getZeroPoints(),
                          q->getBlockSize());
}
