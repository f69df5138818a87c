//===- PassManager.h - Passes, analyses and their manager -------*- C++ -*-===//
//
// The mechanics of LLVM's new pass manager, on qopt graphs:
//
//   struct MyPass : PassInfoMixin<MyPass> {
//     PreservedAnalyses run(Graph &g, AnalysisManager &am);
//   };
//   struct MyAnalysis : AnalysisInfoMixin<MyAnalysis> {
//     using Result = ...;                      // may have print(raw_ostream&)
//     Result run(Graph &g, AnalysisManager &am);
//     static AnalysisKey Key;
//   };
//
// Passes are value types, wrapped by type erasure. Analysis results are cached
// per graph and dropped after a pass unless the pass preserved them.
// Instrumentation callbacks observe every pass and analysis run (printing,
// timing, verification, -stop-after).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PASSES_PASSMANAGER_H
#define QOPT_PASSES_PASSMANAGER_H

#include "qopt/Passes/CostReport.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/TypeName.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace qopt {

class Graph;
class AnalysisManager;

/// Identity of an analysis: the address of its static Key.
struct alignas(8) AnalysisKey {};

/// Which analyses a pass kept valid.
class PreservedAnalyses {
public:
  static PreservedAnalyses all() {
    PreservedAnalyses pa;
    pa.preserveAll = true;
    return pa;
  }
  static PreservedAnalyses none() { return {}; }

  template <typename AnalysisT> PreservedAnalyses &preserve() {
    return preserve(&AnalysisT::Key);
  }
  PreservedAnalyses &preserve(AnalysisKey *key) {
    preserved.insert(key);
    return *this;
  }
  bool areAllPreserved() const { return preserveAll; }
  bool isPreserved(AnalysisKey *key) const {
    return preserveAll || preserved.count(key);
  }
  /// Keeps only what both preserved (for a sequence of passes).
  void intersect(const PreservedAnalyses &other);

private:
  bool preserveAll = false;
  llvm::SmallPtrSet<AnalysisKey *, 4> preserved;
};

/// Gives a pass a name (its registered pipeline name by default comes from
/// the registry; this is the C++ type name for diagnostics).
template <typename DerivedT> struct PassInfoMixin {
  static llvm::StringRef name() {
    llvm::StringRef n = llvm::getTypeName<DerivedT>();
    n.consume_front("qopt::");
    return n;
  }
};

template <typename DerivedT>
struct AnalysisInfoMixin : PassInfoMixin<DerivedT> {
  static AnalysisKey *ID() { return &DerivedT::Key; }
};

/// Callbacks around passes and analyses. Before-pass callbacks may return
/// false to skip the pass (used by -stop-after).
class PassInstrumentation {
public:
  using BeforePassFn = std::function<bool(llvm::StringRef, const Graph &)>;
  using AfterPassFn = std::function<void(llvm::StringRef, const Graph &,
                                         const PreservedAnalyses &)>;
  using AnalysisFn = std::function<void(llvm::StringRef, const Graph &)>;

  void registerBeforePass(BeforePassFn fn) {
    beforePass.push_back(std::move(fn));
  }
  void registerAfterPass(AfterPassFn fn) { afterPass.push_back(std::move(fn)); }
  void registerBeforeAnalysis(AnalysisFn fn) {
    beforeAnalysis.push_back(std::move(fn));
  }
  void registerAfterAnalysis(AnalysisFn fn) {
    afterAnalysis.push_back(std::move(fn));
  }
  void registerAnalysisInvalidated(AnalysisFn fn) {
    analysisInvalidated.push_back(std::move(fn));
  }

  bool runBeforePass(llvm::StringRef pass, const Graph &g) const;
  void runAfterPass(llvm::StringRef pass, const Graph &g,
                    const PreservedAnalyses &pa) const;
  void runBeforeAnalysis(llvm::StringRef a, const Graph &g) const;
  void runAfterAnalysis(llvm::StringRef a, const Graph &g) const;
  void runAnalysisInvalidated(llvm::StringRef a, const Graph &g) const;

  /// A pass or an instrumentation (e.g. -verify-each) reports a failure;
  /// the pass manager stops at the next pass boundary and returns it.
  void reportError(llvm::Error err);
  bool hasFailed() const { return static_cast<bool>(failure); }
  llvm::Error takeError();

private:
  std::vector<BeforePassFn> beforePass;
  std::vector<AfterPassFn> afterPass;
  std::vector<AnalysisFn> beforeAnalysis, afterAnalysis, analysisInvalidated;
  std::unique_ptr<llvm::ErrorInfoBase> failure;
};

