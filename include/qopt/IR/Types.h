//===- Types.h - qIR types: element, quantized and tensor types -*- C++ -*-===//
//
// Types are immutable and uniqued in a Context, so two types are equal exactly
// when their pointers are equal.
//
//   element  ::= f32 | f16 | bf16 | f64 | i8 | u8 | i16 | u16 | i32 | u32
//              | i64 | u64 | bool | string | ?            (? = unknown)
//   quant    ::= !quant.uniform<i8:f32, 0.02>               per tensor, zp 0
//              | !quant.uniform<u8:f32, 0.0078125:128>      per tensor
//              | !quant.uniform<i8:f32:0, {0.021,0.017:3}>  per axis 0
//   tensor   ::= tensor<1x3x?x"N"xf32> | tensor<*xf32>      ranked | unranked
//
// Quantization parameters follow ONNX: real = (stored - zeroPoint) * scale.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_IR_TYPES_H
#define QOPT_IR_TYPES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Casting.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace qopt {

class Context;

/// Plain (non-quantized) element kinds. `Unknown` is used where a model does
/// not declare a value's element type.
enum class ElementKind : uint8_t {
  Unknown,
  F32,
  F16,
  BF16,
  F64,
  I8,
  U8,
  I16,
  U16,
  I32,
  U32,
  I64,
  U64,
  Bool,
  String,
  /// 4-bit integers (ONNX INT4 / UINT4, opset 21): one element a byte in
  /// memory (sign-extended for I4), two a byte in ONNX tensors.
  I4,
  U4,
  /// ONNX's float8 formats (opset 19; qopt/IR/Float8.h): one code a byte.
  /// Values of their own: neither float nor integer kinds here; getInt and
  /// setInt read and write the codes.
  F8E4M3FN,
  F8E4M3FNUZ,
  F8E5M2,
  F8E5M2FNUZ,
  /// ONNX FLOAT4E2M1 (opset 23, the element type of NVFP4; qopt/IR/
  /// Float8.h): one code a byte in memory (the low four bits), two a byte
  /// in ONNX tensors. Like the float8 kinds, neither float nor integer.
  F4E2M1,
};

/// Returns the text spelling ("f32", "u8", ...; "?" for Unknown).
llvm::StringRef getElementKindName(ElementKind kind);
/// Parses a spelling produced by getElementKindName.
std::optional<ElementKind> parseElementKindName(llvm::StringRef name);
/// Byte size of one element; 0 for String and Unknown.
unsigned getElementByteSize(ElementKind kind);
bool isFloatKind(ElementKind kind);
/// F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ.
bool isFloat8Kind(ElementKind kind);
/// The float8 kinds and F4E2M1: small floats stored as codes.
bool isMinifloatKind(ElementKind kind);
bool isIntegerKind(ElementKind kind);
bool isSignedIntegerKind(ElementKind kind);
/// Integer storage kinds of a quantized type (i4, u4, i8, u8, i16, u16 and
/// i32 for a bias): the grids passes and integer kernels compute on.
bool isQuantStorageKind(ElementKind kind);
/// Every storage kind a quantized type may use: the integer ones and the
/// minifloat ones (float8, float4), whose codes are values of their own.
bool isAnyQuantStorageKind(ElementKind kind);
/// ONNX TensorProto.DataType numbers (1 = FLOAT, 2 = UINT8, ...). nullopt
/// for the ONNX types qopt has no element kind for (float8, 4-bit, complex).
std::optional<ElementKind> elementKindFromOnnxDataType(int64_t dataType);
/// The ONNX number of a kind; 0 (UNDEFINED) for Unknown.
int32_t onnxDataTypeOf(ElementKind kind);

/// Inclusive value range of an integer kind (for zero-point checks).
std::pair<int64_t, int64_t> getIntegerRange(ElementKind kind);

/// Base of all uniqued types.
class Type {
public:
  enum class TypeKind : uint8_t { Element, Quant, Tensor };
  TypeKind getTypeKind() const { return typeKind; }
  Context &getContext() const { return *ctx; }

protected:
  Type(TypeKind k, Context *c) : typeKind(k), ctx(c) {}
  ~Type() = default;

private:
  TypeKind typeKind;
  Context *ctx;
};

