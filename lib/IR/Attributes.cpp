//===- Attributes.cpp - Node attributes and dense constants ---------------===//

#include "qopt/IR/Attributes.h"
#include "qopt/IR/Float8.h"
#include "qopt/Support/FloatFormat.h"

#include <algorithm>
#include <cstring>

using namespace qopt;

static int64_t productOrZero(llvm::ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      return 0;
  return n;
}

DenseElements::DenseElements(ElementKind kind, std::vector<int64_t> dims,
                             std::string bytes, std::string name)
    : kind(kind), dims(std::move(dims)), bytes(std::move(bytes)),
      name(std::move(name)) {
  numElements = productOrZero(this->dims);
}

DenseElements::DenseElements(std::vector<int64_t> dims,
                             std::vector<std::string> strings, std::string name)
    : kind(ElementKind::String), dims(std::move(dims)),
      strings(std::move(strings)), name(std::move(name)) {
  numElements = productOrZero(this->dims);
}

std::optional<uint64_t> DenseElements::byteSizeFor(ElementKind kind,
                                                   int64_t count) {
  uint64_t size;
  if (count < 0 || __builtin_mul_overflow(static_cast<uint64_t>(count),
                                          getElementByteSize(kind), &size))
    return std::nullopt;
  return size;
}

template <typename T> static T loadAt(const std::string &bytes, int64_t i) {
  T v;
  std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
  return v;
}

double DenseElements::getAsDouble(int64_t i) const {
  switch (kind) {
  case ElementKind::F32:
    return loadAt<float>(bytes, i);
  case ElementKind::F64:
    return loadAt<double>(bytes, i);
  case ElementKind::F16:
    return halfToFloat(loadAt<uint16_t>(bytes, i));
  case ElementKind::BF16:
    return bfloat16ToFloat(loadAt<uint16_t>(bytes, i));
  case ElementKind::U64:
    return static_cast<double>(loadAt<uint64_t>(bytes, i));
  case ElementKind::F8E4M3FN:
  case ElementKind::F8E4M3FNUZ:
  case ElementKind::F8E5M2:
  case ElementKind::F8E5M2FNUZ:
  case ElementKind::F4E2M1:
    return decodeFloat8(loadAt<uint8_t>(bytes, i), kind);
  default:
    return isIntegerKind(kind) || kind == ElementKind::Bool
               ? static_cast<double>(getAsInt(i))
               : 0.0; // strings and Unknown have no numeric value
  }
}

int64_t DenseElements::getAsInt(int64_t i) const {
  switch (kind) {
  case ElementKind::I8:
  case ElementKind::I4: // one element a byte, sign-extended
    return loadAt<int8_t>(bytes, i);
  case ElementKind::U8:
  case ElementKind::U4:
  case ElementKind::Bool:
  case ElementKind::F8E4M3FN: // the code
  case ElementKind::F8E4M3FNUZ:
  case ElementKind::F8E5M2:
  case ElementKind::F8E5M2FNUZ:
  case ElementKind::F4E2M1:
    return loadAt<uint8_t>(bytes, i);
  case ElementKind::I16:
    return loadAt<int16_t>(bytes, i);
  case ElementKind::U16:
    return loadAt<uint16_t>(bytes, i);
  case ElementKind::I32:
    return loadAt<int32_t>(bytes, i);
  case ElementKind::U32:
    return loadAt<uint32_t>(bytes, i);
  case ElementKind::I64:
    return loadAt<int64_t>(bytes, i);
  case ElementKind::U64:
    return static_cast<int64_t>(loadAt<uint64_t>(bytes, i));
  default:
    return isFloatKind(kind) ? static_cast<int64_t>(getAsDouble(i)) : 0;
  }
}

bool DenseElements::isSplat() const {
  if (kind == ElementKind::String) {
    for (const std::string &s : strings)
      if (s != strings.front())
        return false;
    return true;
  }
  unsigned width = getElementByteSize(kind);
  if (width == 0 || bytes.size() < width)
    return true;
  for (size_t off = width; off < bytes.size(); off += width)
    if (std::memcmp(bytes.data(), bytes.data() + off, width) != 0)
      return false;
  return true;
}

bool DenseElements::operator==(const DenseElements &o) const {
  return kind == o.kind && dims == o.dims && bytes == o.bytes &&
         strings == o.strings;
}

Attribute::Attribute(std::vector<int64_t> v) {
  if (v.empty())
    storage = EmptyList{EmptyList::Ints};
  else
    storage = std::move(v);
}
Attribute::Attribute(std::vector<float> v) {
  if (v.empty())
    storage = EmptyList{EmptyList::Floats};
  else
    storage = std::move(v);
}
Attribute::Attribute(std::vector<std::string> v) {
  if (v.empty())
    storage = EmptyList{EmptyList::Strings};
  else
    storage = std::move(v);
}
Attribute::Attribute(std::vector<DenseElementsRef> v) {
  if (v.empty())
    storage = EmptyList{EmptyList::Tensors};
  else
    storage = std::move(v);
}

