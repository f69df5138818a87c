//===- CostReport.h - What lossy passes cost, in one place ------*- C++ -*-===//
//
// Every lossy pass records what it changed here, through the analysis
// manager it runs with:
//
//   am.getCostReport().recordRegrid("unify-scales", *value, oldQ, newQ,
//                                   "Concat 'cat' input 2");
//   am.getCostReport().recordNote("unify-scales", "fixpoint bound hit");
//
// A regrid entry carries the tensor, its old and new parameters and the
// largest error moving a value stored on the old grid onto the new one
// causes, in LSB of the old grid (quant::maxRegridErrorLsb: rounding and
// clipping). The driver prints one summary after the pipeline; qopt
// -measure-cost adds the measured output deviation.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PASSES_COSTREPORT_H
#define QOPT_PASSES_COSTREPORT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace qopt {

class QuantType;
class Value;

class CostReport {
public:
  struct Entry {
    std::string pass;
    /// The tensor whose grid changed (empty for notes).
    std::string tensor;
    /// Null for notes.
    const QuantType *before = nullptr;
    const QuantType *after = nullptr;
    double maxErrorLsb = 0;
    /// Why, or where ("Concat 'cat' input 2"); the whole text for notes.
    std::string detail;
  };

  /// `v` moved from grid `before` to `after` (a no-op when they are equal).
  void recordRegrid(llvm::StringRef pass, const Value &v,
                    const QuantType *before, const QuantType *after,
                    llvm::StringRef detail = {});
  /// A cost that is not a grid change (a Relu folded into a Q's range, a
  /// fixpoint bound hit).
  void recordNote(llvm::StringRef pass, llvm::StringRef text);

  bool empty() const { return entries.empty(); }
  llvm::ArrayRef<Entry> getEntries() const { return entries; }
  /// Entries recorded by `pass`.
  size_t count(llvm::StringRef pass) const;
  void clear() { entries.clear(); }

  /// One line per entry, then the total per pass and the worst error.
  void print(llvm::raw_ostream &os) const;

private:
  std::vector<Entry> entries;
};

} // namespace qopt

#endif // QOPT_PASSES_COSTREPORT_H
