//===- TableStep.cpp - Elementwise int8 ops as tables ---------------------===//
//
// An elementwise op on one or two int8 operands as a lookup table of the
// stored bytes (or, for a requantized Add, its arithmetic).
//
// The kind's row is in qopt/Plan/PlanSteps.def; this file has what it
// does, its fields in a plan file, what its kernel relies on and its work.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/Steps/TableStep.h"

#include "PlanFields.h"
#include "PlanVerifier.h"
#include "qopt/Kernels/ByteTable.h"
#include "qopt/Support/Error.h"

#include <cstring>

#include <emmintrin.h> // SSE2, every x86-64 CPU

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;
using namespace qopt::plan::planfile;

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

/// Elements per tile: large enough to amortize a task, small enough to
/// spread a 56x56x64 tensor over several threads.
static constexpr int64_t kTableTileElements = 16384;

int64_t TableStep::getNumTiles() const {
  return (elements + kTableTileElements - 1) / kTableTileElements;
}

llvm::Error TableStep::run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                           void * /*scratch*/) const {
  int64_t begin = tileBegin * kTableTileElements;
  int64_t end = std::min(elements, tileEnd * kTableTileElements);
  const uint8_t *a = reinterpret_cast<const uint8_t *>(run.read(inputs[0]));
  char *y = run.write(outputs[0]);
  if (arity == 1 && resultBytes == 1) {
    lookupBytes(run.getPlan().isa, table.data(), a + begin, end - begin,
                reinterpret_cast<uint8_t *>(y) + begin);
  } else if (arity == 1 && resultBytes == 4) {
    // Dequantize to f32: a constant size, so each copy is one move.
    for (int64_t i = begin; i < end; ++i)
      std::memcpy(y + i * 4, &table[a[i] * 4], 4);
  } else if (arity == 1) {
    for (int64_t i = begin; i < end; ++i)
      std::memcpy(y + i * resultBytes, &table[a[i] * resultBytes], resultBytes);
  } else if (broadcast.operand < 0) {
    const uint8_t *b = reinterpret_cast<const uint8_t *>(run.read(inputs[1]));
    for (int64_t i = begin; i < end; ++i)
      y[i] = static_cast<char>(table[a[i] << 8 | b[i]]);
  } else if (begin < end) {
    // One operand has every element; the other's element moves every
    // `inner` elements and wraps after `count`.
    const uint8_t *full = reinterpret_cast<const uint8_t *>(
        run.read(inputs[1 - broadcast.operand]));
    const uint8_t *along =
        reinterpret_cast<const uint8_t *>(run.read(inputs[broadcast.operand]));
    int fullShift = broadcast.operand == 1 ? 8 : 0;
    int alongShift = 8 - fullShift;
    int64_t j = (begin / broadcast.inner) % broadcast.count;
    int64_t k = begin % broadcast.inner;
    for (int64_t i = begin; i < end; ++i) {
      y[i] = static_cast<char>(
          table[full[i] << fullShift | along[j] << alongShift]);
      if (++k == broadcast.inner) {
        k = 0;
        if (++j == broadcast.count)
          j = 0;
      }
    }
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Fields, checks, work
//===----------------------------------------------------------------------===//

llvm::Error TableStep::writeFields(planfile::PlanEncoder &encoder) const {
  FieldSink &out = encoder.out;
  out.u8(getArity(), "table");
  out.u8(getResultBytes(), "table");
  out.i64(getNumElements(), "table");
  out.blob(getTable(), "table entries");
  const Broadcast &b = getBroadcast();
  out.i32(b.operand, "table broadcast");
  out.i64(b.inner, "table broadcast");
  out.i64(b.count, "table broadcast");
  out.flag(getArithmetic().has_value(), "table arithmetic");
  if (const auto &add = getArithmetic())
    encoder.requantizedAdd(*add, "table arithmetic");
  return llvm::Error::success();
}

std::unique_ptr<PlanStep> planfile::readTableStep(PlanDecoder &decoder, Plan &,
                                                  const std::string &name) {
  FieldSource &in = decoder.in;
  uint8_t arity = in.u8("table"), resultBytes = in.u8("table");
  int64_t elements = in.i64("table");
  llvm::StringRef table = in.blob("table entries");
  TableStep::Broadcast broadcast;
  if (decoder.version >= 3) {
    broadcast.operand = in.i32("table broadcast");
    broadcast.inner = in.i64("table broadcast");
    broadcast.count = in.i64("table broadcast");
  }
  std::optional<RequantizedAdd> arithmetic;
  if (decoder.version >= 7 && in.flag("table arithmetic"))
    arithmetic = decoder.requantizedAdd("table arithmetic");
  if (in.failed)
    return nullptr;
  if (!(arity == 1 || (arity == 2 && resultBytes == 1)) ||
      (resultBytes != 1 && resultBytes != 4) || elements < 0 ||
      table.size() != (size_t(1) << (8 * arity)) * resultBytes) {
    in.fail("table '" + name + "' is not 256^arity results of 1 or 4 bytes");
    return nullptr;
  }
  if (broadcast.operand < -1 || broadcast.operand > 1 ||
      (broadcast.operand >= 0 && arity != 2)) {
    in.fail("table '" + name + "' broadcasts an operand it does not have");
    return nullptr;
  }
  auto t = std::make_unique<TableStep>(
      name, arity, resultBytes,
      std::vector<uint8_t>(table.bytes_begin(), table.bytes_end()), elements,
      broadcast);
  if (arithmetic) {
    // The arithmetic runs instead of the table: it must give its bytes.
    if (arity != 2 || resultBytes != 1 || broadcast.operand >= 0 ||
        !arithmetic->reproduces(t->getTable())) {
      in.fail("table '" + name + "': its arithmetic does not give its table");
      return nullptr;
    }
    t->setArithmetic(*arithmetic);
  }
  return t;
}

llvm::Error TableStep::verify(const PlanVerifier &check) const {
  const TableStep &step = *this;
  const Plan &plan = check.getPlan();
  if (auto err = check.checkOperands(step, step.getArity(), 1))
    return err;
  const TableStep::Broadcast &b = step.getBroadcast();
  if (b.operand >= 0 && (b.operand >= step.getArity() || b.inner < 1 ||
                         b.count < 1 || b.inner > PlanVerifier::kMaxGeometry ||
                         b.count > PlanVerifier::kMaxGeometry))
    return makeError("broadcasts operand " + llvm::Twine(b.operand) +
                     " every " + llvm::Twine(b.inner) + " elements over " +
                     llvm::Twine(b.count));
  for (int k = 0; k < step.getArity(); ++k) {
    const PlanTensor &t = plan.tensors[step.inputs[k]];
    int64_t wanted = k == b.operand ? b.count : step.getNumElements();
    if (getElementByteSize(t.kind) != 1 || t.numElements() != wanted)
      return makeError("operand '" + t.name + "' is not " +
                       llvm::Twine(wanted) + " bytes");
  }
  const PlanTensor &y = plan.tensors[step.outputs[0]];
  if (y.numElements() != step.getNumElements() ||
      int(getElementByteSize(y.kind)) != step.getResultBytes())
    return makeError("result '" + y.name + "' is not " +
                     llvm::Twine(step.getNumElements()) + " elements of " +
                     llvm::Twine(step.getResultBytes()) + " bytes");
  return llvm::Error::success();
}
