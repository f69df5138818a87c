//===- StandardInstrumentations.cpp - -print-*, -time-passes, ... ---------===//

#include "qopt/Passes/StandardInstrumentations.h"
#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/Verifier.h"
#include "qopt/Support/Error.h"

#include <algorithm>

using namespace qopt;

static std::string printToString(const Graph &g) {
  std::string s;
  llvm::raw_string_ostream os(s);
  PrintOptions opts;
  opts.elideResourceData = true;
  printGraph(g, os, opts);
  return os.str();
}

StandardInstrumentations::StandardInstrumentations(
    InstrumentationOptions options, llvm::raw_ostream &os)
    : options(std::move(options)), os(os) {
  if (this->options.timePasses)
    timers = std::make_unique<llvm::TimerGroup>(
        "pass", "... Pass execution timing report ...");
}

StandardInstrumentations::~StandardInstrumentations() { printTimeReport(); }

void StandardInstrumentations::printTimeReport() {
  if (!timers || reported || suppressReport)
    return;
  reported = true;
  timers->print(os, /*ResetAfterPrint=*/true);
}

void StandardInstrumentations::dump(llvm::StringRef banner,
                                    llvm::StringRef pass, const Graph &g) {
  os << "// *** IR Dump " << banner << " " << pass << " on @"
     << toPrintableLine(g.getName()) << " ***\n"
     << printToString(g);
}

void StandardInstrumentations::registerCallbacks(PassInstrumentation &pi) {
  auto listed = [](const std::vector<std::string> &names, llvm::StringRef p) {
    return std::find(names.begin(), names.end(), p.str()) != names.end();
  };

  pi.registerBeforePass([this, listed](llvm::StringRef pass, const Graph &g) {
    if (stopped) {
      if (options.debugPassManager)
        os << "Skipping pass: " << pass << " on @"
           << toPrintableLine(g.getName()) << "\n";
      return false;
    }
    if (options.debugPassManager)
      os << "Running pass: " << pass << " on @" << toPrintableLine(g.getName())
         << "\n";
    if (options.printBeforeAll || listed(options.printBefore, pass))
      dump("Before", pass, g);
    if (options.printChanged) {
      changedBefore.push_back(printToString(g));
      if (!printedStart) { // LLVM prints the starting IR once
        printedStart = true;
        os << "// *** IR Dump At Start ***\n" << changedBefore.back();
      }
    }
    if (timers) {
      auto &t = passTimers[pass.str()];
      if (!t)
        t = std::make_unique<llvm::Timer>(pass, pass, *timers);
      t->startTimer();
      running.push_back(t.get());
    }
    return true;
  });

  pi.registerAfterPass([this, listed, &pi](llvm::StringRef pass, const Graph &g,
                                           const PreservedAnalyses &) {
    if (timers && !running.empty()) {
      running.back()->stopTimer();
      running.pop_back();
    }
    if (options.printAfterAll || listed(options.printAfter, pass))
      dump("After", pass, g);
    if (options.printChanged && !changedBefore.empty()) {
      std::string before = std::move(changedBefore.back());
      changedBefore.pop_back();
      std::string after = printToString(g);
      if (after == before)
        os << "// *** IR Dump After " << pass << " on @"
           << toPrintableLine(g.getName())
           << " omitted because no change ***\n";
      else
        os << "// *** IR Dump After " << pass << " on @"
           << toPrintableLine(g.getName()) << " ***\n"
           << after;
    }
    if (options.verifyEach) {
      if (llvm::Error err = verifyGraph(g))
        pi.reportError(makeError("pass '" + pass + "' produced invalid IR: " +
                                 llvm::toString(std::move(err))));
    }
    if (!options.stopAfter.empty() && pass == options.stopAfter)
      stopped = true;
  });

  if (options.debugPassManager) {
    pi.registerBeforeAnalysis([this](llvm::StringRef a, const Graph &g) {
      os << "Running analysis: " << a << " on @" << toPrintableLine(g.getName())
         << "\n";
    });
    pi.registerAnalysisInvalidated([this](llvm::StringRef a, const Graph &g) {
      os << "Invalidating analysis: " << a << " on @"
         << toPrintableLine(g.getName()) << "\n";
    });
  }
}
