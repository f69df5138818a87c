//===- FusionFixCheck.cpp - Fixes explain names, run before they are named ===//
//
// A leftover's `qopt -passes='X'` is a promise: X, run alone on the graph
// explain looked at, removes it. The planner names the fix of the first
// blocker it finds, and a node can have two:
//
//   %d = q.dequantize(%x : i8)          reformat before Conv 'c':
//   %c = onnx.Conv(%d, %w)                no Q on its output
//   %s = onnx.Sigmoid(%c) ...           fix: quantize-activations
//
// adds the Q, which is on an i8 grid, and ONNX Runtime's x86 kernels then
// refuse the i8 activations: the fix that works is
// 'quantize-activations,ensure-unique-dq,to-uint8-activations'. So every
// pipeline is run on a copy of the graph and the plan is computed again; a
// leftover still there takes the fix its successor names, and a pipeline
// that still does not remove it is not named at all.
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/Graph.h"
#include "qopt/Passes/FusionPlan.h"
#include "qopt/Passes/PassRegistry.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

using namespace qopt;

namespace {

/// How many times a pipeline is extended by the fix of what it leaves.
constexpr unsigned kMaxExtensions = 2;

/// The fixes one leftover names.
struct NamedFix {
  std::string pipeline;
  std::string inModel;
};

/// The leftovers and hints of one plan, by key, with the fixes each names.
using KeyedFixes = llvm::StringMap<NamedFix>;

KeyedFixes keyPlan(const FusionPlan &plan) {
  KeyedFixes keys;
  for (const auto *list : {&plan.leftovers, &plan.hints})
    for (const Leftover &l : *list)
      keys.try_emplace(leftoverIdentity(l), NamedFix{l.fixPipeline, l.fixInModel});
  return keys;
}

/// Whether `pipeline` already runs every pass of `step` (by text: the
/// pipelines explain names are flat lists).
bool alreadyRuns(llvm::StringRef pipeline, llvm::StringRef step) {
  llvm::SmallVector<llvm::StringRef, 8> have, want;
  pipeline.split(have, ',');
  step.split(want, ',');
  return llvm::all_of(want, [&](llvm::StringRef s) {
    return llvm::is_contained(have, s);
  });
}

class FixChecker {
public:
  FixChecker(const Graph &graph, const BackendRules &rules,
             const PassRegistry &registry)
      : graph(graph), rules(rules), registry(registry) {}

  /// Makes `l`'s pipeline one that removes it (extended by the fixes of
  /// what it leaves, their in-model fixes added to `l`'s), or clears it.
  void confirm(Leftover &l, FixCheckStats &stats) {
    std::string key = leftoverIdentity(l);
    std::string fix = l.fixPipeline;
    std::string inModel = l.fixInModel;
    l.fixPipeline.clear();
    for (unsigned step = 0; step <= kMaxExtensions; ++step) {
      const KeyedFixes *after = run(fix, stats);
      if (!after)
        break;
      auto it = after->find(key);
      if (it == after->end()) {
        ++(step ? stats.extended : stats.confirmed);
        l.fixPipeline = fix;
        l.fixInModel = inModel;
        return;
      }
      // What the model needs besides: the next blocker's in-model fix.
      const NamedFix &next = it->second;
      if (!next.inModel.empty() &&
          llvm::StringRef(inModel).find(next.inModel) == llvm::StringRef::npos)
        inModel += inModel.empty() ? next.inModel : "; and " + next.inModel;
      l.fixInModel = inModel;
      if (next.pipeline.empty() || alreadyRuns(fix, next.pipeline))
        break;
      fix += "," + next.pipeline;
    }
    ++stats.dropped;
  }

private:
  const Graph &graph;
  const BackendRules &rules;
  const PassRegistry &registry;
  /// The plan after each pipeline tried (nullopt: it failed to run).
  std::map<std::string, std::optional<KeyedFixes>> tried;

  const KeyedFixes *run(const std::string &pipeline, FixCheckStats &stats) {
    auto [it, inserted] = tried.try_emplace(pipeline);
    if (inserted) {
      ++stats.pipelinesRun;
      if (auto pm = registry.parsePipeline(pipeline)) {
        std::unique_ptr<Graph> copy = graph.clone();
        AnalysisManager am;
        if (llvm::Error err = pm->runAndCheck(*copy, am))
          llvm::consumeError(std::move(err));
        else
          it->second = keyPlan(computeFusionPlan(*copy, rules));
      } else {
        llvm::consumeError(pm.takeError());
      }
    }
    return it->second ? &*it->second : nullptr;
  }
};

} // namespace

FixCheckStats qopt::confirmFixes(const Graph &graph, FusionPlan &plan,
                                 const PassRegistry &registry) {
  FixCheckStats stats;
  if (!plan.rules)
    return stats;
  FixChecker checker(graph, *plan.rules, registry);
  for (auto *list : {&plan.leftovers, &plan.hints})
    for (Leftover &l : *list)
      if (!l.fixPipeline.empty())
        checker.confirm(l, stats);
  return stats;
}
