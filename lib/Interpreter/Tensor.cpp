//===- Tensor.cpp - Runtime tensors for the reference interpreter ---------===//

#include "qopt/Interpreter/Tensor.h"
#include "qopt/IR/Float8.h"
#include "qopt/Support/FloatFormat.h"
#include "qopt/Support/ResourceLimits.h"

#include <cassert>
#include <cmath>
#include <cstring>

using namespace qopt;
using namespace qopt::interp;

std::optional<int64_t> interp::shapeNumElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      return std::nullopt;
  return n;
}

std::string interp::shapeToString(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

Shape interp::stridesOf(llvm::ArrayRef<int64_t> shape) {
  Shape strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

Tensor::Tensor(ElementKind kind, Shape shape)
    : elemKind(kind), dims(std::move(shape)), valid(true) {
  count = shapeNumElements(dims).value_or(0);
  if (kind == ElementKind::String)
    strs.resize(count);
  else
    storage.assign(static_cast<size_t>(count) * getElementByteSize(kind), 0);
}

Tensor Tensor::copyOf(ElementKind kind, Shape shape, const char *bytes) {
  assert(kind != ElementKind::String && "strings are not bytes");
  Tensor t;
  t.elemKind = kind;
  t.dims = std::move(shape);
  t.valid = true;
  t.count = shapeNumElements(t.dims).value_or(0);
  size_t size = static_cast<size_t>(t.count) * getElementByteSize(kind);
  t.storage.assign(bytes, bytes + size);
  return t;
}

llvm::Expected<Tensor> Tensor::allocate(ElementKind kind, Shape shape) {
  // Past the memory limit (ResourceLimits), a tensor is refused with an
  // error instead of exhausting memory; within a run, with what the run
  // holds already (RunBudget).
  auto n = shapeNumElements(shape);
  uint64_t bytes =
      n ? saturatingProduct({uint64_t(*n), uint64_t(std::max<unsigned>(
                                               1, getElementByteSize(kind)))})
        : UINT64_MAX;
  std::string what = "a tensor of shape " + shapeToString(shape);
  if (bytes > getResourceLimits().memoryBytes)
    return makeLimitError(what, bytes, /*bytes=*/true);
  if (RunBudget *budget = RunBudget::current())
    if (auto err = budget->chargeMemory(bytes, what))
      return std::move(err);
  return Tensor(kind, std::move(shape));
}

static thread_local RunBudget *currentBudget = nullptr;

RunBudget::RunBudget() {
  ResourceLimits limits = getResourceLimits();
  memoryLimit = limits.memoryBytes;
  workLimit = limits.work;
}

RunBudget *RunBudget::current() { return currentBudget; }

llvm::Error RunBudget::chargeMemory(uint64_t bytes, const llvm::Twine &what) {
  uint64_t total = held + nodeBytes;
  if (bytes > memoryLimit || total > memoryLimit - bytes)
    return makeLimitError(what, bytes, /*bytes=*/true,
                          total ? "with " + formatResourceSize(total, true) +
                                      " held by the run"
                                : "");
  nodeBytes += bytes;
  return llvm::Error::success();
}

llvm::Error RunBudget::chargeWork(uint64_t units, const llvm::Twine &what) {
  if (units > workLimit || work > workLimit - units)
    return makeLimitError(what, units, /*bytes=*/false,
                          work ? "after " + formatResourceSize(work, false) +
                                     " in the nodes before it"
                               : "");
  work += units;
  return llvm::Error::success();
}

ScopedRunBudget::ScopedRunBudget(RunBudget &budget) : previous(currentBudget) {
  currentBudget = &budget;
}

ScopedRunBudget::~ScopedRunBudget() { currentBudget = previous; }

Tensor Tensor::fromDense(const DenseElements &d) {
  Tensor t(d.getKind(), Shape(d.getDims().begin(), d.getDims().end()));
  if (d.getKind() == ElementKind::String)
    t.strs.assign(d.getStrings().begin(), d.getStrings().end());
  else if (!t.storage.empty()) // memcpy may not see null, even for 0 bytes
    std::memcpy(t.storage.data(), d.getRawBytes().data(),
                std::min(t.storage.size(), d.getRawBytes().size()));
  return t;
}

Tensor Tensor::scalar(ElementKind kind, double value) {
  Tensor t(kind, {});
  t.setDouble(0, value);
  return t;
}

template <typename T> static T load(const char *p, int64_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}
template <typename T> static void store(char *p, int64_t i, T v) {
  std::memcpy(p + i * sizeof(T), &v, sizeof(T));
}

double Tensor::getDouble(int64_t i) const {
  const char *p = storage.data();
  switch (elemKind) {
  case ElementKind::F32:
    return load<float>(p, i);
  case ElementKind::F64:
    return load<double>(p, i);
  case ElementKind::F16:
    return halfToFloat(load<uint16_t>(p, i));
  case ElementKind::BF16:
    return bfloat16ToFloat(load<uint16_t>(p, i));
  case ElementKind::U64:
    return static_cast<double>(load<uint64_t>(p, i));
  case ElementKind::F8E4M3FN:
  case ElementKind::F8E4M3FNUZ:
  case ElementKind::F8E5M2:
  case ElementKind::F8E5M2FNUZ:
  case ElementKind::F4E2M1:
    return decodeFloat8(load<uint8_t>(p, i), elemKind);
  default:
    return isIntegerKind(elemKind) || elemKind == ElementKind::Bool
               ? static_cast<double>(getInt(i))
               : 0.0; // strings and Unknown have no numeric value
  }
}

int64_t Tensor::getInt(int64_t i) const {
  const char *p = storage.data();
  switch (elemKind) {
  case ElementKind::I8:
  case ElementKind::I4:
    return load<int8_t>(p, i);
  case ElementKind::U8:
  case ElementKind::U4:
  case ElementKind::Bool:
  case ElementKind::F8E4M3FN: // the code
  case ElementKind::F8E4M3FNUZ:
  case ElementKind::F8E5M2:
  case ElementKind::F8E5M2FNUZ:
  case ElementKind::F4E2M1:
    return load<uint8_t>(p, i);
  case ElementKind::I16:
    return load<int16_t>(p, i);
  case ElementKind::U16:
    return load<uint16_t>(p, i);
  case ElementKind::I32:
    return load<int32_t>(p, i);
  case ElementKind::U32:
    return load<uint32_t>(p, i);
  case ElementKind::I64:
    return load<int64_t>(p, i);
  case ElementKind::U64:
    return static_cast<int64_t>(load<uint64_t>(p, i));
  default:
    return isFloatKind(elemKind) ? static_cast<int64_t>(getDouble(i)) : 0;
  }
}

/// Float-to-integer conversion that never invokes undefined behaviour:
/// truncates toward zero, NaN becomes 0, out-of-range values saturate.
template <typename T> static T toInteger(double v) {
  if (std::isnan(v))
    return 0;
  double lo = static_cast<double>(std::numeric_limits<T>::min());
  double hi = static_cast<double>(std::numeric_limits<T>::max());
  if (v <= lo)
    return std::numeric_limits<T>::min();
  if (v >= hi)
    return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

void Tensor::setDouble(int64_t i, double v) {
  char *p = storage.data();
  switch (elemKind) {
  case ElementKind::F32:
    store<float>(p, i, static_cast<float>(v));
    break;
  case ElementKind::F64:
    store<double>(p, i, v);
    break;
  case ElementKind::F16: // one rounding from double, not two
    store<uint16_t>(p, i, floatToHalf(roundToFloatOdd(v)));
    break;
  case ElementKind::BF16:
    store<uint16_t>(p, i, floatToBFloat16(roundToFloatOdd(v)));
    break;
  case ElementKind::Bool:
    store<uint8_t>(p, i, v != 0);
    break;
  case ElementKind::I8:
    store<int8_t>(p, i, toInteger<int8_t>(v));
    break;
  case ElementKind::U8:
    store<uint8_t>(p, i, toInteger<uint8_t>(v));
    break;
  case ElementKind::F8E4M3FN: // rounded to nearest even, saturated
  case ElementKind::F8E4M3FNUZ:
  case ElementKind::F8E5M2:
  case ElementKind::F8E5M2FNUZ:
  case ElementKind::F4E2M1:
    store<uint8_t>(p, i, encodeFloat8(v, elemKind));
    break;
  case ElementKind::I4: // saturated to [-8, 7], as toInteger does for int8
  case ElementKind::U4: // [0, 15]
    store<int8_t>(p, i,
                  static_cast<int8_t>(std::clamp<double>(
                      std::isnan(v) ? 0.0 : std::trunc(v),
                      double(getIntegerRange(elemKind).first),
                      double(getIntegerRange(elemKind).second))));
    break;
  case ElementKind::I16:
    store<int16_t>(p, i, toInteger<int16_t>(v));
    break;
  case ElementKind::U16:
    store<uint16_t>(p, i, toInteger<uint16_t>(v));
    break;
  case ElementKind::I32:
    store<int32_t>(p, i, toInteger<int32_t>(v));
    break;
  case ElementKind::U32:
    store<uint32_t>(p, i, toInteger<uint32_t>(v));
    break;
  case ElementKind::I64:
    store<int64_t>(p, i, toInteger<int64_t>(v));
    break;
  case ElementKind::U64:
    store<uint64_t>(p, i, toInteger<uint64_t>(v));
    break;
  default:
    break;
  }
}

void Tensor::setInt(int64_t i, int64_t v) {
  char *p = storage.data();
  switch (elemKind) {
  case ElementKind::I8:
    store<int8_t>(p, i, static_cast<int8_t>(v));
    break;
  case ElementKind::U8:
    store<uint8_t>(p, i, static_cast<uint8_t>(v));
    break;
  case ElementKind::I4: // the low 4 bits, sign-extended, as int4 wraps
    store<int8_t>(p, i,
                  static_cast<int8_t>(
                      static_cast<uint8_t>(static_cast<uint64_t>(v) << 4)) >>
                      4);
    break;
  case ElementKind::U4:
    store<uint8_t>(p, i, static_cast<uint8_t>(v & 0xF));
    break;
  case ElementKind::F8E4M3FN: // the code
  case ElementKind::F8E4M3FNUZ:
  case ElementKind::F8E5M2:
  case ElementKind::F8E5M2FNUZ:
  case ElementKind::F4E2M1:
    store<uint8_t>(p, i, static_cast<uint8_t>(v));
    break;
  case ElementKind::Bool:
    store<uint8_t>(p, i, v != 0);
    break;
  case ElementKind::I16:
    store<int16_t>(p, i, static_cast<int16_t>(v));
    break;
  case ElementKind::U16:
    store<uint16_t>(p, i, static_cast<uint16_t>(v));
    break;
  case ElementKind::I32:
    store<int32_t>(p, i, static_cast<int32_t>(v));
    break;
  case ElementKind::U32:
    store<uint32_t>(p, i, static_cast<uint32_t>(v));
    break;
  case ElementKind::I64:
    store<int64_t>(p, i, v);
    break;
  case ElementKind::U64:
    store<uint64_t>(p, i, static_cast<uint64_t>(v));
    break;
  default:
    setDouble(i, static_cast<double>(v));
  }
}

std::vector<double> Tensor::toDoubles() const {
  std::vector<double> out(count);
  if (elemKind == ElementKind::F32) {
    const float *f = data<float>();
    for (int64_t i = 0; i < count; ++i)
      out[i] = f[i];
    return out;
  }
  for (int64_t i = 0; i < count; ++i)
    out[i] = getDouble(i);
  return out;
}

std::vector<int64_t> Tensor::toInts() const {
  std::vector<int64_t> out(count);
  for (int64_t i = 0; i < count; ++i)
    out[i] = getInt(i);
  return out;
}

Tensor Tensor::reshaped(Shape newShape) const {
  Tensor t = *this;
  t.dims = std::move(newShape);
  return t;
}

Tensor Tensor::castTo(ElementKind to) const {
  Tensor t(to, dims);
  if (to == elemKind) {
    t = *this;
    return t;
  }
  bool intToInt = isIntegerKind(elemKind) && isIntegerKind(to);
  for (int64_t i = 0; i < count; ++i) {
    if (intToInt || elemKind == ElementKind::Bool)
      t.setInt(i, getInt(i));
    else
      t.setDouble(i, getDouble(i));
  }
  return t;
}

bool Tensor::identicalTo(const Tensor &o) const {
  return elemKind == o.elemKind && dims == o.dims && storage == o.storage &&
         strs == o.strs;
}

std::optional<Shape> interp::broadcastShapes(llvm::ArrayRef<int64_t> a,
                                             llvm::ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

BroadcastIndexer::BroadcastIndexer(llvm::ArrayRef<int64_t> inShape,
                                   llvm::ArrayRef<int64_t> outShape) {
  int64_t total = shapeNumElements(outShape).value_or(0);
  map.resize(total);
  size_t rank = outShape.size();
  // Input strides aligned to the output's rank; 0 where broadcast.
  Shape inStrides(rank, 0);
  Shape s = stridesOf(inShape);
  for (size_t i = 0; i < inShape.size(); ++i) {
    size_t o = rank - inShape.size() + i;
    inStrides[o] = inShape[i] == 1 ? 0 : s[i];
  }
  Shape idx(rank, 0);
  int64_t offset = 0;
  for (int64_t flat = 0; flat < total; ++flat) {
    map[flat] = offset;
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++idx[d] < outShape[d]) {
        offset += inStrides[d];
        break;
      }
      offset -= inStrides[d] * (outShape[d] - 1);
      idx[d] = 0;
    }
  }
}
