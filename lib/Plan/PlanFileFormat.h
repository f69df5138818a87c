//===- PlanFileFormat.h - The layout of a .qplan file -----------*- C++ -*-===//
//
//   header (32 bytes)   "QOPTPLAN", u32 version, u32 0,
//                       u64 file size, u64 xxHash64 of the bytes after it
//   plan                u64 arena bytes
//   tensors             u64 count; each: name, kind u8, layout u8, shape,
//                       arena offset i64, constant u8 (0/1) then its
//                       strings (a string tensor) or blob
//   inputs, outputs     i32 lists
//   steps               u64 count; each: kind u8, name, op, inputs and
//                       outputs (i32 lists), then the kind's parameters
//                       (PlanEncoder.cpp and each kind's writeFields, in
//                       lib/Plan/Steps/, write them in order)
//   end                 u32 kEndMarker, nothing after it
//
// Scalars are little-endian; a string is u64 length + bytes; a list is u64
// count + elements; a blob is u64 length, zero padding to the next 64-byte
// file offset, then the bytes.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_PLAN_PLANFILEFORMAT_H
#define QOPT_LIB_PLAN_PLANFILEFORMAT_H

#include <cstddef>
#include <cstdint>

namespace qopt {
namespace plan {
namespace planfile {

constexpr size_t kHeaderBytes = 32;
constexpr size_t kBlobAlignment = 64;
constexpr uint32_t kEndMarker = 0x444e4521; // "!END"

/// Attribute kinds, in the order of Attribute::Storage's alternatives.
enum class AttrTag : uint8_t {
  Int,
  Float,
  String,
  Ints,
  Floats,
  Strings,
  Tensor,
  Tensors,
  Opaque,
  EmptyList,
};

} // namespace planfile
} // namespace plan
} // namespace qopt

#endif // QOPT_LIB_PLAN_PLANFILEFORMAT_H
