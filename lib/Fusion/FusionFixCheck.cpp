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
// leftover still there (the same one, or one of its kind on any of its
// nodes but Q/DQ: an island that only shrank) takes the fix its successor
// names, and a pipeline that still does not remove it is not named at all.
//
//===----------------------------------------------------------------------===//

#include "FusionPlanner.h"

#include "qopt/Fusion/FusionPlan.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/Verifier.h"
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

/// The leftovers and hints of one plan, with the fixes each names: by
/// identity, and by kind and each of their nodes other than Q/DQ (an
/// island that only shrank is still there).
struct KeyedFixes {
  llvm::StringMap<NamedFix> byIdentity;
  llvm::StringMap<NamedFix> byKindAndNode;

  /// What is left of leftover `l` in this plan, or null when nothing is.
  const NamedFix *find(const Leftover &l) const {
    auto it = byIdentity.find(leftoverIdentity(l));
    if (it != byIdentity.end())
      return &it->second;
    for (const std::string &k : kindAndNodes(l)) {
      auto at = byKindAndNode.find(k);
      if (at != byKindAndNode.end())
        return &at->second;
    }
    return nullptr;
  }

  static std::vector<std::string> kindAndNodes(const Leftover &l) {
    std::vector<std::string> keys;
    for (const Node *n : l.nodes)
      if (!fusion::isQdqOp(*n))
        keys.push_back(getLeftoverKindName(l.kind).str() + "|" +
                       planNodeName(*n));
    return keys;
  }
};

KeyedFixes keyPlan(const FusionPlan &plan) {
  KeyedFixes keys;
  for (const auto *list : {&plan.leftovers, &plan.hints})
    for (const Leftover &l : *list) {
      NamedFix fix{l.fixPipeline, l.fixInModel};
      keys.byIdentity.try_emplace(leftoverIdentity(l), fix);
      for (const std::string &k : KeyedFixes::kindAndNodes(l))
        keys.byKindAndNode.try_emplace(k, fix);
    }
  return keys;
}

/// Whether `pipeline` already runs every pass of `step` (by text: the
/// pipelines explain names are flat lists).
bool alreadyRuns(llvm::StringRef pipeline, llvm::StringRef step) {
  llvm::SmallVector<llvm::StringRef, 8> have, want;
  pipeline.split(have, ',');
  step.split(want, ',');
  return llvm::all_of(
      want, [&](llvm::StringRef s) { return llvm::is_contained(have, s); });
}

class FixChecker {
public:
  FixChecker(const Graph &graph, const BackendRules &rules,
             const PassRegistry &registry)
      : graph(graph), rules(rules), registry(registry) {}

  /// Makes `l`'s pipeline one that removes it (extended by the fixes of
  /// what it leaves, their in-model fixes added to `l`'s), or clears it.
  void confirm(Leftover &l, FixCheckStats &stats) {
    std::string fix = l.fixPipeline;
    std::string inModel = l.fixInModel;
    l.fixPipeline.clear();
    for (unsigned step = 0; step <= kMaxExtensions; ++step) {
      const KeyedFixes *after = run(fix, stats);
      if (!after)
        break;
      const NamedFix *left = after->find(l);
      if (!left) {
        ++(step ? stats.extended : stats.confirmed);
        l.fixPipeline = fix;
        l.fixInModel = inModel;
        return;
      }
      // What the model needs besides: the next blocker's in-model fix.
      const NamedFix &next = *left;
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
        // A pass that fails, or leaves invalid IR, names no fix.
        std::unique_ptr<Graph> copy = graph.clone();
        PassInstrumentation pi;
        AnalysisManager am(&pi);
        if (llvm::Error err = pm->runAndCheck(*copy, am))
          llvm::consumeError(std::move(err));
        else if (llvm::Error err = verifyGraph(*copy))
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
