//===- FusionReport.h - Fusion plans as HTML, SVG and JSON ------*- C++ -*-===//
//
// `qopt --report=FILE.html|.svg|.json`: the fusion plan drawn and tabulated.
// A report holds one section per plan (the input model, and with -passes the
// result too). Each section is captured while its graph is as it was, since
// a pipeline rewrites the graph afterwards:
//   - json: the plan in the documented schema (docs/report-schema.md);
//   - dot: the graph for graphviz, nodes coloured by precision, units as
//     boxes (clusters), leftovers marked with their reason, long chains of
//     single-input single-output nodes collapsed.
// The picture is drawn by graphviz `dot`, found at run time (QOPT_DOT names
// another binary). Without it the HTML says how to get it and still holds
// the tables; an .svg report is then an error.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_TOOLSUPPORT_FUSIONREPORT_H
#define QOPT_TOOLSUPPORT_FUSIONREPORT_H

#include "qopt/Fusion/FusionPlan.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace qopt {

struct ReportOptions {
  /// Runs of more single-input single-output nodes than this (none of them
  /// a leftover) are drawn as their two ends and one summary node.
  unsigned collapseChainsLongerThan = 8;
};

/// One plan of a report.
struct ReportSection {
  /// "input model", "after -passes='default<trt>'".
  std::string label;
  /// Prefix of the section's DOM ids ("before", "after", "plan").
  std::string idPrefix;
  llvm::json::Value json = nullptr;
  std::string dot;
};

/// One plan in the JSON schema (docs/report-schema.md): summary, units,
/// leftovers, hints; `label` names it.
llvm::json::Value fusionPlanJson(const FusionPlan &plan, llvm::StringRef label);

ReportSection captureReportSection(const FusionPlan &plan, const Graph &graph,
                                   llvm::StringRef label,
                                   llvm::StringRef idPrefix,
                                   const ReportOptions &options = {});

/// The report for `path`; the format comes from the extension: .html, .svg
/// (the sections' pictures, side by side) or .json.
llvm::Expected<std::string>
renderFusionReport(llvm::StringRef path, llvm::StringRef model,
                   const BackendRules &rules,
                   llvm::ArrayRef<ReportSection> sections);

/// Every report of `paths`, rendered first, then written together
/// (writeFilesAtomically): one that cannot be made or written leaves none.
/// An error names its file in its location, not in its text.
llvm::Error writeFusionReports(llvm::ArrayRef<std::string> paths,
                               llvm::StringRef model, const BackendRules &rules,
                               llvm::ArrayRef<ReportSection> sections);

} // namespace qopt

#endif // QOPT_TOOLSUPPORT_FUSIONREPORT_H
