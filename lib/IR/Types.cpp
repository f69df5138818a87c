//===- Types.cpp - qIR types ----------------------------------------------===//

#include "qopt/IR/Types.h"
#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Float8.h"
#include "qopt/Support/FloatFormat.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <limits>

using namespace qopt;

namespace {
struct KindInfo {
  ElementKind kind;
  const char *name;
  unsigned bytes;
  int32_t onnxDataType; // TensorProto.DataType
};
constexpr KindInfo kKindInfos[] = {
    {ElementKind::Unknown, "?", 0, 0},
    {ElementKind::F32, "f32", 4, 1},
    {ElementKind::F16, "f16", 2, 10},
    {ElementKind::BF16, "bf16", 2, 16},
    {ElementKind::F64, "f64", 8, 11},
    {ElementKind::I8, "i8", 1, 3},
    {ElementKind::U8, "u8", 1, 2},
    {ElementKind::I16, "i16", 2, 5},
    {ElementKind::U16, "u16", 2, 4},
    {ElementKind::I32, "i32", 4, 6},
    {ElementKind::U32, "u32", 4, 12},
    {ElementKind::I64, "i64", 8, 7},
    {ElementKind::U64, "u64", 8, 13},
    {ElementKind::Bool, "bool", 1, 9},
    {ElementKind::String, "string", 0, 8},
    {ElementKind::I4, "i4", 1, 22},
    {ElementKind::U4, "u4", 1, 21},
    {ElementKind::F8E4M3FN, "f8E4M3FN", 1, 17},
    {ElementKind::F8E4M3FNUZ, "f8E4M3FNUZ", 1, 18},
    {ElementKind::F8E5M2, "f8E5M2", 1, 19},
    {ElementKind::F8E5M2FNUZ, "f8E5M2FNUZ", 1, 20},
    {ElementKind::F4E2M1, "f4E2M1", 1, 23},
};
static_assert(sizeof(kKindInfos) / sizeof(kKindInfos[0]) ==
                  static_cast<size_t>(ElementKind::F4E2M1) + 1,
              "one KindInfo per ElementKind, in order");
} // namespace

llvm::StringRef qopt::getElementKindName(ElementKind kind) {
  return kKindInfos[static_cast<unsigned>(kind)].name;
}

std::optional<ElementKind> qopt::parseElementKindName(llvm::StringRef name) {
  for (const KindInfo &info : kKindInfos)
    if (name == info.name)
      return info.kind;
  return std::nullopt;
}

std::optional<ElementKind> qopt::elementKindFromOnnxDataType(int64_t dataType) {
  for (const KindInfo &info : kKindInfos)
    if (dataType != 0 && info.onnxDataType == dataType)
      return info.kind;
  return std::nullopt;
}

int32_t qopt::onnxDataTypeOf(ElementKind kind) {
  return kKindInfos[static_cast<unsigned>(kind)].onnxDataType;
}

unsigned qopt::getElementByteSize(ElementKind kind) {
  return kKindInfos[static_cast<unsigned>(kind)].bytes;
}

bool qopt::isFloatKind(ElementKind k) {
  return k == ElementKind::F32 || k == ElementKind::F16 ||
         k == ElementKind::BF16 || k == ElementKind::F64;
}

bool qopt::isFloat8Kind(ElementKind k) {
  return k == ElementKind::F8E4M3FN || k == ElementKind::F8E4M3FNUZ ||
         k == ElementKind::F8E5M2 || k == ElementKind::F8E5M2FNUZ;
}

bool qopt::isMinifloatKind(ElementKind k) {
  return isFloat8Kind(k) || k == ElementKind::F4E2M1;
}

bool qopt::isIntegerKind(ElementKind k) {
  switch (k) {
  case ElementKind::I4:
  case ElementKind::U4:
  case ElementKind::I8:
  case ElementKind::U8:
  case ElementKind::I16:
  case ElementKind::U16:
  case ElementKind::I32:
  case ElementKind::U32:
  case ElementKind::I64:
  case ElementKind::U64:
    return true;
  default:
    return false;
  }
}

