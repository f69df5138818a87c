//===- Attributes.cpp - Node attributes and dense constants ---------------===//

#include "qopt/IR/Attributes.h"
#include "qopt/Support/FloatFormat.h"

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
  default:
    return isIntegerKind(kind) || kind == ElementKind::Bool
               ? static_cast<double>(getAsInt(i))
               : 0.0; // strings and Unknown have no numeric value
  }
}

int64_t DenseElements::getAsInt(int64_t i) const {
  switch (kind) {
  case ElementKind::I8:
    return loadAt<int8_t>(bytes, i);
  case ElementKind::U8:
  case ElementKind::Bool:
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

bool Attribute::operator==(const Attribute &o) const {
  if (storage.index() != o.storage.index())
    return false;
  if (auto *a = getIf<DenseElementsRef>())
    return **a == **o.getIf<DenseElementsRef>();
  if (auto *a = getIf<std::vector<DenseElementsRef>>()) {
    auto *b = o.getIf<std::vector<DenseElementsRef>>();
    if (a->size() != b->size())
      return false;
    for (size_t i = 0; i < a->size(); ++i)
      if (!(*(*a)[i] == *(*b)[i]))
        return false;
    return true;
  }
  if (auto *a = getIf<float>()) {
    float b = *o.getIf<float>();
    return std::memcmp(a, &b, sizeof(float)) == 0;
  }
  return storage == o.storage;
}
