//===- CostReport.cpp - What lossy passes cost ----------------------------===//

#include "qopt/Passes/CostReport.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Support/Error.h"

#include "llvm/Support/Format.h"

#include <map>

using namespace qopt;

void CostReport::recordRegrid(llvm::StringRef pass, const Value &v,
                              const QuantType *before, const QuantType *after,
                              llvm::StringRef detail) {
  if (before == after)
    return;
  Entry e;
  e.pass = pass.str();
  e.tensor = v.getName().str();
  e.before = before;
  e.after = after;
  e.maxErrorLsb = before && after ? quant::maxRegridErrorLsb(before, after) : 0;
  e.detail = detail.str();
  entries.push_back(std::move(e));
}

void CostReport::recordNote(llvm::StringRef pass, llvm::StringRef text) {
  Entry e;
  e.pass = pass.str();
  e.detail = text.str();
  entries.push_back(std::move(e));
}

size_t CostReport::count(llvm::StringRef pass) const {
  return llvm::count_if(entries,
                        [&](const Entry &e) { return e.pass == pass; });
}

/// A note quotes the model's names: one printable line each, whatever they
/// hold (an escape sequence, a line break).
static constexpr size_t kDetailLimit = 16384;

void CostReport::print(llvm::raw_ostream &os) const {
  if (entries.empty())
    return;
  os << "cost of lossy rewrites:\n";
  struct Total {
    size_t regrids = 0, notes = 0;
    double worst = 0;
  };
  std::map<std::string, Total> totals;
  std::vector<std::string> order;
  for (const Entry &e : entries) {
    if (!totals.count(e.pass))
      order.push_back(e.pass);
    Total &t = totals[e.pass];
    if (!e.before) {
      ++t.notes;
      os << "  " << e.pass << ": " << toPrintableLine(e.detail, kDetailLimit)
         << "\n";
      continue;
    }
    ++t.regrids;
    t.worst = std::max(t.worst, e.maxErrorLsb);
    os << "  " << e.pass << ": %" << toPrintableLine(e.tensor) << ": "
       << quant::describeParams(e.before) << " -> "
       << quant::describeParams(e.after) << ", max error "
       << llvm::format("%.3g", e.maxErrorLsb) << " LSB";
    if (!e.detail.empty())
      os << " (" << toPrintableLine(e.detail, kDetailLimit) << ")";
    os << "\n";
  }
  for (const std::string &pass : order) {
    const Total &t = totals[pass];
    os << "  total " << pass << ": " << t.regrids << " tensor"
       << (t.regrids == 1 ? "" : "s") << " regridded";
    if (t.regrids)
      os << ", worst " << llvm::format("%.3g", t.worst) << " LSB";
    if (t.notes)
      os << ", " << t.notes << " other change" << (t.notes == 1 ? "" : "s");
    os << "\n";
  }
}
