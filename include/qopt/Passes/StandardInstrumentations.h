//===- StandardInstrumentations.h - -print-*, -time-passes, ... -*- C++ -*-===//
//
// The instrumentation flags of `opt`, for qopt pipelines:
//   -print-after-all, -print-before=<p>, -print-after=<p>, -print-changed,
//   -time-passes, -verify-each (on by default), -debug-pass-manager,
//   -stop-after=<p>.
// Dumps and logs go to stderr, as in LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PASSES_STANDARDINSTRUMENTATIONS_H
#define QOPT_PASSES_STANDARDINSTRUMENTATIONS_H

#include "qopt/Passes/PassManager.h"

#include "llvm/Support/Timer.h"

#include <map>

namespace qopt {

struct InstrumentationOptions {
  bool printAfterAll = false;
  bool printBeforeAll = false;
  std::vector<std::string> printBefore;
  std::vector<std::string> printAfter;
  bool printChanged = false;
  bool timePasses = false;
  bool verifyEach = true;
  bool debugPassManager = false;
  std::string stopAfter;
};

class StandardInstrumentations {
public:
  StandardInstrumentations(InstrumentationOptions options,
                           llvm::raw_ostream &os = llvm::errs());
  ~StandardInstrumentations();
  void registerCallbacks(PassInstrumentation &pi);
  /// Prints the -time-passes table (also done on destruction).
  void printTimeReport();
  /// Whether -stop-after named a pass that ran.
  bool stopAfterReached() const { return stopped; }

private:
  void dump(llvm::StringRef banner, llvm::StringRef pass, const Graph &g);

  InstrumentationOptions options;
  llvm::raw_ostream &os;
  bool stopped = false;
  std::vector<std::string> changedBefore; // stack for nested pipelines
  std::unique_ptr<llvm::TimerGroup> timers;
  std::map<std::string, std::unique_ptr<llvm::Timer>> passTimers;
  std::vector<llvm::Timer *> running;
  bool reported = false;
  bool printedStart = false;

public:
  /// After a failed pipeline only the error is printed.
  void discardTimeReport() { suppressReport = true; }

private:
  bool suppressReport = false;
};

} // namespace qopt

#endif // QOPT_PASSES_STANDARDINSTRUMENTATIONS_H