bool qopt::isSignedIntegerKind(ElementKind k) {
  return k == ElementKind::I4 || k == ElementKind::I8 ||
         k == ElementKind::I16 || k == ElementKind::I32 ||
         k == ElementKind::I64;
}

bool qopt::isQuantStorageKind(ElementKind k) {
  return k == ElementKind::I4 || k == ElementKind::U4 || k == ElementKind::I8 ||
         k == ElementKind::U8 || k == ElementKind::I16 ||
         k == ElementKind::U16 || k == ElementKind::I32;
}

bool qopt::isAnyQuantStorageKind(ElementKind k) {
  return isQuantStorageKind(k) || isMinifloatKind(k);
}

std::pair<int64_t, int64_t> qopt::getIntegerRange(ElementKind k) {
  switch (k) {
  case ElementKind::I4:
    return {-8, 7};
  case ElementKind::U4:
    return {0, 15};
  case ElementKind::I8:
    return {-128, 127};
  case ElementKind::U8:
    return {0, 255};
  case ElementKind::I16:
    return {-32768, 32767};
  case ElementKind::U16:
    return {0, 65535};
  case ElementKind::I32:
    return {std::numeric_limits<int32_t>::min(),
            std::numeric_limits<int32_t>::max()};
  case ElementKind::U32:
    return {0, std::numeric_limits<uint32_t>::max()};
  case ElementKind::Bool:
    return {0, 1};
  default:
    return {std::numeric_limits<int64_t>::min(),
            std::numeric_limits<int64_t>::max()};
  }
}

bool QuantType::hasSameParams(const QuantType *o) const {
  return expressed == o->expressed && axis == o->axis &&
         scaleStorage == o->scaleStorage &&
         std::memcmp(&scaleOfScales, &o->scaleOfScales, sizeof(float)) == 0 &&
         scaleCodes == o->scaleCodes && blockSize == o->blockSize &&
         zeroPoints == o->zeroPoints && scales.size() == o->scales.size() &&
         std::memcmp(scales.data(), o->scales.data(),
                     scales.size() * sizeof(float)) == 0;
}

std::optional<std::vector<int64_t>> TensorType::getStaticDims() const {
  if (!hasStaticShape())
    return std::nullopt;
  std::vector<int64_t> dims;
  dims.reserve(shape->size());
  for (const Dim &d : *shape)
    dims.push_back(d.size);
  return dims;
}

bool TensorType::hasStaticShape() const {
  if (!shape)
    return false;
  for (const Dim &d : *shape)
    if (!d.isStatic())
      return false;
  return true;
}

std::optional<int64_t> TensorType::getNumElements() const {
  if (!hasStaticShape())
    return std::nullopt;
  int64_t n = 1;
  for (const Dim &d : *shape)
    if (__builtin_mul_overflow(n, d.size, &n))
      return std::nullopt;
  return n;
}

const QuantType *TensorType::getQuantType() const {
  return llvm::dyn_cast<QuantType>(element);
}

ElementKind TensorType::getStorageKind() const {
  if (auto *q = getQuantType())
    return q->getStorageKind();
  return llvm::cast<ElementType>(element)->getKind();
}

const TensorType *TensorType::withElementType(const Type *elem) const {
  if (!shape)
    return getContext().getUnrankedTensorType(elem);
  return getContext().getTensorType(*shape, elem);
}

Context::Context() {
  for (const KindInfo &info : kKindInfos)
    elementTypes.emplace_back(new ElementType(this, info.kind));
}

Context::~Context() = default;

const ElementType *Context::getElementType(ElementKind kind) {
  return elementTypes[static_cast<unsigned>(kind)].get();
}

