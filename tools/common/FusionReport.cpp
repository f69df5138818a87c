//===- FusionReport.cpp - Fusion plans as HTML, SVG and JSON --------------===//
//
// captureReportSection turns a plan into its JSON (docs/report-schema.md)
// and its graphviz source; writeFusionReport runs `dot` and writes the
// self-contained page (inline SVG, style and script: nothing is fetched),
// the picture alone, or the JSON.
//
//===----------------------------------------------------------------------===//

#include "qopt/ToolSupport/FusionReport.h"
#include "qopt/IR/Graph.h"
#include "qopt/Passes/QdqUtils.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/FileOutput.h"
#include "qopt/Support/FloatFormat.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

using namespace qopt;
namespace json = llvm::json;

namespace {

std::string nodeName(const Node &n) { return planNodeName(n); }

json::Value gridJson(const QuantType *q) {
  if (!q)
    return nullptr;
  json::Array scales, zps;
  for (float s : q->getScales())
    scales.push_back(double(s));
  for (int64_t z : q->getZeroPoints())
    zps.push_back(z);
  return json::Object{
      {"storage", getElementKindName(q->getStorageKind()).str()},
      {"scales", std::move(scales)},
      {"zero_points", std::move(zps)},
      {"axis", q->isPerAxis() ? json::Value(q->getAxis()) : nullptr}};
}

json::Array portsJson(llvm::ArrayRef<FusionUnit::Port> ports) {
  json::Array a;
  for (const FusionUnit::Port &p : ports)
    a.push_back(json::Object{{"value", p.value->getName().str()},
                             {"grid", gridJson(p.grid)}});
  return a;
}

json::Object leftoverJson(const Leftover &l) {
  json::Array nodes, ops;
  for (const Node *n : l.nodes) {
    nodes.push_back(nodeName(*n));
    ops.push_back(n->getOpType().str());
  }
  return json::Object{{"kind", getLeftoverKindName(l.kind).str()},
                      {"nodes", std::move(nodes)},
                      {"ops", std::move(ops)},
                      {"reason", l.reason},
                      {"fix_pipeline", l.fixPipeline},
                      {"fix_in_model", l.fixInModel},
                      {"float_macs", l.floatMacs}};
}

/// `s` inside a graphviz string: valid UTF-8 (a byte that is not becomes
/// U+FFFD), control bytes written out (toPrintableLine), at most `limit`
/// bytes of the name (cut in its middle), quotes and backslashes escaped,
/// and the noncharacters U+FFFE and U+FFFF, which XML does not allow and
/// dot copies into the SVG, made U+FFFD. Names come from the model file and
/// may hold anything.
std::string dotEscape(llvm::StringRef s, size_t limit = 2048) {
  std::string text = json::fixUTF8(toPrintableLine(s, limit));
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    // UTF-8 of U+FFFE and U+FFFF: EF BF BE, EF BF BF.
    if (c == '\xEF' && i + 2 < text.size() && text[i + 1] == '\xBF' &&
        (text[i + 2] == '\xBE' || text[i + 2] == '\xBF')) {
      out += "\xEF\xBF\xBD";
      i += 2;
      continue;
    }
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out;
}

/// Fill colour of a unit member, by the unit's kind.
const char *unitColour(llvm::StringRef kind) {
  if (kind == "conv" || kind == "conv_transpose" || kind == "gemm" ||
      kind == "matmul")
    return "#8ecae6";
  if (kind == "add" || kind == "sub" || kind == "mul")
    return "#cdb4db";
  if (kind == "copy" || kind == "concat")
    return "#d9d9d9";
  return "#b7e4c7"; // pool, activation, silu, softmax, resize, reduce
}

const char *leftoverColour(LeftoverKind k) {
  switch (k) {
  case LeftoverKind::Requantize:
    return "#e63946";
  case LeftoverKind::Reformat:
    return "#fb8500";
  case LeftoverKind::FloatIsland:
    return "#ffb703";
  case LeftoverKind::UnfusedQuantize:
  case LeftoverKind::UnfusedDequantize:
    return "#ffd166";
  }
  return "#ffffff";
}

/// The last 28 bytes of a node name for a box's label, not starting inside
/// a UTF-8 sequence (the tooltip has the whole name).
std::string labelTail(llvm::StringRef name) {
  llvm::StringRef tail = name.take_back(28);
  while (!tail.empty() &&
         (static_cast<unsigned char>(tail.front()) & 0xc0) == 0x80)
    tail = tail.drop_front();
  return tail.str();
}

/// The graphviz source of a plan. Each unit is one box (its members and
/// absorbed Q/DQ inside); Q/DQ and ops outside units are nodes of their own,
/// coloured by what they are; leftover nodes carry their reason.
std::string planDot(const FusionPlan &plan, const Graph &graph,
                    llvm::StringRef prefix, const ReportOptions &options) {
  struct Box {
    std::string id, label, colour, cls, tooltip;
    bool qdq = false;
  };
  std::vector<Box> boxes;
  llvm::DenseMap<const Node *, unsigned> boxOf;
  llvm::DenseMap<const Node *, const Leftover *> leftoverOf;
  for (const Leftover &l : plan.leftovers)
    for (const Node *n : l.nodes)
      leftoverOf.try_emplace(n, &l);
  llvm::DenseMap<unsigned, unsigned> unitBox;
  unsigned index = 0;
  for (const Node &n : graph.getNodes()) {
    if (n.isa(ops::Constant))
      continue;
    unsigned i = index++;
    // Weight quantizers (computed from constants alone) are not drawn.
    if (!leftoverOf.count(&n) && !plan.unitOf.count(&n) &&
        llvm::all_of(n.getOperands(), [](const Value *v) {
          return !v || isConstantValue(v) ||
                 (v->getDefiningNode() &&
                  v->getDefiningNode()->isa(ops::QQuantize) &&
                  isConstantValue(v->getDefiningNode()->getOperand(0)));
        }))
      continue;
    bool qdq = n.isa(ops::QQuantize) || n.isa(ops::QDequantize) ||
               n.isa(ops::QRequantize);
    auto l = leftoverOf.find(&n);
    auto u = plan.unitOf.find(&n);
    if (l == leftoverOf.end() && u != plan.unitOf.end()) {
      auto [it, inserted] = unitBox.try_emplace(u->second, boxes.size());
      if (inserted) {
        const FusionUnit &unit = plan.units[u->second];
        Box b;
        b.id = prefix.str() + "_u" + std::to_string(unit.id);
        b.cls = "unit kind-" + unit.kind;
        b.colour = unitColour(unit.kind);
        b.label = "#" + std::to_string(unit.id) + " " + unit.kind + "\\n" +
                  dotEscape(labelTail(nodeName(*unit.getAnchor())));
        b.tooltip = "unit #" + std::to_string(unit.id) + " " + unit.kind + ":";
        for (const Node *m : unit.members)
          b.tooltip += " " + m->getOpType().str();
        boxes.push_back(b);
      }
      boxOf[&n] = it->second;
      continue;
    }
    Box b;
    b.id = prefix.str() + "_n" + std::to_string(i);
    b.qdq = qdq;
    b.label = (n.isa(ops::QQuantize)     ? std::string("Q")
               : n.isa(ops::QDequantize) ? std::string("DQ")
                                         : dotEscape(n.getOpType())) +
              "\\n" + dotEscape(labelTail(nodeName(n)));
    if (l != leftoverOf.end()) {
      b.colour = leftoverColour(l->second->kind);
      std::string kind = getLeftoverKindName(l->second->kind).str();
      std::replace(kind.begin(), kind.end(), ' ', '-');
      b.cls = "leftover kind-" + kind;
      b.tooltip =
          getLeftoverKindName(l->second->kind).str() + ": " + l->second->reason;
    } else {
      b.colour = qdq ? "#ffffff" : leftoverColour(LeftoverKind::FloatIsland);
      b.cls = qdq ? "qdq" : "float";
      b.tooltip = nodeName(n);
    }
    boxOf[&n] = boxes.size();
    boxes.push_back(b);
  }
  // Edges between boxes.
  std::vector<std::vector<unsigned>> preds(boxes.size()), succs(boxes.size());
  for (const Node &n : graph.getNodes()) {
    auto to = boxOf.find(&n);
    if (to == boxOf.end())
      continue;
    for (const Value *v : n.getOperands()) {
      auto from = v ? boxOf.find(v->getDefiningNode()) : boxOf.end();
      if (from == boxOf.end() || from->second == to->second ||
          llvm::is_contained(succs[from->second], to->second))
        continue;
      succs[from->second].push_back(to->second);
      preds[to->second].push_back(from->second);
    }
  }
  // Collapse long chains of single-input single-output boxes that are not
  // leftovers.
  std::vector<int> collapsedInto(boxes.size(), -1);
  std::vector<std::string> summaries;
  auto chainable = [&](unsigned i) {
    return preds[i].size() == 1 && succs[i].size() == 1 &&
           !llvm::StringRef(boxes[i].cls).startswith("leftover");
  };
  std::vector<bool> visited(boxes.size());
  for (unsigned i = 0; i < boxes.size(); ++i) {
    if (visited[i] || !chainable(i))
      continue;
    unsigned p = preds[i][0];
    if (chainable(p) && succs[p].size() == 1)
      continue; // not the start of its run
    std::vector<unsigned> run{i};
    visited[i] = true;
    while (true) {
      unsigned next = succs[run.back()][0];
      if (!chainable(next) || preds[next].size() != 1 || visited[next])
        break;
      visited[next] = true;
      run.push_back(next);
    }
    if (run.size() <= options.collapseChainsLongerThan)
      continue;
    std::map<std::string, unsigned> kinds;
    for (size_t k = 1; k + 1 < run.size(); ++k) {
      llvm::StringRef cls = boxes[run[k]].cls;
      kinds[cls.startswith("unit kind-") ? cls.drop_front(10).str()
                                         : cls.str()]++;
      collapsedInto[run[k]] = static_cast<int>(summaries.size());
    }
    std::string text = std::to_string(run.size() - 2) + " collapsed:";
    for (auto &[k, c] : kinds)
      text += " " + k + " x" + std::to_string(c);
    summaries.push_back(text);
  }

  std::string out;
  llvm::raw_string_ostream os(out);
  os << "digraph \"" << prefix << "\" {\n"
     << "  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=10, "
        "nodesep=0.2, ranksep=0.25, id=\""
     << prefix << "_graph\"];\n"
     << "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", "
        "fontsize=9, height=0.3];\n"
     << "  edge [arrowsize=0.5, color=\"#666666\"];\n";
  for (const Box &b : boxes) {
    if (collapsedInto[&b - boxes.data()] >= 0)
      continue;
    os << "  " << b.id << " [id=\"" << b.id << "\", class=\"" << b.cls
       << "\", label=\"" << b.label << "\", fillcolor=\"" << b.colour
       << "\", tooltip=\"" << dotEscape(b.tooltip) << "\"";
    if (b.qdq)
      os << ", shape=ellipse, fontsize=7, height=0.2";
    if (llvm::StringRef(b.cls).startswith("unit"))
      os << ", penwidth=1.5, color=\"#1d3557\"";
    os << "];\n";
  }
  for (size_t s = 0; s < summaries.size(); ++s)
    os << "  " << prefix << "_c" << s << " [id=\"" << prefix << "_c" << s
       << "\", class=\"collapsed\", shape=note, fillcolor=\"#edf2f4\", "
          "label=\""
       << dotEscape(summaries[s]) << "\"];\n";
  auto endpoint = [&](unsigned i) {
    return collapsedInto[i] >= 0
               ? prefix.str() + "_c" + std::to_string(collapsedInto[i])
               : boxes[i].id;
  };
  std::set<std::pair<std::string, std::string>> edges;
  for (unsigned i = 0; i < boxes.size(); ++i)
    for (unsigned s : succs[i]) {
      std::string a = endpoint(i), b = endpoint(s);
      if (a != b && edges.insert({a, b}).second)
        os << "  " << a << " -> " << b << ";\n";
    }
  os << "}\n";
  return os.str();
}

/// The SVG graphviz draws, or an error naming what is missing.
llvm::Expected<std::string> runDot(llvm::StringRef dotSource) {
  std::string dot;
  if (const char *env = std::getenv("QOPT_DOT")) {
    dot = env;
  } else {
    auto found = llvm::sys::findProgramByName("dot");
    if (found)
      dot = *found;
  }
  if (dot.empty() || !llvm::sys::fs::can_execute(dot))
    return makeError("graphviz 'dot' not found (apt-get install graphviz)");
  // The temporaries go with the process on a signal too (Ctrl-C during a
  // long layout left qopt-report-* files behind).
  llvm::SmallString<128> in, out, err;
  auto cleanup = llvm::make_scope_exit([&] {
    for (llvm::SmallString<128> *path : {&in, &out, &err})
      if (!path->empty()) {
        llvm::sys::fs::remove(*path);
        llvm::sys::DontRemoveFileOnSignal(*path);
      }
  });
  for (auto [path, suffix] :
       {std::pair{&in, "dot"}, {&out, "svg"}, {&err, "err"}}) {
    if (auto ec =
            llvm::sys::fs::createTemporaryFile("qopt-report", suffix, *path))
      return makeSystemError(ec, DiagLocation(),
                             "cannot create a temporary file for graphviz: " +
                                 ec.message());
    llvm::sys::RemoveFileOnSignal(*path);
  }
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(in, ec);
    if (ec)
      return makeSystemError(ec, DiagLocation::file(in),
                             "cannot write '" + in + "': " + ec.message());
    os << dotSource;
    os.close();
    if (os.has_error()) {
      ec = os.error();
      os.clear_error();
      return makeSystemError(ec, DiagLocation::file(in),
                             "cannot write '" + in + "': " + ec.message());
    }
  }
  // The layout is bounded: a graph dot cannot place in time (thousands of
  // leftover chains took minutes) gets a report without its picture.
  // QOPT_DOT_TIMEOUT (seconds) sets the bound.
  unsigned seconds = 120;
  if (const char *env = std::getenv("QOPT_DOT_TIMEOUT"))
    llvm::StringRef(env).getAsInteger(10, seconds);
  std::string msg;
  llvm::StringRef args[] = {dot, "-Tsvg", in.str(), "-o", out.str()};
  llvm::Optional<llvm::StringRef> redirects[] = {llvm::None, llvm::None,
                                                 llvm::StringRef(err)};
  int rc = llvm::sys::ExecuteAndWait(dot, args, llvm::None, redirects, seconds,
                                     0, &msg);
  if (rc == -2)
    return makeError("graphviz 'dot' took over " + llvm::Twine(seconds) +
                     " s to lay the graph out (QOPT_DOT_TIMEOUT)");
  if (rc != 0) {
    // Its first line, not graphviz's raw output.
    if (auto text = llvm::MemoryBuffer::getFile(err))
      if (msg.empty())
        msg = (*text)->getBuffer().split('\n').first.str();
    return makeError("graphviz 'dot' failed (exit " + llvm::Twine(rc) +
                     "): " + toPrintableLine(msg, 300));
  }
  auto buf = llvm::MemoryBuffer::getFile(out);
  if (!buf)
    return llvm::errorCodeToError(buf.getError());
  std::string svg = (*buf)->getBuffer().str();
  size_t start = svg.find("<svg");
  return start == std::string::npos ? svg : svg.substr(start);
}

