//===- Tensor.h - Runtime tensors for the reference interpreter -*- C++ -*-===//
//
// A dense, row-major tensor: element kind, shape and little-endian bytes (the
// ONNX raw_data layout), or strings. Kernels read and write elements through
// typed pointers (data<T>()) or, where speed does not matter, through the
// double/int64 accessors that convert from and to any numeric kind.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_INTERPRETER_TENSOR_H
#define QOPT_INTERPRETER_TENSOR_H

#include "qopt/IR/Attributes.h"
#include "qopt/IR/Types.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace qopt {
namespace interp {

using Shape = std::vector<int64_t>;

/// Element count of a shape, or nullopt if negative or overflowing.
std::optional<int64_t> shapeNumElements(llvm::ArrayRef<int64_t> shape);
std::string shapeToString(llvm::ArrayRef<int64_t> shape);

class Tensor {
public:
  Tensor() = default;
  /// Zero-filled tensor. Callers check sizes first (see allocate()).
  Tensor(ElementKind kind, Shape shape);
  /// Checked allocation: fails instead of allocating absurd sizes.
  static llvm::Expected<Tensor> allocate(ElementKind kind, Shape shape);
  /// A tensor holding a copy of `bytes` (its byte size of them; not for
  /// strings), without first filling it with zeros.
  static Tensor copyOf(ElementKind kind, Shape shape, const char *bytes);
  static Tensor fromDense(const DenseElements &d);
  static Tensor scalar(ElementKind kind, double value);

  ElementKind kind() const { return elemKind; }
  const Shape &shape() const { return dims; }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  int64_t dim(int64_t i) const { return dims[i]; }
  int64_t numElements() const { return count; }
  bool isValid() const { return valid; }

  template <typename T> T *data() {
    return reinterpret_cast<T *>(storage.data());
  }
  template <typename T> const T *data() const {
    return reinterpret_cast<const T *>(storage.data());
  }
  char *bytes() { return storage.data(); }
  const char *bytes() const { return storage.data(); }
  size_t byteSize() const { return storage.size(); }
  std::vector<std::string> &strings() { return strs; }
  const std::vector<std::string> &strings() const { return strs; }

  /// Element i as double (floats exactly; integers exactly up to 2^53).
  double getDouble(int64_t i) const;
  int64_t getInt(int64_t i) const;
  /// Stores v converted to the element kind: floats round to nearest,
  /// integers truncate toward zero (C++ conversion), bool is v != 0.
  void setDouble(int64_t i, double v);
  void setInt(int64_t i, int64_t v);

  std::vector<double> toDoubles() const;
  std::vector<int64_t> toInts() const;
  /// Same data, other shape (element count must match).
  Tensor reshaped(Shape newShape) const;
  /// Converts to another kind with setDouble semantics.
  Tensor castTo(ElementKind to) const;

  /// Bit-identical (kind, shape and bytes/strings).
  bool identicalTo(const Tensor &other) const;

private:
  ElementKind elemKind = ElementKind::Unknown;
  Shape dims;
  int64_t count = 0;
  bool valid = false;
  std::vector<char> storage;
  std::vector<std::string> strs;
};

/// What one run of the reference interpreter may still take, against the
/// process's ResourceLimits: the bytes of the values it holds, the bytes
/// allocated while the current node runs, and the work charged so far.
/// Interpreter::run installs one for its thread (ScopedRunBudget); without
/// one (a plan's float steps, whose sizes the plan's check bounded) nothing
/// is charged.
class RunBudget {
public:
  RunBudget();
  /// The budget of this thread's run, or null.
  static RunBudget *current();
  /// Refuses `bytes` more (a tensor or a kernel's scratch) while the node
  /// runs if they pass the memory limit; `what` names them.
  llvm::Error chargeMemory(uint64_t bytes, const llvm::Twine &what);
  /// Refuses `units` more multiply-accumulates past the work limit.
  llvm::Error chargeWork(uint64_t units, const llvm::Twine &what);
  /// Between nodes: the values held now (the node's charges end).
  void setHeldBytes(uint64_t bytes) {
    held = bytes;
    nodeBytes = 0;
  }

private:
  uint64_t memoryLimit, workLimit;
  uint64_t held = 0, nodeBytes = 0, work = 0;
};

/// Installs `budget` for this thread until the scope ends.
class ScopedRunBudget {
public:
  explicit ScopedRunBudget(RunBudget &budget);
  ~ScopedRunBudget();
  ScopedRunBudget(const ScopedRunBudget &) = delete;
  ScopedRunBudget &operator=(const ScopedRunBudget &) = delete;

private:
  RunBudget *previous;
};

/// Numpy-style broadcast of two shapes; nullopt if incompatible.
std::optional<Shape> broadcastShapes(llvm::ArrayRef<int64_t> a,
                                     llvm::ArrayRef<int64_t> b);

/// Maps each flat index of `outShape` to the flat index of a tensor of
/// `inShape` broadcast to it (inShape right-aligned, size-1 dims repeat).
class BroadcastIndexer {
public:
  BroadcastIndexer(llvm::ArrayRef<int64_t> inShape,
                   llvm::ArrayRef<int64_t> outShape);
  /// Flat input offsets for every output element, in order.
  const std::vector<int64_t> &offsets() const { return map; }

private:
  std::vector<int64_t> map;
};

/// Row-major strides of a shape.
Shape stridesOf(llvm::ArrayRef<int64_t> shape);

} // namespace interp
} // namespace qopt

#endif // QOPT_INTERPRETER_TENSOR_H
