//===- Attributes.h - Node attributes and dense constants -------*- C++ -*-===//
//
// Attributes mirror ONNX's: int, float, string, tensor and lists of them.
// Subgraphs, sparse tensors and type protos are kept as opaque serialized
// bytes so that a model never loses anything qopt does not interpret.
//
// Dense tensor data is shared and immutable (copying an attribute does not copy
// the weights): bytes are stored little-endian in ONNX raw_data layout.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_IR_ATTRIBUTES_H
#define QOPT_IR_ATTRIBUTES_H

#include "qopt/IR/Types.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace qopt {

/// Immutable dense tensor data.
class DenseElements {
public:
  /// Takes the raw bytes (moved); checks nothing: callers validate sizes.
  DenseElements(ElementKind kind, std::vector<int64_t> dims, std::string bytes,
                std::string name = {});
  /// A string tensor.
  DenseElements(std::vector<int64_t> dims, std::vector<std::string> strings,
                std::string name = {});

  ElementKind getKind() const { return kind; }
  llvm::ArrayRef<int64_t> getDims() const { return dims; }
  int64_t getNumElements() const { return numElements; }
  llvm::StringRef getRawBytes() const { return bytes; }
  llvm::ArrayRef<std::string> getStrings() const { return strings; }
  /// Name of the tensor in the source model (used for resource names).
  llvm::StringRef getName() const { return name; }

  /// Element `i` converted to double / int64 (for small parameter tensors).
  double getAsDouble(int64_t i) const;
  int64_t getAsInt(int64_t i) const;
  /// True when every element has the same bytes.
  bool isSplat() const;
  bool operator==(const DenseElements &other) const;

  /// Byte size for `count` elements of `kind`, or nullopt on overflow.
  static std::optional<uint64_t> byteSizeFor(ElementKind kind, int64_t count);

private:
  ElementKind kind;
  std::vector<int64_t> dims;
  int64_t numElements;
  std::string bytes;
  std::vector<std::string> strings;
  std::string name;
};

using DenseElementsRef = std::shared_ptr<const DenseElements>;

/// Serialized attribute the IR does not interpret (GRAPH, SPARSE_TENSOR, ...).
struct OpaqueAttr {
  std::string kind;  // "graph", "graphs", "sparse_tensor", "type_proto", ...
  std::string bytes; // the serialized onnx::AttributeProto
  bool operator==(const OpaqueAttr &o) const {
    return kind == o.kind && bytes == o.bytes;
  }
};

/// Empty list whose element kind must survive a round trip.
struct EmptyList {
  enum Kind { Ints, Floats, Strings, Tensors } kind;
  bool operator==(const EmptyList &o) const { return kind == o.kind; }
};

class Attribute {
public:
  using Storage =
      std::variant<int64_t, float, std::string, std::vector<int64_t>,
                   std::vector<float>, std::vector<std::string>,
                   DenseElementsRef, std::vector<DenseElementsRef>, OpaqueAttr,
                   EmptyList>;

  Attribute(int64_t v) : storage(v) {}
  Attribute(float v) : storage(v) {}
  Attribute(std::string v) : storage(std::move(v)) {}
  Attribute(const char *v) : storage(std::string(v)) {}
  Attribute(std::vector<int64_t> v);
  Attribute(std::vector<float> v);
  Attribute(std::vector<std::string> v);
  Attribute(DenseElementsRef v) : storage(std::move(v)) {}
  Attribute(std::vector<DenseElementsRef> v);
  Attribute(OpaqueAttr v) : storage(std::move(v)) {}
  Attribute(EmptyList v) : storage(v) {}

  const Storage &get() const { return storage; }
  template <typename T> const T *getIf() const {
    return std::get_if<T>(&storage);
  }
  bool isInt() const { return getIf<int64_t>(); }
  bool isFloat() const { return getIf<float>(); }
  bool isString() const { return getIf<std::string>(); }
  bool isTensor() const { return getIf<DenseElementsRef>(); }

  /// Ints list; an EmptyList of Ints reads as an empty vector.
  std::vector<int64_t> getInts() const;
  bool operator==(const Attribute &other) const;
  bool operator!=(const Attribute &other) const { return !(*this == other); }

private:
  Storage storage;
};

struct NamedAttribute {
  std::string name;
  Attribute value;
};

/// Hashes consistent with operator== (equal values hash alike). Dense data
/// hashes its kind, dims, size and a bounded prefix and suffix of its bytes
/// (or strings), so hashing a large weight stays cheap; payloads shared by
/// pointer compare equal without reading their bytes.
llvm::hash_code hash_value(const DenseElements &d);
llvm::hash_code hash_value(const Attribute &a);
llvm::hash_code hash_value(const NamedAttribute &a);

} // namespace qopt

#endif // QOPT_IR_ATTRIBUTES_H
