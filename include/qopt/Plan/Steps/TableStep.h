//===- TableStep.h - An elementwise int8 op as a lookup table ---*- C++ -*-===//
//
// The class of one kind of plan step (qopt/Plan/PlanSteps.def); what it does,
// its fields, checks and work are in lib/Plan/Steps/TableStep.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PLAN_STEPS_TABLE_STEP_H
#define QOPT_PLAN_STEPS_TABLE_STEP_H

#include "qopt/Plan/Plan.h"

namespace qopt {
namespace plan {

/// One operand of a two-operand table read along one axis of the result as
/// it is stored: element i of the result reads element (i / inner) % count
/// of it (a per-channel scale of an NHWC tensor: inner 1, count C).
struct TableBroadcast {
  int operand = -1; ///< 0 or 1; -1: both operands have every element
  int64_t inner = 1, count = 1;
};

/// An elementwise op on one or two int8 operands as a table:
///   y[i] = table[a[i]]  or  table[a[i] * 256 + b[i]]
/// indexed by the bytes as stored (so the table absorbs the NHWC +128) and
/// holding the result as stored (1 byte, or 4 for a float result). The
/// operands have the result's elements, or one of two is read along one
/// axis (Broadcast), in ONNX layout as it is.
class TableStep : public PlanStep {
public:
  using Broadcast = TableBroadcast;
  TableStep(std::string name, int arity, int resultBytes,
            std::vector<uint8_t> table, int64_t elements,
            Broadcast broadcast = Broadcast())
      : PlanStep(Kind::Table, std::move(name)), arity(arity),
        resultBytes(resultBytes), table(std::move(table)), elements(elements),
        broadcast(broadcast) {
    assert((arity == 1 || (arity == 2 && resultBytes == 1)) &&
           this->table.size() == (size_t(1) << (8 * arity)) * resultBytes &&
           "a table of 256^arity results");
    assert((broadcast.operand < 0 || arity == 2) &&
           "a broadcast operand of a two-operand table");
  }
  int64_t getNumTiles() const override;
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  int getArity() const { return arity; }
  int getResultBytes() const { return resultBytes; }
  llvm::ArrayRef<uint8_t> getTable() const { return table; }
  int64_t getNumElements() const { return elements; }
  const Broadcast &getBroadcast() const { return broadcast; }
  /// A two-operand table's arithmetic, when the builder found it gives
  /// every entry: a conv that takes the table in its epilogue computes it
  /// there instead of looking it up. Not part of a plan file.
  const std::optional<kernels::RequantizedAdd> &getArithmetic() const {
    return arithmetic;
  }
  void setArithmetic(const kernels::RequantizedAdd &add) {
    assert(arity == 2 && add.reproduces(table) &&
           "the arithmetic of this two-operand table");
    arithmetic = add;
  }
  llvm::Error writeFields(planfile::PlanEncoder &out) const override;
  llvm::Error verify(const PlanVerifier &check) const override;
  static bool classof(const PlanStep *s) { return s->getKind() == Kind::Table; }

private:
  int arity, resultBytes;
  std::vector<uint8_t> table;
  int64_t elements;
  Broadcast broadcast;
  std::optional<kernels::RequantizedAdd> arithmetic;
};

} // namespace plan
} // namespace qopt

#endif // QOPT_PLAN_STEPS_TABLE_STEP_H