/// A plain element type such as f32 or u8.
class ElementType : public Type {
public:
  ElementKind getKind() const { return kind; }
  static bool classof(const Type *t) {
    return t->getTypeKind() == TypeKind::Element;
  }

private:
  friend class Context;
  ElementType(Context *c, ElementKind k)
      : Type(TypeKind::Element, c), kind(k) {}
  ElementKind kind;
};

/// A uniform affine quantized element type, per tensor or per axis.
/// The type itself is not validated at construction; the Verifier checks
/// scales, zero points and axis against the tensors that use it.
class QuantType : public Type {
public:
  ElementKind getStorageKind() const { return storage; }
  ElementKind getExpressedKind() const { return expressed; }
  /// Integer storage: q = round(x / s) + zp on an integer grid. Passes that
  /// compute on grids (requantize, unify, fold) handle only these.
  bool hasIntegerStorage() const { return isQuantStorageKind(storage); }
  /// float8 or float4 storage (ONNX FP8/FP4 Q/DQ): the codes are small
  /// floats, q = to_minifloat(x / s), and the zero point is 0.
  bool hasMinifloatStorage() const { return isMinifloatKind(storage); }
  bool isPerAxis() const { return axis.has_value(); }
  /// Quantized dimension for per-axis types.
  int64_t getAxis() const { return *axis; }
  /// Block-wise (ONNX block_size, opset 21): along the axis, each run of
  /// getBlockSize() elements has its own (scale, zero point), and so does
  /// every index of the other dims. The parameters are the scale tensor's
  /// elements in row-major order: the tensor's shape with the axis's size
  /// divided by the block size, rounded up. isPerAxis() is true too; code
  /// that reads one parameter per index of the axis must check this.
  bool isBlocked() const { return blockSize > 0; }
  int64_t getBlockSize() const { return blockSize; }
  llvm::ArrayRef<float> getScales() const { return scales; }
  llvm::ArrayRef<int64_t> getZeroPoints() const { return zeroPoints; }
  float getScale() const { return scales.front(); }
  int64_t getZeroPoint() const { return zeroPoints.front(); }
  /// Number of (scale, zero point) pairs: 1 for per-tensor types.
  size_t getNumChannels() const { return scales.size(); }
  /// Same parameters apart from the storage kind, e.g. for requantize checks.
  bool hasSameParams(const QuantType *other) const;
  /// Two-level scales (NVFP4: FP4 codes in blocks whose scales are float8
  /// codes that one float32 scale dequantizes): each scale is
  /// value(getScaleCodes()[i]) * getScaleOfScales() in float32, the code of
  /// kind getScaleStorageKind(). getScales() holds the products.
  bool hasQuantizedScales() const {
    return scaleStorage != ElementKind::Unknown;
  }
  ElementKind getScaleStorageKind() const { return scaleStorage; }
  float getScaleOfScales() const { return scaleOfScales; }
  llvm::ArrayRef<uint8_t> getScaleCodes() const { return scaleCodes; }

  static bool classof(const Type *t) {
    return t->getTypeKind() == TypeKind::Quant;
  }

private:
  friend class Context;
  QuantType(Context *c, ElementKind storage, ElementKind expressed,
            std::optional<int64_t> axis, std::vector<float> scales,
            std::vector<int64_t> zeroPoints, int64_t blockSize)
      : Type(TypeKind::Quant, c), storage(storage), expressed(expressed),
        axis(axis), blockSize(blockSize), scales(std::move(scales)),
        zeroPoints(std::move(zeroPoints)) {}
  ElementKind storage;
  ElementKind expressed;
  std::optional<int64_t> axis;
  int64_t blockSize = 0;
  std::vector<float> scales;
  std::vector<int64_t> zeroPoints;
  ElementKind scaleStorage = ElementKind::Unknown;
  float scaleOfScales = 0;
  std::vector<uint8_t> scaleCodes;
};

/// One dimension of a tensor shape: static size, anonymous dynamic (`?`) or a
/// named symbolic dimension (`"N"`).
struct Dim {
  static constexpr int64_t kDynamic = -1;
  int64_t size = kDynamic;
  std::string symbol;

