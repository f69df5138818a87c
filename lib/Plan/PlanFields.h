//===- PlanFields.h - A plan as a stream of labelled fields -----*- C++ -*-===//
//
// A plan is written and read as one sequence of fields (PlanEncoder.cpp and
// PlanDecoder.cpp list them, once, in order). Where the fields go is a
// sink's and where they come from a source's business:
//
//   the binary file (.qplan)   fields as little-endian bytes, the labels
//                              unused (PlanFileFormat.h)
//   the text form              one line per run of fields sharing a label,
//                              `label: value value ...`, large blobs as
//                              named resources at the end (PlanText.cpp)
//
// So both forms hold the same fields, and a field added to the plan is added
// in one place. A source checks each field's bounds as it reads it (a count
// cannot exceed what is left, an enum is one it knows); the decoder checks
// what the fields mean.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_PLAN_PLANFIELDS_H
#define QOPT_LIB_PLAN_PLANFIELDS_H

#include "qopt/Plan/Plan.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <cstdint>
#include <string>
#include <vector>

namespace qopt {
namespace rt {
namespace planfile {

/// An enum as fields hold it: what it is ("element kind", for messages) and
/// the spelling of each value in the text form (index = value).
struct EnumNames {
  llvm::StringRef kind;
  llvm::ArrayRef<llvm::StringRef> names;
  size_t size() const { return names.size(); }
  llvm::StringRef operator[](size_t i) const { return names[i]; }
};
EnumNames elementKindNames();
EnumNames layoutNames();
EnumNames stepKindNames();
EnumNames activationNames();
EnumNames attributeTagNames();

/// Where an encoder's fields go.
class FieldSink {
public:
  virtual ~FieldSink();
  virtual void u8(uint8_t v, const char *label) = 0;
  virtual void enumByte(uint8_t v, EnumNames names, const char *label) = 0;
  virtual void i32(int32_t v, const char *label) = 0;
  virtual void u64(uint64_t v, const char *label) = 0;
  virtual void i64(int64_t v, const char *label) = 0;
  virtual void f32(float v, const char *label) = 0;
  virtual void string(llvm::StringRef s, const char *label) = 0;
  virtual void blob(llvm::ArrayRef<uint8_t> bytes, const char *label) = 0;
  virtual void ints(llvm::ArrayRef<int64_t> v, const char *label) = 0;
  virtual void i32s(llvm::ArrayRef<int> v, const char *label) = 0;
  virtual void floats(llvm::ArrayRef<float> v, const char *label) = 0;
  virtual void strings(llvm::ArrayRef<std::string> v, const char *label) = 0;
  /// A record (a tensor, a step) starts: the text form begins a line.
  virtual void beginRecord() {}
  /// A note for readers of the text form (the binary form drops it).
  virtual void note(const llvm::Twine &text) {}

  void flag(bool v, const char *label) { u8(v ? 1 : 0, label); }
  void grid(const QuantizeGrid &g);
  /// A flag labelled `label`, then the grid if there is one.
  void optionalGrid(const std::optional<QuantizeGrid> &g, const char *label);
};

/// Where a decoder's fields come from. The first failure sticks: later
/// reads return zeros, and `reason` says what and where.
class FieldSource {
public:
  virtual ~FieldSource();
  virtual uint8_t u8(const char *what) = 0;
  /// A value of an enum, at most `names.size() - 1`.
  virtual uint8_t enumByte(EnumNames names, const char *what) = 0;
  virtual int32_t i32(const char *what) = 0;
  virtual uint64_t u64(const char *what) = 0;
  virtual int64_t i64(const char *what) = 0;
  virtual float f32(const char *what) = 0;
  virtual std::string string(const char *what) = 0;
  /// A blob's bytes, valid as long as the source.
  virtual llvm::StringRef blob(const char *what) = 0;
  /// A count of records that take at least `minBytes` each in the binary
  /// form; never more than what is left could hold.
  virtual size_t count(size_t minBytes, const char *what) = 0;
  virtual std::vector<int64_t> ints(const char *what) = 0;
  virtual std::vector<int> i32s(const char *what) = 0;
  virtual std::vector<float> floats(const char *what) = 0;
  virtual std::vector<std::string> strings(const char *what) = 0;
  virtual void beginRecord() {}
  /// Where the source is, for messages ("at byte 12", "line 3").
  virtual std::string where() const = 0;

  /// Records the first failure; returns false.
  bool fail(const llvm::Twine &why);
  bool flag(const char *what);
  QuantizeGrid grid();
  /// FieldSink::optionalGrid's fields.
  std::optional<QuantizeGrid> optionalGrid(const char *what);
  template <typename E> E enumValue(EnumNames names, const char *what) {
    return static_cast<E>(enumByte(names, what));
  }

  bool failed = false;
  std::string reason;
};

/// Writes `plan`'s fields. Fails for a plan no reader could load (a float
/// step whose op has no kernel in the registry).
llvm::Error encodePlan(const Plan &plan, FieldSink &out);

/// Reads a plan of format `version` (the fields of that version) for
/// `isa`; null after a failure, which `in` holds. The plan is not
/// verified.
std::unique_ptr<Plan> decodePlan(FieldSource &in, uint32_t version, Isa isa);

} // namespace planfile
} // namespace rt
} // namespace qopt

#endif // QOPT_LIB_PLAN_PLANFIELDS_H