/// The start of a quantized type's uniquing key: kinds, axis, block size.
static std::string quantKeyPrefix(ElementKind storage, ElementKind expressed,
                                  std::optional<int64_t> axis,
                                  int64_t blockSize) {
  std::string key;
  key.push_back(static_cast<char>(storage));
  key.push_back(static_cast<char>(expressed));
  key.append(std::to_string(axis ? *axis : -1000000));
  key.push_back('/');
  key.append(std::to_string(blockSize));
  return key;
}

const QuantType *
Context::getQuantType(ElementKind storage, ElementKind expressed,
                      std::optional<int64_t> axis, llvm::ArrayRef<float> scales,
                      llvm::ArrayRef<int64_t> zeroPoints, int64_t blockSize) {
  if (!axis)
    blockSize = 0;
  std::string key = quantKeyPrefix(storage, expressed, axis, blockSize);
  key.push_back('|');
  key.append(reinterpret_cast<const char *>(scales.data()),
             scales.size() * sizeof(float));
  key.push_back('|');
  key.append(reinterpret_cast<const char *>(zeroPoints.data()),
             zeroPoints.size() * sizeof(int64_t));
  auto &slot = quantTypes[key];
  if (!slot)
    slot.reset(new QuantType(
        this, storage, expressed, axis,
        std::vector<float>(scales.begin(), scales.end()),
        std::vector<int64_t>(zeroPoints.begin(), zeroPoints.end()), blockSize));
  return slot.get();
}

const QuantType *Context::getTwoLevelQuantType(
    ElementKind storage, ElementKind expressed, std::optional<int64_t> axis,
    int64_t blockSize, ElementKind scaleKind, float scaleOfScales,
    llvm::ArrayRef<uint8_t> scaleCodes, llvm::ArrayRef<int64_t> zeroPoints) {
  if (!axis)
    blockSize = 0;
  // ONNX computes the scale tensor as (value(code) - 0) * scale in float32.
  std::vector<float> scales;
  scales.reserve(scaleCodes.size());
  for (uint8_t c : scaleCodes)
    scales.push_back(static_cast<float>(decodeFloat8(c, scaleKind)) *
                     scaleOfScales);
  std::string key = quantKeyPrefix(storage, expressed, axis, blockSize);
  key.append("|2|");
  key.push_back(static_cast<char>(scaleKind));
  key.append(reinterpret_cast<const char *>(&scaleOfScales), sizeof(float));
  key.append(reinterpret_cast<const char *>(scaleCodes.data()),
             scaleCodes.size());
  key.push_back('|');
  key.append(reinterpret_cast<const char *>(zeroPoints.data()),
             zeroPoints.size() * sizeof(int64_t));
  auto &slot = quantTypes[key];
  if (!slot) {
    slot.reset(new QuantType(
        this, storage, expressed, axis, std::move(scales),
        std::vector<int64_t>(zeroPoints.begin(), zeroPoints.end()), blockSize));
    slot->scaleStorage = scaleKind;
    slot->scaleOfScales = scaleOfScales;
    slot->scaleCodes.assign(scaleCodes.begin(), scaleCodes.end());
  }
  return slot.get();
}

/// Uniquing key: the element pointer, then per dimension its size as 8
/// raw bytes and, if it has one, its symbol with its length; '*' when
/// unranked.
/// Built on the stack without copying the shape: a type that exists already
/// (nearly every lookup) costs no allocation.
static void tensorKey(const llvm::ArrayRef<Dim> *shape, const Type *element,
                      llvm::SmallVectorImpl<char> &key) {
  auto appendBytes = [&](const void *p, size_t n) {
    const char *c = static_cast<const char *>(p);
    key.append(c, c + n);
  };
  appendBytes(&element, sizeof(element));
  if (!shape) {
    key.push_back('*');
    return;
  }
  key.push_back('<');
  for (const Dim &d : *shape) {
    appendBytes(&d.size, sizeof(d.size));
    if (d.isSymbolic()) {
      // Length first: a symbol may contain any bytes, quotes included.
      uint64_t length = d.symbol.size();
      key.push_back('"');
      appendBytes(&length, sizeof(length));
      appendBytes(d.symbol.data(), d.symbol.size());
    } else {
      key.push_back('x');
    }
  }
}

