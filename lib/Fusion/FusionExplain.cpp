//===- FusionExplain.cpp - Printing a fusion plan for people
//---------------===//
//
// Two views of a FusionPlan: the analysis printer (every unit with its
// members and grids, every leftover on one line) and the explanation of
// `qopt --explain` (every leftover with its reason and fix, then the
// summary; with a pipeline, what it changed).
//
//===----------------------------------------------------------------------===//

#include "FusionPlanner.h"

#include "qopt/Fusion/FusionPlan.h"
#include "qopt/IR/Graph.h"
#include "qopt/Passes/QdqUtils.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/FloatFormat.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"

using namespace qopt;

std::string qopt::leftoverKey(const Leftover &l) {
  std::string s = getLeftoverKindName(l.kind).str() + ": ";
  for (size_t i = 0; i < l.nodes.size(); ++i)
    s += (i ? " -> " : "") + planNodeName(*l.nodes[i]);
  return s;
}

std::string qopt::leftoverIdentity(const Leftover &l) {
  auto isQdq = [](const Node *n) { return fusion::isQdqOp(*n); };
  bool named = llvm::all_of(l.nodes, isQdq);
  std::string s = getLeftoverKindName(l.kind).str() + ": ";
  for (size_t i = 0; i < l.nodes.size(); ++i)
    s += (i ? " -> " : "") + (named || !isQdq(l.nodes[i])
                                  ? planNodeName(*l.nodes[i])
                                  : "<" + l.nodes[i]->getOpType().str() + ">");
  return s;
}

std::string qopt::planNodeName(const Node &n) {
  if (!n.getName().empty())
    return n.getName().str();
  return n.getNumResults() ? n.getResult(0)->getName().str()
                           : n.getOpType().str();
}

namespace {

std::string nodeName(const Node &n) { return planNodeName(n); }

std::string nodeList(llvm::ArrayRef<const Node *> nodes, llvm::StringRef sep) {
  std::string s;
  for (const Node *n : nodes)
    s += (s.empty() ? "" : sep.str()) + nodeName(*n);
  return s;
}

/// For the text explanation: a long list keeps its first 12 and last 4
/// names ("a -> ... -> l -> [99984 more] -> w -> ... -> z").
std::string shortNodeList(llvm::ArrayRef<const Node *> nodes,
                          llvm::StringRef sep) {
  constexpr size_t head = 12, tail = 4;
  if (nodes.size() <= head + tail + 1)
    return nodeList(nodes, sep);
  return nodeList(nodes.take_front(head), sep) + sep.str() + "[" +
         std::to_string(nodes.size() - head - tail) + " more]" + sep.str() +
         nodeList(nodes.take_back(tail), sep);
}

std::string portText(const FusionUnit::Port &p) {
  std::string s = p.value->getName().str() + ": ";
  if (!p.grid)
    return s + "float";
  const QuantType *q = p.grid;
  s += getElementKindName(q->getStorageKind()).str() + " ";
  if (q->isPerAxis())
    return s + "per-axis " + std::to_string(q->getAxis());
  s += formatFloat(q->getScale());
  if (q->getZeroPoint())
    s += ":" + std::to_string(q->getZeroPoint());
  return s;
}

void printPorts(llvm::ArrayRef<FusionUnit::Port> ports, llvm::raw_ostream &os) {
  bool first = true;
  for (const FusionUnit::Port &p : ports) {
    os << (first ? "" : ", ") << toPrintableLine(portText(p));
    first = false;
  }
}

std::string macText(int64_t macs) {
  char buf[32];
  if (macs >= 1000000000)
    snprintf(buf, sizeof buf, "%.2f GMAC", macs / 1e9);
  else if (macs >= 1000000)
    snprintf(buf, sizeof buf, "%.1f MMAC", macs / 1e6);
  else
    snprintf(buf, sizeof buf, "%lld MAC", static_cast<long long>(macs));
  return buf;
}

void printSummaryLine(const FusionPlan::Summary &s, llvm::raw_ostream &os) {
  os << "INT8 MACs ";
  if (s.totalMacs)
    os << llvm::format("%.1f%%", 100.0 * s.int8Macs / s.totalMacs) << " ("
       << macText(s.int8Macs) << " of " << macText(s.totalMacs) << ")";
  else
    os << "n/a (no weighted ops)";
  if (s.fp8Macs)
    os << ", FP8 MACs "
       << llvm::format("%.1f%%", 100.0 * s.fp8Macs / s.totalMacs) << " ("
       << macText(s.fp8Macs) << ")";
  if (s.int4WeightOnlyMacs)
    os << ", INT4 weight-only MACs "
       << llvm::format("%.1f%%", 100.0 * s.int4WeightOnlyMacs / s.totalMacs)
       << " (" << macText(s.int4WeightOnlyMacs) << ")";
  if (s.fp4WeightOnlyMacs)
    os << ", FP4 weight-only MACs "
       << llvm::format("%.1f%%", 100.0 * s.fp4WeightOnlyMacs / s.totalMacs)
       << " (" << macText(s.fp4WeightOnlyMacs) << ")";
  os << ", " << s.units << (s.units == 1 ? " unit" : " units") << " + "
     << s.copies << " int8 copies, " << s.requantizes
     << (s.requantizes == 1 ? " requantize, " : " requantizes, ") << s.reformats
     << (s.reformats == 1 ? " reformat, " : " reformats, ") << s.floatOps
     << " float compute ops in " << s.floatIslands
     << (s.floatIslands == 1 ? " island, " : " islands, ") << s.unfusedQdq
     << " unfused Q/DQ\n";
}

} // namespace