namespace detail {

struct AnalysisResultConcept {
  virtual ~AnalysisResultConcept() = default;
  virtual void print(llvm::raw_ostream &os) const = 0;
};

template <typename T, typename = void> struct HasPrint : std::false_type {};
template <typename T>
struct HasPrint<T, std::void_t<decltype(std::declval<const T &>().print(
                       std::declval<llvm::raw_ostream &>()))>>
    : std::true_type {};

template <typename ResultT> struct AnalysisResultModel : AnalysisResultConcept {
  explicit AnalysisResultModel(ResultT r) : result(std::move(r)) {}
  void print(llvm::raw_ostream &os) const override {
    if constexpr (HasPrint<ResultT>::value)
      result.print(os);
    else
      os << "(this analysis has no printer)\n";
  }
  ResultT result;
};

} // namespace detail

/// Caches analysis results per graph.
class AnalysisManager {
public:
  explicit AnalysisManager(PassInstrumentation *instrumentation = nullptr)
      : instrumentation(instrumentation) {}

  /// An analysis that asks for another one while it runs depends on it:
  /// invalidating the one it asked for invalidates it too.
  template <typename AnalysisT>
  typename AnalysisT::Result &getResult(Graph &g) {
    AnalysisKey *key = &AnalysisT::Key;
    if (!computing.empty()) {
      auto &users = dependents[{&g, key}];
      if (llvm::find(users, computing.back()) == users.end())
        users.push_back(computing.back());
    }
    auto it = cache.find({&g, key});
    if (it == cache.end()) {
      llvm::StringRef name = displayName(key, AnalysisT::name());
      if (instrumentation)
        instrumentation->runBeforeAnalysis(name, g);
      AnalysisT analysis;
      computing.push_back({&g, key});
      auto model = std::make_unique<
          detail::AnalysisResultModel<typename AnalysisT::Result>>(
          analysis.run(g, *this));
      computing.pop_back();
      if (instrumentation)
        instrumentation->runAfterAnalysis(name, g);
      it = cache.try_emplace({&g, key}, std::move(model)).first;
      ++runCounts[key];
    }
    return static_cast<
               detail::AnalysisResultModel<typename AnalysisT::Result> &>(
               *it->second)
        .result;
  }

  template <typename AnalysisT>
  typename AnalysisT::Result *getCachedResult(Graph &g) {
    auto it = cache.find({&g, &AnalysisT::Key});
    if (it == cache.end())
      return nullptr;
    return &static_cast<
                detail::AnalysisResultModel<typename AnalysisT::Result> &>(
                *it->second)
                .result;
  }

  /// Cached result of any analysis, for print<...>.
  const detail::AnalysisResultConcept *getCachedResult(Graph &g,
                                                       AnalysisKey *key) const;

  /// Drops results a pass did not preserve.
  void invalidate(Graph &g, const PreservedAnalyses &pa);
  /// Drops one analysis (or all, with key == nullptr).
  void invalidateOne(Graph &g, AnalysisKey *key);
  void clear() { cache.clear(); }

  /// How often an analysis has been computed (for tests and statistics).
  unsigned getRunCount(AnalysisKey *key) const {
    auto it = runCounts.find(key);
    return it == runCounts.end() ? 0 : it->second;
  }
  /// Registry names make instrumentation output match the pipeline text.
  void setDisplayName(AnalysisKey *key, llvm::StringRef name) {
    displayNames[key] = name.str();
  }
  PassInstrumentation *getInstrumentation() const { return instrumentation; }

  /// Where lossy passes record what they cost (see CostReport.h). Lives as
  /// long as the manager, across passes and invalidations.
  CostReport &getCostReport() { return costReport; }

private:
  CostReport costReport;
  llvm::StringRef displayName(AnalysisKey *key, llvm::StringRef fallback) {
    auto it = displayNames.find(key);
    return it == displayNames.end() ? fallback : llvm::StringRef(it->second);
  }

  PassInstrumentation *instrumentation;
  llvm::DenseMap<std::pair<Graph *, AnalysisKey *>,
                 std::unique_ptr<detail::AnalysisResultConcept>>
      cache;
  llvm::DenseMap<AnalysisKey *, unsigned> runCounts;
  llvm::DenseMap<AnalysisKey *, std::string> displayNames;
  /// Analyses being computed (innermost last) and, per (graph, analysis),
  /// the analyses whose results were computed from it.
  std::vector<std::pair<Graph *, AnalysisKey *>> computing;
  llvm::DenseMap<std::pair<Graph *, AnalysisKey *>,
                 llvm::SmallVector<std::pair<Graph *, AnalysisKey *>, 2>>
      dependents;
  /// Drops the results in `dead` and every cached result computed from
  /// one of them.
  void eraseWithDependents(Graph &g,
                           std::vector<std::pair<Graph *, AnalysisKey *>> dead);
};

