//===- PassManager.cpp - Passes, analyses and their manager ---------------===//

#include "qopt/Passes/PassManager.h"
#include "qopt/Support/Error.h"

#include "qopt/IR/Graph.h"
#include <algorithm>

#include "llvm/Support/WithColor.h"

using namespace qopt;

void PreservedAnalyses::intersect(const PreservedAnalyses &other) {
  if (other.preserveAll)
    return;
  if (preserveAll) {
    *this = other;
    return;
  }
  llvm::SmallPtrSet<AnalysisKey *, 4> kept;
  for (AnalysisKey *k : preserved)
    if (other.preserved.count(k))
      kept.insert(k);
  preserved = std::move(kept);
}

bool PassInstrumentation::runBeforePass(llvm::StringRef pass,
                                        const Graph &g) const {
  bool run = true;
  for (const auto &fn : beforePass)
    run &= fn(pass, g);
  return run;
}

void PassInstrumentation::runAfterPass(llvm::StringRef pass, const Graph &g,
                                       const PreservedAnalyses &pa) const {
  for (const auto &fn : afterPass)
    fn(pass, g, pa);
}

void PassInstrumentation::runBeforeAnalysis(llvm::StringRef a,
                                            const Graph &g) const {
  for (const auto &fn : beforeAnalysis)
    fn(a, g);
}

void PassInstrumentation::runAfterAnalysis(llvm::StringRef a,
                                           const Graph &g) const {
  for (const auto &fn : afterAnalysis)
    fn(a, g);
}

void PassInstrumentation::runAnalysisInvalidated(llvm::StringRef a,
                                                 const Graph &g) const {
  for (const auto &fn : analysisInvalidated)
    fn(a, g);
}

void PassInstrumentation::reportError(llvm::Error err) {
  if (failure) { // keep the first failure
    llvm::consumeError(std::move(err));
    return;
  }
  llvm::handleAllErrors(
      std::move(err),
      [&](std::unique_ptr<llvm::ErrorInfoBase> e) { failure = std::move(e); });
}

llvm::Error PassInstrumentation::takeError() {
  if (!failure)
    return llvm::Error::success();
  return llvm::Error(std::move(failure));
}

const detail::AnalysisResultConcept *
AnalysisManager::getCachedResult(Graph &g, AnalysisKey *key) const {
  auto it = cache.find({&g, key});
  return it == cache.end() ? nullptr : it->second.get();
}

void AnalysisManager::invalidate(Graph &g, const PreservedAnalyses &pa) {
  if (pa.areAllPreserved())
    return;
  std::vector<std::pair<Graph *, AnalysisKey *>> dead;
  for (auto &entry : cache)
    if (entry.first.first == &g && !pa.isPreserved(entry.first.second))
      dead.push_back(entry.first);
  eraseWithDependents(g, std::move(dead));
}

void AnalysisManager::eraseWithDependents(
    Graph &g, std::vector<std::pair<Graph *, AnalysisKey *>> dead) {
  // Whatever was computed from a dead result dies with it.
  for (size_t i = 0; i < dead.size(); ++i) {
    auto it = dependents.find(dead[i]);
    if (it == dependents.end())
      continue;
    for (const auto &k : it->second)
      if (cache.count(k) &&
          std::find(dead.begin(), dead.end(), k) == dead.end())
        dead.push_back(k);
  }
  for (auto &k : dead) {
    if (instrumentation)
      instrumentation->runAnalysisInvalidated(displayName(k.second, "analysis"),
                                              g);
    cache.erase(k);
  }
}

void AnalysisManager::invalidateOne(Graph &g, AnalysisKey *key) {
  if (!key) {
    invalidate(g, PreservedAnalyses::none());
    return;
  }
  if (cache.count({&g, key}))
    eraseWithDependents(g, {{&g, key}});
}

PreservedAnalyses PassManager::run(Graph &g, AnalysisManager &am) {
  PassInstrumentation *pi = am.getInstrumentation();
  PreservedAnalyses result = PreservedAnalyses::all();
  for (auto &pass : passes) {
    if (pi && pi->hasFailed())
      break;
    bool container = pass->isContainer();
    if (!container && pi && !pi->runBeforePass(pass->name(), g))
      continue;
    PreservedAnalyses pa = PreservedAnalyses::none();
    if (pi && !container) {
      // A plugin's pass may throw: one error naming it, not an abort.
      std::string thrown;
      try {
        pa = pass->run(g, am);
      } catch (const std::exception &e) {
        thrown = e.what();
      } catch (...) {
        thrown = "an exception that is no std::exception";
      }
      if (!thrown.empty()) {
        am.invalidate(g, PreservedAnalyses::none());
        pi->reportError(makeError("pass '" + toPrintableLine(pass->name()) +
                                  "' threw: " + toPrintableLine(thrown)));
        break;
      }
    } else {
      pa = pass->run(g, am);
    }
    am.invalidate(g, pa);
    if (!container && pi)
      pi->runAfterPass(pass->name(), g, pa);
    result.intersect(pa);
  }
  return result;
}

void PassManager::printPipeline(llvm::raw_ostream &os) const {
  for (size_t i = 0; i < passes.size(); ++i) {
    if (i)
      os << ",";
    passes[i]->printPipeline(os);
  }
}

llvm::Error PassManager::runAndCheck(Graph &g, AnalysisManager &am) {
  run(g, am);
  if (PassInstrumentation *pi = am.getInstrumentation())
    return pi->takeError();
  return llvm::Error::success();
}

PreservedAnalyses FixpointPass::run(Graph &g, AnalysisManager &am) {
  PreservedAnalyses result = PreservedAnalyses::all();
  PassInstrumentation *pi = am.getInstrumentation();
  for (unsigned i = 0; i < maxIterations; ++i) {
    PreservedAnalyses pa = inner.run(g, am);
    result.intersect(pa);
    if (pa.areAllPreserved() || (pi && pi->hasFailed()))
      return result;
  }
  llvm::WithColor::warning(llvm::errs(), "qopt") << "fixpoint(";
  inner.printPipeline(llvm::errs());
  llvm::errs() << ") still changed the graph after " << maxIterations
               << (maxIterations == 1 ? " iteration" : " iterations")
               << "; stopping\n";
  return result;
}

void FixpointPass::printPipeline(llvm::raw_ostream &os) const {
  os << "fixpoint";
  if (maxIterations != kDefaultMaxIterations)
    os << "<max-iterations=" << maxIterations << ">";
  os << "(";
  inner.printPipeline(os);
  os << ")";
}

PreservedAnalyses RepeatPass::run(Graph &g, AnalysisManager &am) {
  PreservedAnalyses result = PreservedAnalyses::all();
  for (unsigned i = 0; i < count; ++i)
    result.intersect(inner.run(g, am));
  return result;
}

void RepeatPass::printPipeline(llvm::raw_ostream &os) const {
  os << "repeat<" << count << ">(";
  inner.printPipeline(os);
  os << ")";
}