void FusionPlan::print(llvm::raw_ostream &os) const {
  os << "fusion plan for " << rules->title << ": " << units.size() << " units, "
     << leftovers.size() << " leftovers\n";
  for (const FusionUnit &u : units) {
    os << "  unit #" << u.id << " " << u.kind << ": ";
    std::vector<const Node *> members(u.members.begin(), u.members.end());
    os << toPrintableLine(nodeList(members, " + "), 1 << 16) << "  in(";
    printPorts(u.inputs, os);
    os << ") out(";
    printPorts(u.outputs, os);
    os << ")\n";
  }
  for (const Leftover &l : leftovers)
    os << "  leftover " << getLeftoverKindName(l.kind) << ": "
       << toPrintableLine(nodeList(l.nodes, " -> "), 1 << 16) << "\n";
  os << "  summary: ";
  printSummaryLine(summarize(), os);
}

/// Activation grids (per tensor, of a Q of a non-constant or a requantize)
/// the backend cannot take for being asymmetric, where it takes symmetric
/// i8 only.
static unsigned countAsymmetricActivations(const Graph &graph,
                                           const BackendRules &rules) {
  if (!rules.activationZeroPointZero)
    return 0;
  unsigned count = 0;
  for (const Node &n : graph.getNodes()) {
    if (!(n.isa(ops::QQuantize) || n.isa(ops::QRequantize)) ||
        isMinifloatQdq(n) || getConstantData(n.getOperand(0)))
      continue;
    const QuantType *q = n.getResult()->getType()->getQuantType();
    if (q && !q->isPerAxis() &&
        (q->getZeroPoint() != 0 ||
         !(typeSetOf(q->getStorageKind()) & rules.activationStorage)))
      ++count;
  }
  return count;
}