const TensorType *Context::getTensorType(llvm::ArrayRef<Dim> shape,
                                         const Type *element) {
  llvm::SmallString<128> key;
  tensorKey(&shape, element, key);
  auto &slot = tensorTypes[key];
  if (!slot)
    slot.reset(new TensorType(
        this, std::vector<Dim>(shape.begin(), shape.end()), element));
  return slot.get();
}

const TensorType *Context::getTensorType(llvm::ArrayRef<int64_t> staticShape,
                                         const Type *element) {
  llvm::SmallVector<Dim, 6> dims;
  for (int64_t d : staticShape)
    dims.push_back(d < 0 ? Dim::dynamic() : Dim::fixed(d));
  return getTensorType(dims, element);
}

const TensorType *Context::getUnrankedTensorType(const Type *element) {
  llvm::SmallString<16> key;
  tensorKey(nullptr, element, key);
  auto &slot = tensorTypes[key];
  if (!slot)
    slot.reset(new TensorType(this, std::nullopt, element));
  return slot.get();
}

const TensorType *Context::getUnknownTensorType() {
  if (!unknownTensorType)
    unknownTensorType =
        getUnrankedTensorType(getElementType(ElementKind::Unknown));
  return unknownTensorType;
}

std::string qopt::typeToString(const Type *type) {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (auto *e = llvm::dyn_cast<ElementType>(type)) {
    os << getElementKindName(e->getKind());
  } else if (auto *q = llvm::dyn_cast<QuantType>(type)) {
    os << "!quant.uniform<" << getElementKindName(q->getStorageKind()) << ":"
       << getElementKindName(q->getExpressedKind());
    auto printParam = [&](size_t i) {
      os << formatFloat(q->getScales()[i]);
      if (q->getZeroPoints()[i] != 0)
        os << ":" << q->getZeroPoints()[i];
    };
    if (q->hasQuantizedScales()) {
      // Two-level: ", f8E4M3FN*s {v:zp,...}", v the codes' values.
      if (q->isBlocked())
        os << ":{" << q->getAxis() << ":" << q->getBlockSize() << "}";
      else if (q->isPerAxis())
        os << ":" << q->getAxis();
      os << ", " << getElementKindName(q->getScaleStorageKind()) << "*"
         << formatFloat(q->getScaleOfScales()) << " {";
      for (size_t i = 0; i < q->getNumChannels(); ++i) {
        if (i)
          os << ",";
        os << formatFloat(static_cast<float>(
            decodeFloat8(q->getScaleCodes()[i], q->getScaleStorageKind())));
        if (q->getZeroPoints()[i] != 0)
          os << ":" << q->getZeroPoints()[i];
      }
      os << "}>";
    } else if (q->isPerAxis()) {
      // Block-wise: ":{axis:block}" (MLIR's sub-channel spelling).
      if (q->isBlocked())
        os << ":{" << q->getAxis() << ":" << q->getBlockSize() << "}, {";
      else
        os << ":" << q->getAxis() << ", {";
      for (size_t i = 0; i < q->getNumChannels(); ++i) {
        if (i)
          os << ",";
        printParam(i);
      }
      os << "}>";
    } else {
      os << ", ";
      printParam(0);
      os << ">";
    }
  } else {
    auto *t = llvm::cast<TensorType>(type);
    os << "tensor<";
    if (!t->hasRank()) {
      os << "*x";
    } else {
      for (const Dim &d : t->getShape()) {
        if (d.isStatic())
          os << d.size;
        else if (d.isSymbolic())
          os << quoteString(d.symbol);
        else
          os << '?';
        os << 'x';
      }
    }
    os << typeToString(t->getElementType()) << ">";
  }
  return os.str();
}