std::vector<int64_t> Attribute::getInts() const {
  if (auto *v = getIf<std::vector<int64_t>>())
    return *v;
  return {};
}

/// Same payload (shared pointer) or equal contents.
static bool sameDense(const DenseElementsRef &a, const DenseElementsRef &b) {
  return a == b || *a == *b;
}

bool Attribute::operator==(const Attribute &o) const {
  if (storage.index() != o.storage.index())
    return false;
  if (auto *a = getIf<DenseElementsRef>())
    return sameDense(*a, *o.getIf<DenseElementsRef>());
  if (auto *a = getIf<std::vector<DenseElementsRef>>()) {
    auto *b = o.getIf<std::vector<DenseElementsRef>>();
    if (a->size() != b->size())
      return false;
    for (size_t i = 0; i < a->size(); ++i)
      if (!sameDense((*a)[i], (*b)[i]))
        return false;
    return true;
  }
  if (auto *a = getIf<float>()) {
    float b = *o.getIf<float>();
    return std::memcmp(a, &b, sizeof(float)) == 0;
  }
  return storage == o.storage;
}

//===----------------------------------------------------------------------===//
// Hashing
//===----------------------------------------------------------------------===//

/// Bytes hashed at each end of a large payload.
static constexpr size_t kHashedBytes = 256;
/// Strings hashed at each end of a large string tensor.
static constexpr size_t kHashedStrings = 16;

static llvm::hash_code hashBounded(llvm::StringRef bytes) {
  if (bytes.size() <= 2 * kHashedBytes)
    return llvm::hash_value(bytes);
  return llvm::hash_combine(bytes.size(),
                            llvm::hash_value(bytes.take_front(kHashedBytes)),
                            llvm::hash_value(bytes.take_back(kHashedBytes)));
}

llvm::hash_code qopt::hash_value(const DenseElements &d) {
  llvm::hash_code h = llvm::hash_combine(
      static_cast<int>(d.getKind()),
      llvm::hash_combine_range(d.getDims().begin(), d.getDims().end()));
  if (d.getKind() != ElementKind::String)
    return llvm::hash_combine(h, hashBounded(d.getRawBytes()));
  llvm::ArrayRef<std::string> s = d.getStrings();
  h = llvm::hash_combine(h, s.size());
  size_t n = std::min(s.size(), 2 * kHashedStrings);
  for (size_t i = 0; i < n; ++i) // the first and the last strings
    h = llvm::hash_combine(
        h, hashBounded(i < kHashedStrings ? s[i] : s[s.size() - n + i]));
  return h;
}

/// operator== compares float lists with ==: 0.0 and -0.0 are equal there,
/// so they must hash alike (NaN never compares equal, any hash will do).
static uint32_t floatKey(float f) {
  if (f == 0.0f)
    return 0;
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

llvm::hash_code qopt::hash_value(const Attribute &a) {
  const Attribute::Storage &s = a.get();
  llvm::hash_code h = llvm::hash_value(s.index());
  if (auto *v = std::get_if<int64_t>(&s))
    return llvm::hash_combine(h, *v);
  if (auto *v = std::get_if<float>(&s)) { // compared bitwise
    uint32_t bits;
    std::memcpy(&bits, v, sizeof bits);
    return llvm::hash_combine(h, bits);
  }
  if (auto *v = std::get_if<std::string>(&s))
    return llvm::hash_combine(h, hashBounded(*v));
  if (auto *v = std::get_if<std::vector<int64_t>>(&s))
    return llvm::hash_combine(h,
                              llvm::hash_combine_range(v->begin(), v->end()));
  if (auto *v = std::get_if<std::vector<float>>(&s)) {
    for (float f : *v)
      h = llvm::hash_combine(h, floatKey(f));
    return h;
  }
  if (auto *v = std::get_if<std::vector<std::string>>(&s)) {
    for (const std::string &str : *v)
      h = llvm::hash_combine(h, hashBounded(str));
    return h;
  }
  if (auto *v = std::get_if<DenseElementsRef>(&s))
    return llvm::hash_combine(h, hash_value(**v));
  if (auto *v = std::get_if<std::vector<DenseElementsRef>>(&s)) {
    for (const DenseElementsRef &d : *v)
      h = llvm::hash_combine(h, hash_value(*d));
    return h;
  }
  if (auto *v = std::get_if<OpaqueAttr>(&s))
    return llvm::hash_combine(h, llvm::hash_value(v->kind),
                              hashBounded(v->bytes));
  if (auto *v = std::get_if<EmptyList>(&s))
    return llvm::hash_combine(h, static_cast<int>(v->kind));
  return h;
}

llvm::hash_code qopt::hash_value(const NamedAttribute &a) {
  return llvm::hash_combine(llvm::hash_value(a.name), hash_value(a.value));
}
