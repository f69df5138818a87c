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
#include "qopt/Plan/Steps/PoolStep.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <cstdint>
#include <string>
#include <vector>

namespace qopt {
namespace plan {
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
  void grid(const kernels::QuantizeGrid &g);
  /// A flag labelled `label`, then the grid if there is one.
  void optionalGrid(const std::optional<kernels::QuantizeGrid> &g,
                    const char *label);
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
  kernels::QuantizeGrid grid();
  /// FieldSink::optionalGrid's fields.
  std::optional<kernels::QuantizeGrid> optionalGrid(const char *what);
  template <typename E> E enumValue(EnumNames names, const char *what) {
    return static_cast<E>(enumByte(names, what));
  }

  bool failed = false;
  std::string reason;
};

/// Writes a plan's fields in order (PlanEncoder.cpp): the tensors, then
/// each step's common fields and its own (PlanStep::writeFields), for which
/// it offers the groups of fields several kinds of step share.
class PlanEncoder {
public:
  explicit PlanEncoder(FieldSink &out) : out(out) {}

  llvm::Error plan(const Plan &plan);

  void dense(const DenseElements &d);
  void attribute(const Attribute &a);
  void quantType(const QuantType *q);
  /// An int8 conv kernel's geometry, weights (unpacked OIHW) and epilogue.
  void conv(const kernels::Int8Conv &c);
  void window(const PoolStep::Window &w);
  void requantizedAdd(const kernels::RequantizedAdd &add, const char *label);

  FieldSink &out;

private:
  void tensor(const PlanTensor &t, size_t id);
  llvm::Error step(const PlanStep &s);
};

/// Reads a plan's fields in order (PlanDecoder.cpp); each step's own fields
/// are read by its kind's reader (below). After a failure of `in` it only
/// unwinds.
class PlanDecoder {
public:
  PlanDecoder(FieldSource &in, uint32_t version, kernels::Isa isa)
      : in(in), version(version), isa(isa) {}

  std::unique_ptr<Plan> plan();

  /// Records the first failure (FieldSource::fail); returns false.
  bool fail(const llvm::Twine &why) { return in.fail(why); }
  DenseElementsRef dense();
  std::optional<Attribute> attribute();
  const QuantType *quantType(Context &types);
  /// A conv or gemm step's kernel (PlanEncoder::conv's fields, those of
  /// `version`), checked; none after fail().
  std::optional<kernels::Int8Conv> conv(const std::string &name);
  kernels::RequantizedAdd requantizedAdd(const char *what);
  PoolStep::Window window();

  FieldSource &in;
  /// The format version being read: a kind's reader skips fields added
  /// after it.
  const uint32_t version;
  /// The kernels' instruction set in the plan being built.
  const kernels::Isa isa;

private:
  bool tensor(PlanTensor &t);
  std::unique_ptr<PlanStep> step(Plan &plan);
};

/// Each kind's reader: the step's own fields, as its writeFields writes
/// them, into a step named `name` of `plan` (whose types own what the step
/// points to); null after in.fail(). Defined in lib/Plan/Steps/<Class>.cpp.
#define PLAN_STEP(KIND, CLASS, SPELLING, DESCRIPTION, VERSION)                 \
  std::unique_ptr<PlanStep> read##CLASS(PlanDecoder &in, Plan &plan,           \
                                        const std::string &name);
#include "qopt/Plan/PlanSteps.def"

/// Writes `plan`'s fields. Fails for a plan no reader could load (a float
/// step whose op has no kernel in the registry).
llvm::Error encodePlan(const Plan &plan, FieldSink &out);

/// Reads a plan of format `version` (the fields of that version) for
/// `isa`; null after a failure, which `in` holds. The plan is not
/// verified.
std::unique_ptr<Plan> decodePlan(FieldSource &in, uint32_t version,
                                 kernels::Isa isa);

} // namespace planfile
} // namespace plan
} // namespace qopt

#endif // QOPT_LIB_PLAN_PLANFIELDS_H
