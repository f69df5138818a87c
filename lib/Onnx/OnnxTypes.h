//===- OnnxTypes.h - Conversions between ONNX protos and qIR ----*- C++ -*-===//
//
// Private to lib/Onnx: the only code that sees onnx/protobuf headers.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_ONNX_ONNXTYPES_H
#define QOPT_LIB_ONNX_ONNXTYPES_H

#include "qopt/IR/Attributes.h"
#include "qopt/IR/Types.h"

#include "onnx/onnx_pb.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Error.h"

namespace qopt {
namespace onnxbridge {

/// ONNX TensorProto::DataType -> ElementKind; unsupported kinds are errors
/// that say which type it was ("4-bit type INT4 is not supported yet").
llvm::Expected<ElementKind> elementKindFromOnnx(int64_t dataType,
                                                llvm::StringRef what);

llvm::Expected<const TensorType *>
tensorTypeFromProto(const onnx::TypeProto &type, Context &ctx,
                    llvm::StringRef what);
/// Fills `out` with the storage type of `type`; unknown parts stay unset.
void tensorTypeToProto(const TensorType *type, onnx::TypeProto &out);

/// Decodes a tensor (raw, typed fields or external data). Raw bytes are
/// moved out of `t`.
llvm::Expected<DenseElementsRef> tensorFromProto(onnx::TensorProto &t,
                                                 llvm::StringRef baseDir,
                                                 llvm::StringRef what);
void tensorToProto(const DenseElements &d, llvm::StringRef name,
                   onnx::TensorProto &out);

/// 4-bit kinds (I4, U4) hold one element a byte in memory and two a byte
/// in ONNX: the first in the low nibble, an odd count's last high nibble 0.
bool isPackedInOnnx(ElementKind kind);
/// The bytes ONNX stores for `count` elements of `kind`.
uint64_t onnxByteSize(ElementKind kind, uint64_t count);
/// One byte an element -> ONNX's packed nibbles.
std::string packNibbles(llvm::StringRef unpacked);
/// ONNX's packed nibbles -> one byte an element (sign-extended for I4).
std::string unpackNibbles(llvm::StringRef packed, uint64_t count,
                          ElementKind kind);
/// What ONNX stores for `d`: its bytes, packed for a 4-bit kind.
std::string onnxRawBytes(const DenseElements &d);

/// `where` describes the node, for error messages only.
llvm::Expected<Attribute>
attributeFromProto(const onnx::AttributeProto &a, llvm::StringRef baseDir,
                   llvm::function_ref<std::string()> where);
/// False if an opaque attribute's bytes no longer parse.
[[nodiscard]] bool attributeToProto(llvm::StringRef name, const Attribute &attr,
                                    onnx::AttributeProto &out);

/// Nesting depth accepted for protobuf messages (subgraphs in subgraphs).
constexpr int kProtoRecursionLimit = 256;

} // namespace onnxbridge
} // namespace qopt

#endif // QOPT_LIB_ONNX_ONNXTYPES_H