/// Type-erased pass.
class PassConcept {
public:
  virtual ~PassConcept() = default;
  virtual PreservedAnalyses run(Graph &g, AnalysisManager &am) = 0;
  /// The pipeline name ("sink-qdq").
  virtual llvm::StringRef name() const = 0;
  /// Canonical pipeline text of this pass, parameters included.
  virtual void printPipeline(llvm::raw_ostream &os) const = 0;
  /// Canonical text of every lossy pass in this one (itself, or for
  /// containers their lossy members), for -print-pipeline-passes.
  virtual void collectLossy(std::vector<std::string> &out) const {}
  /// Containers (sequences, fixpoint, repeat) are not reported to
  /// instrumentation as passes of their own.
  virtual bool isContainer() const { return false; }
};

namespace detail {
template <typename T, typename = void>
struct HasPrintPipeline : std::false_type {};
template <typename T, typename = void> struct HasIsLossy : std::false_type {};
template <typename T>
struct HasIsLossy<T, std::void_t<decltype(std::declval<const T &>().isLossy())>>
    : std::true_type {};
template <typename T>
struct HasPrintPipeline<
    T, std::void_t<decltype(std::declval<const T &>().printPipeline(
           std::declval<llvm::raw_ostream &>()))>> : std::true_type {};
} // namespace detail

/// Wraps a pass value. `pipelineName` is the registered name.
template <typename PassT> class PassModel : public PassConcept {
public:
  PassModel(PassT pass, std::string pipelineName)
      : pass(std::move(pass)), pipelineName(std::move(pipelineName)) {}
  PreservedAnalyses run(Graph &g, AnalysisManager &am) override {
    return pass.run(g, am);
  }
  llvm::StringRef name() const override { return pipelineName; }
  void printPipeline(llvm::raw_ostream &os) const override {
    if constexpr (detail::HasPrintPipeline<PassT>::value)
      pass.printPipeline(os);
    else
      os << pipelineName;
  }
  /// A pass is lossy when it says so: `bool isLossy() const`.
  void collectLossy(std::vector<std::string> &out) const override {
    if constexpr (detail::HasIsLossy<PassT>::value)
      if (pass.isLossy()) {
        std::string text;
        llvm::raw_string_ostream os(text);
        printPipeline(os);
        out.push_back(os.str());
      }
  }
  PassT &getPass() { return pass; }

private:
  PassT pass;
  std::string pipelineName;
};

/// Runs passes in order; itself a pass, so pipelines nest.
class PassManager : public PassConcept {
public:
  template <typename PassT, typename = std::enable_if_t<!std::is_convertible_v<
                                PassT, std::unique_ptr<PassConcept>>>>
  void addPass(PassT pass, std::string pipelineName = {}) {
    if (pipelineName.empty())
      pipelineName = PassT::name().str();
    passes.push_back(std::make_unique<PassModel<PassT>>(
        std::move(pass), std::move(pipelineName)));
  }
  void addPass(std::unique_ptr<PassConcept> pass) {
    passes.push_back(std::move(pass));
  }
  size_t size() const { return passes.size(); }
  bool empty() const { return passes.empty(); }

  /// Runs every pass; stops early when instrumentation reports a failure.
  PreservedAnalyses run(Graph &g, AnalysisManager &am) override;
  llvm::StringRef name() const override { return "pass-manager"; }
  void printPipeline(llvm::raw_ostream &os) const override;
  bool isContainer() const override { return true; }
  void collectLossy(std::vector<std::string> &out) const override {
    for (const auto &p : passes)
      p->collectLossy(out);
  }

  /// Runs the pipeline and returns the first failure reported on the way.
  llvm::Error runAndCheck(Graph &g, AnalysisManager &am);

private:
  std::vector<std::unique_ptr<PassConcept>> passes;
};

/// fixpoint<max-iterations=N>(...): reruns its passes until one round
/// changes nothing. Hitting the bound is reported as a warning.
class FixpointPass : public PassConcept {
public:
  FixpointPass(PassManager inner, unsigned maxIterations)
      : inner(std::move(inner)), maxIterations(maxIterations) {}
  PreservedAnalyses run(Graph &g, AnalysisManager &am) override;
  llvm::StringRef name() const override { return "fixpoint"; }
  void printPipeline(llvm::raw_ostream &os) const override;
  bool isContainer() const override { return true; }
  void collectLossy(std::vector<std::string> &out) const override {
    inner.collectLossy(out);
  }
  static constexpr unsigned kDefaultMaxIterations = 10;

private:
  PassManager inner;
  unsigned maxIterations;
};

/// repeat<N>(...): runs its passes N times.
class RepeatPass : public PassConcept {
public:
  RepeatPass(PassManager inner, unsigned count)
      : inner(std::move(inner)), count(count) {}
  PreservedAnalyses run(Graph &g, AnalysisManager &am) override;
  llvm::StringRef name() const override { return "repeat"; }
  void printPipeline(llvm::raw_ostream &os) const override;
  bool isContainer() const override { return true; }
  void collectLossy(std::vector<std::string> &out) const override {
    inner.collectLossy(out);
  }

private:
  PassManager inner;
  unsigned count;
};

} // namespace qopt

#endif // QOPT_PASSES_PASSMANAGER_H