std::string htmlEscape(llvm::StringRef s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '&':
      out += "&amp;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

const char *kStyle = R"(
body{font:13px Helvetica,Arial,sans-serif;margin:16px;color:#1d3557}
h1{font-size:18px} h2{font-size:15px;margin:8px 0}
.sections{display:flex;gap:16px;align-items:flex-start}
.section{flex:1;min-width:0;border:1px solid #ccd;border-radius:6px;padding:8px}
.picture{overflow:auto;max-height:70vh;border:1px solid #eee}
.picture svg{max-width:none}
table{border-collapse:collapse;margin:6px 0}
td,th{border:1px solid #dde;padding:2px 6px;vertical-align:top;text-align:left}
table.summary td.num{text-align:right;font-weight:bold}
tr.leftover{cursor:pointer} tr.leftover:hover{background:#f1faee}
.legend span{display:inline-block;padding:1px 6px;margin-right:4px;border:1px solid #999;border-radius:3px}
.hl polygon,.hl ellipse,.hl path{stroke:#d00000 !important;stroke-width:4px !important}
.notice{background:#fff3cd;border:1px solid #e0c36a;padding:6px}
)";

const char *kScript = R"(
// Time from navigation to a laid-out page, for the load-time test.
window.addEventListener('load', function () {
  document.body.offsetHeight;
  document.body.setAttribute('data-load-ms', Math.round(performance.now()));
});
document.querySelectorAll('tr.leftover').forEach(function (row) {
  row.addEventListener('click', function () {
    document.querySelectorAll('.hl').forEach(function (e) { e.classList.remove('hl'); });
    var t = document.getElementById(row.dataset.target);
    if (t) { t.classList.add('hl'); t.scrollIntoView({block: 'center', inline: 'center'}); }
  });
});
)";

void writeSectionHtml(const ReportSection &s, const std::string *svg,
                      const std::string &dotProblem, llvm::raw_ostream &os) {
  const json::Object &plan = *s.json.getAsObject();
  const json::Object &sum = *plan.getObject("summary");
  std::string p = s.idPrefix;
  auto num = [&](llvm::StringRef key) {
    return sum.getInteger(key).getValueOr(0);
  };
  os << "<div class=\"section\" id=\"" << p << "\">\n<h2>"
     << htmlEscape(s.label) << "</h2>\n<table class=\"summary\">\n";
  int64_t total = num("total_macs");
  int64_t int8Macs = num("int8_macs");
  os << "<tr><td>INT8 share of MACs</td><td class=\"num\" id=\"" << p
     << "-int8-macs\">"
     << (total ? llvm::formatv("{0:F1}%", 100.0 * int8Macs / total).str()
               : std::string("n/a"))
     << "</td></tr>\n";
  const std::pair<const char *, const char *> rows[] = {
      {"units", "units"},
      {"copies", "int8 copies"},
      {"requantizes", "requantizes"},
      {"reformats", "reformats"},
      {"float_ops", "float compute ops"},
      {"float_islands", "float islands"},
      {"unfused_qdq", "unfused Q/DQ"},
      {"leftovers", "leftovers"}};
  for (auto [key, text] : rows)
    os << "<tr><td>" << text << "</td><td class=\"num\" id=\"" << p << "-"
       << key << "\">" << num(key) << "</td></tr>\n";
  os << "</table>\n<div class=\"picture\">";
  if (svg)
    os << *svg;
  else
    os << "<p class=\"notice\">No picture: " << htmlEscape(dotProblem)
       << ". The tables below hold the whole plan.</p>";
  os << "</div>\n<h2>Leftovers</h2>\n<table class=\"leftovers\">\n"
     << "<tr><th>#</th><th>kind</th><th>nodes</th><th>reason</th>"
        "<th>fix</th></tr>\n";
  const json::Array &leftovers = *plan.getArray("leftovers");
  const json::Array &targets = *plan.getArray("targets");
  for (size_t i = 0; i < leftovers.size(); ++i) {
    const json::Object &l = *leftovers[i].getAsObject();
    std::string kind = l.getString("kind").getValueOr("").str();
    std::string nodes;
    for (const json::Value &n : *l.getArray("nodes"))
      nodes += (nodes.empty() ? "" : " &rarr; ") +
               htmlEscape(n.getAsString().getValueOr(""));
    std::string fix;
    if (auto f = l.getString("fix_pipeline"); f && !f->empty())
      fix = "<code>qopt -passes='" + htmlEscape(*f) + "'</code><br>";
    fix += htmlEscape(l.getString("fix_in_model").getValueOr(""));
    std::string target = targets[i].getAsString().getValueOr("").str();
    os << "<tr class=\"leftover\" data-kind=\"" << htmlEscape(kind)
       << "\" data-target=\"" << target << "\"><td><a href=\"#" << target
       << "\">" << i + 1 << "</a></td><td>" << htmlEscape(kind) << "</td><td>"
       << nodes << "</td><td>"
       << htmlEscape(l.getString("reason").getValueOr("")) << "</td><td>" << fix
       << "</td></tr>\n";
  }
  os << "</table>\n<details><summary>Units</summary>\n<table "
        "class=\"units\">\n<tr><th>#</th><th>kind</th><th>members</th></tr>\n";
  for (const json::Value &v : *plan.getArray("units")) {
    const json::Object &u = *v.getAsObject();
    std::string members;
    for (const json::Value &m : *u.getArray("members"))
      members += (members.empty() ? "" : ", ") +
                 htmlEscape(m.getAsString().getValueOr(""));
    os << "<tr class=\"unit\" data-kind=\""
       << htmlEscape(u.getString("kind").getValueOr("")) << "\"><td>"
       << u.getInteger("id").getValueOr(0) << "</td><td>"
       << htmlEscape(u.getString("kind").getValueOr("")) << "</td><td>"
       << members << "</td></tr>\n";
  }
  os << "</table>\n</details>\n</div>\n";
}

} // namespace

json::Value qopt::fusionPlanJson(const FusionPlan &plan,
                                 llvm::StringRef label) {
  FusionPlan::Summary s = plan.summarize();
  json::Array units, leftovers, hints;
  for (const FusionUnit &u : plan.units) {
    json::Array members, ops;
    for (const Node *m : u.members) {
      members.push_back(nodeName(*m));
      ops.push_back(m->getOpType().str());
    }
    units.push_back(json::Object{{"id", int64_t(u.id)},
                                 {"kind", u.kind},
                                 {"members", std::move(members)},
                                 {"ops", std::move(ops)},
                                 {"absorbed", int64_t(u.absorbed.size())},
                                 {"inputs", portsJson(u.inputs)},
                                 {"outputs", portsJson(u.outputs)},
                                 {"macs", u.macs}});
  }
  for (const Leftover &l : plan.leftovers)
    leftovers.push_back(leftoverJson(l));
  for (const Leftover &l : plan.hints)
    hints.push_back(leftoverJson(l));
  return json::Object{
      {"label", label.str()},
      {"summary", json::Object{{"total_macs", s.totalMacs},
                               {"int8_macs", s.int8Macs},
                               {"int4_weight_only_macs", s.int4WeightOnlyMacs},
                               {"fp4_weight_only_macs", s.fp4WeightOnlyMacs},
                               {"fp8_macs", s.fp8Macs},
                               {"units", int64_t(s.units)},
                               {"copies", int64_t(s.copies)},
                               {"requantizes", int64_t(s.requantizes)},
                               {"reformats", int64_t(s.reformats)},
                               {"float_ops", int64_t(s.floatOps)},
                               {"float_islands", int64_t(s.floatIslands)},
                               {"unfused_qdq", int64_t(s.unfusedQdq)},
                               {"leftovers", int64_t(plan.leftovers.size())}}},
      {"units", std::move(units)},
      {"import_problems", json::Array(plan.importProblems)},
      {"leftovers", std::move(leftovers)},
      {"hints", std::move(hints)}};
}

ReportSection qopt::captureReportSection(const FusionPlan &plan,
                                         const Graph &graph,
                                         llvm::StringRef label,
                                         llvm::StringRef idPrefix,
                                         const ReportOptions &options) {
  ReportSection s;
  s.label = label.str();
  s.idPrefix = idPrefix.str();
  s.json = fusionPlanJson(plan, label);
  // The DOM id each leftover's row links to (its first drawn node).
  json::Array targets;
  llvm::DenseMap<const Node *, unsigned> index;
  unsigned i = 0;
  for (const Node &n : graph.getNodes())
    if (!n.isa(ops::Constant))
      index[&n] = i++;
  for (const Leftover &l : plan.leftovers) {
    std::string t;
    for (const Node *n : l.nodes)
      if (index.count(n)) {
        t = idPrefix.str() + "_n" + std::to_string(index[n]);
        break;
      }
    targets.push_back(t);
  }
  s.json.getAsObject()->try_emplace("targets", std::move(targets));
  s.dot = planDot(plan, graph, idPrefix, options);
  return s;
}

llvm::Expected<std::string>
qopt::renderFusionReport(llvm::StringRef path, llvm::StringRef model,
                         const BackendRules &rules,
                         llvm::ArrayRef<ReportSection> sections) {
  llvm::StringRef ext = llvm::sys::path::extension(path);
  auto render = [](llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write)
      -> llvm::Expected<std::string> {
    std::string out;
    llvm::raw_string_ostream os(out);
    if (auto err = write(os))
      return std::move(err);
    return std::move(os.str());
  };
  if (ext == ".json") {
    json::Array plans;
    for (const ReportSection &s : sections) {
      json::Object o = *s.json.getAsObject();
      o.erase("targets");
      plans.push_back(std::move(o));
    }
    json::Value doc = json::Object{{"schema", "qopt-fusion-report/1"},
                                   {"model", model.str()},
                                   {"backend", rules.name.str()},
                                   {"backend_version", rules.version.str()},
                                   {"plans", std::move(plans)}};
    return render([&](llvm::raw_ostream &os) {
      os << llvm::formatv("{0:2}", doc) << "\n";
      return llvm::Error::success();
    });
  }
  if (ext != ".html" && ext != ".svg")
    return makeError("unknown report format '" + ext +
                     "' (expected .html, .svg or .json)");
  std::vector<std::optional<std::string>> svgs;
  std::string dotProblem;
  for (const ReportSection &s : sections) {
    auto svg = runDot(s.dot);
    if (!svg) {
      dotProblem = llvm::toString(svg.takeError());
      if (ext == ".svg")
        return makeError(dotProblem);
      svgs.emplace_back();
      continue;
    }
    svgs.push_back(std::move(*svg));
  }
  return render([&](llvm::raw_ostream &os) {
    if (ext == ".svg") {
      if (svgs.size() == 1) {
        os << *svgs[0];
        return llvm::Error::success();
      }
      // Side by side: each picture nested in one outer SVG.
      os << "<svg xmlns=\"http://www.w3.org/2000/svg\" "
            "xmlns:xlink=\"http://www.w3.org/1999/xlink\">\n";
      for (size_t i = 0; i < svgs.size(); ++i)
        os << "<g id=\"" << sections[i].idPrefix << "\">" << *svgs[i]
           << "</g>\n";
      os << "</svg>\n";
      return llvm::Error::success();
    }
    os << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n<title>qopt "
          "fusion report: "
       << htmlEscape(llvm::sys::path::filename(model)) << "</title>\n<style>"
       << kStyle << "</style></head>\n<body>\n<h1>Fusion report: "
       << htmlEscape(llvm::sys::path::filename(model)) << " under "
       << htmlEscape(rules.title) << " rules</h1>\n<p class=\"legend\">"
       << "<span style=\"background:#8ecae6\">conv/gemm unit</span>"
       << "<span style=\"background:#cdb4db\">add/mul unit</span>"
       << "<span style=\"background:#b7e4c7\">pool/activation unit</span>"
       << "<span style=\"background:#d9d9d9\">int8 copy/concat</span>"
       << "<span style=\"background:#ffb703\">float</span>"
       << "<span style=\"background:#e63946\">requantize</span>"
       << "<span style=\"background:#fb8500\">reformat</span>"
       << "<span style=\"background:#ffd166\">unfused Q/DQ</span>"
       << " Boxes are fused units; hover a node for its unit or leftover "
          "reason; click a leftover row to find it.</p>\n";
    if (!dotProblem.empty())
      os << "<p class=\"notice\" id=\"no-dot\">" << htmlEscape(dotProblem)
         << "</p>\n";
    os << "<div class=\"sections\">\n";
    for (size_t i = 0; i < sections.size(); ++i)
      writeSectionHtml(sections[i], svgs[i] ? &*svgs[i] : nullptr, dotProblem,
                       os);
    os << "</div>\n<script>" << kScript << "</script>\n</body></html>\n";
    return llvm::Error::success();
  });
}

llvm::Error qopt::writeFusionReports(llvm::ArrayRef<std::string> paths,
                                     llvm::StringRef model,
                                     const BackendRules &rules,
                                     llvm::ArrayRef<ReportSection> sections) {
  std::vector<std::string> pages;
  for (const std::string &path : paths) {
    auto page = renderFusionReport(path, model, rules, sections);
    if (!page)
      return withLocation(page.takeError(), DiagLocation::file(path));
    pages.push_back(std::move(*page));
  }
  return writeFilesAtomically(paths,
                              [&](llvm::ArrayRef<llvm::raw_ostream *> files) {
                                for (size_t i = 0; i < files.size(); ++i)
                                  *files[i] << pages[i];
                                return llvm::Error::success();
                              });
}