  static Dim fixed(int64_t n) { return Dim{n, {}}; }
  static Dim dynamic() { return Dim{kDynamic, {}}; }
  static Dim symbolic(std::string s) { return Dim{kDynamic, std::move(s)}; }
  bool isStatic() const { return size >= 0; }
  bool isSymbolic() const { return !symbol.empty(); }
  bool operator==(const Dim &o) const {
    return size == o.size && symbol == o.symbol;
  }
  bool operator!=(const Dim &o) const { return !(*this == o); }
};

/// A tensor: optional shape (absent = unranked) and an element type, which is
/// an ElementType or a QuantType.
class TensorType : public Type {
public:
  bool hasRank() const { return shape.has_value(); }
  int64_t getRank() const { return static_cast<int64_t>(shape->size()); }
  llvm::ArrayRef<Dim> getShape() const { return *shape; }
  bool hasStaticShape() const;
  /// The dims of a ranked, fully static shape, or none.
  std::optional<std::vector<int64_t>> getStaticDims() const;
  /// Element count if the shape is fully static and the count fits in int64.
  std::optional<int64_t> getNumElements() const;

  const Type *getElementType() const { return element; }
  const QuantType *getQuantType() const;
  /// The plain kind of the elements: storage kind for quantized types.
  ElementKind getStorageKind() const;
  bool isQuantized() const { return getQuantType() != nullptr; }
  bool isUnknown() const {
    return !hasRank() && getStorageKind() == ElementKind::Unknown;
  }

  /// Same shape with another element type.
  const TensorType *withElementType(const Type *elem) const;

  static bool classof(const Type *t) {
    return t->getTypeKind() == TypeKind::Tensor;
  }

private:
  friend class Context;
  TensorType(Context *c, std::optional<std::vector<Dim>> shape,
             const Type *element)
      : Type(TypeKind::Tensor, c), shape(std::move(shape)), element(element) {}
  std::optional<std::vector<Dim>> shape;
  const Type *element;
};

/// Owns and uniques all types.
class Context {
public:
  Context();
  ~Context();
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  const ElementType *getElementType(ElementKind kind);
  /// blockSize > 0 (with an axis): block-wise, see QuantType::isBlocked.
  const QuantType *getQuantType(ElementKind storage, ElementKind expressed,
                                std::optional<int64_t> axis,
                                llvm::ArrayRef<float> scales,
                                llvm::ArrayRef<int64_t> zeroPoints,
                                int64_t blockSize = 0);
  /// Two-level scales: scale i is value(scaleCodes[i]) * scaleOfScales,
  /// the codes of minifloat kind `scaleKind` (QuantType::hasQuantizedScales).
  const QuantType *getTwoLevelQuantType(
      ElementKind storage, ElementKind expressed, std::optional<int64_t> axis,
      int64_t blockSize, ElementKind scaleKind, float scaleOfScales,
      llvm::ArrayRef<uint8_t> scaleCodes, llvm::ArrayRef<int64_t> zeroPoints);
  const QuantType *getPerTensorQuantType(ElementKind storage,
                                         ElementKind expressed, float scale,
                                         int64_t zeroPoint) {
    return getQuantType(storage, expressed, std::nullopt, {scale}, {zeroPoint});
  }
  const TensorType *getTensorType(llvm::ArrayRef<Dim> shape,
                                  const Type *element);
  const TensorType *getTensorType(llvm::ArrayRef<int64_t> staticShape,
                                  const Type *element);
  const TensorType *getUnrankedTensorType(const Type *element);
  /// `tensor<*x?>`: nothing is known.
  const TensorType *getUnknownTensorType();

private:
  std::vector<std::unique_ptr<ElementType>> elementTypes;
  std::unordered_map<std::string, std::unique_ptr<QuantType>> quantTypes;
  llvm::StringMap<std::unique_ptr<TensorType>> tensorTypes;
  const TensorType *unknownTensorType = nullptr;
};

/// Prints a type in its text form (no alias substitution).
std::string typeToString(const Type *type);

} // namespace qopt

#endif // QOPT_IR_TYPES_H