void qopt::printExplanation(const FusionPlan &plan, const Graph &graph,
                            llvm::raw_ostream &os) {
  const BackendRules &rules = *plan.rules;
  // Names and reasons quote the model, which may hold line breaks or
  // escape sequences: each goes out as one printable line.
  auto text = [](llvm::StringRef s) { return toPrintableLine(s, 4096); };
  os << "explain<" << rules.name << ">: graph @" << text(graph.getName())
     << ", " << plan.leftovers.size()
     << (plan.leftovers.size() == 1 ? " leftover" : " leftovers") << " under "
     << rules.titleWithVersion() << " rules (" << rules.documentation << ")\n";
  for (const std::string &problem : plan.importProblems)
    os << "error: " << problem << " (" << rules.versionSource << ")\n";
  if (unsigned n = countAsymmetricActivations(graph, rules))
    os << "note: " << n << " activation grid" << (n == 1 ? " is" : "s are")
       << " asymmetric (u8, or a zero point other than 0, as PyTorch's "
          "torch.ao and ONNX Runtime's quantizer write them); "
       << rules.title << " takes symmetric i8 only: qopt "
       << "-passes='symmetrize-activations' moves them to the symmetric grid "
          "of the same range (lossy, reported)\n";
  unsigned index = 0;
  for (const Leftover &l : plan.leftovers) {
    os << "[" << ++index << "] " << getLeftoverKindName(l.kind) << ": "
       << text(shortNodeList(l.nodes, " -> ")) << "\n";
    os << "    reason: " << text(l.reason) << "\n";
    if (!l.fixPipeline.empty())
      os << "    fix: qopt -passes='" << l.fixPipeline << "'\n";
    if (!l.fixInModel.empty())
      os << (l.fixPipeline.empty() ? "    fix: " : "         ")
         << "in the model: " << text(l.fixInModel) << "\n";
    if (l.fixPipeline.empty() && l.fixInModel.empty())
      os << "    fix: none known\n";
  }
  for (const Leftover &h : plan.hints) {
    os << "[" << ++index << "] hint: " << text(nodeList(h.nodes, " -> "))
       << "\n";
    os << "    " << text(h.reason) << "\n";
    if (!h.fixPipeline.empty())
      os << "    fix: qopt -passes='" << h.fixPipeline << "' where the chain "
         << "ends in a residual Add\n";
    os << (h.fixPipeline.empty() ? "    fix: " : "         ")
       << "in the model: " << text(h.fixInModel) << "\n";
  }
  os << "summary: ";
  printSummaryLine(plan.summarize(), os);
}

PlanSnapshot qopt::snapshotPlan(const FusionPlan &plan) {
  PlanSnapshot s;
  s.summary = plan.summarize();
  for (const Leftover &l : plan.leftovers)
    s.leftovers.push_back(leftoverKey(l));
  return s;
}

void qopt::printPlanChanges(const PlanSnapshot &before, const FusionPlan &after,
                            llvm::StringRef pipeline, llvm::raw_ostream &os) {
  FusionPlan::Summary b = before.summary, a = after.summarize();
  os << "changed by -passes='" << pipeline << "':\n";
  auto row = [&](llvm::StringRef what, int64_t x, int64_t y) {
    os << "  " << what << ": " << x << " -> " << y << "\n";
  };
  if (b.totalMacs && a.totalMacs)
    os << "  INT8 MACs: "
       << llvm::format("%.1f%% -> %.1f%%\n", 100.0 * b.int8Macs / b.totalMacs,
                       100.0 * a.int8Macs / a.totalMacs);
  row("units", b.units, a.units);
  row("requantizes", b.requantizes, a.requantizes);
  row("reformats", b.reformats, a.reformats);
  row("float ops", b.floatOps, a.floatOps);
  row("unfused Q/DQ", b.unfusedQdq, a.unfusedQdq);
  llvm::StringMap<bool> remaining;
  for (const Leftover &l : after.leftovers)
    remaining[leftoverKey(l)] = true;
  unsigned gone = 0;
  for (const std::string &key : before.leftovers)
    if (!remaining.count(key)) {
      if (!gone++)
        os << "  gone:\n";
      os << "    " << toPrintableLine(key, 4096) << "\n";
    }
}
