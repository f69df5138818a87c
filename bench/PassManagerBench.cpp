//===- PassManagerBench.cpp - Pass-manager overhead -----------------------===//
//
// A pipeline of 20 no-op passes over a synthetic 10,000-node graph, with
// and without the standard instrumentation (-verify-each on, as qopt runs by
// default). Reported per pass: the pass manager's own cost.
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/Graph.h"
#include "qopt/Passes/PassManager.h"
#include "qopt/Passes/StandardInstrumentations.h"

#include "benchmark/benchmark.h"

using namespace qopt;

namespace {

struct NoOpPass : PassInfoMixin<NoOpPass> {
  PreservedAnalyses run(Graph &, AnalysisManager &) {
    return PreservedAnalyses::all();
  }
};

/// A pass that claims to change the graph, so analyses are invalidated.
struct ClaimsChangePass : PassInfoMixin<ClaimsChangePass> {
  PreservedAnalyses run(Graph &, AnalysisManager &) {
    return PreservedAnalyses::none();
  }
};

void buildChain(Graph &g, Context &ctx, int nodes) {
  auto *t = ctx.getTensorType(llvm::ArrayRef<int64_t>{1, 64},
                              ctx.getElementType(ElementKind::F32));
  Value *v = g.addInput(t, "x");
  for (int i = 0; i < nodes; ++i)
    v = g.createNode(i % 2 ? "onnx.Relu" : "onnx.Sigmoid", {v},
                     {{t, "v" + std::to_string(i)}})
            ->getResult();
  g.addOutput(v);
}

template <typename PassT> void runPipeline(benchmark::State &state) {
  Context ctx;
  Graph g(ctx);
  buildChain(g, ctx, 10000);
  PassManager pm;
  for (int i = 0; i < 20; ++i)
    pm.addPass(PassT(), "noop");
  bool instrumented = state.range(0);
  for (auto _ : state) {
    PassInstrumentation pi;
    InstrumentationOptions io; // verify-each on by default
    StandardInstrumentations si(io);
    if (instrumented)
      si.registerCallbacks(pi);
    AnalysisManager am(instrumented ? &pi : nullptr);
    pm.run(g, am);
  }
  state.counters["us_per_pass"] =
      benchmark::Counter(20, benchmark::Counter::kIsIterationInvariantRate |
                                 benchmark::Counter::kInvert);
  state.counters["us_per_pass"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * 20,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_NoOpPasses(benchmark::State &state) { runPipeline<NoOpPass>(state); }
void BM_ChangingPasses(benchmark::State &state) {
  runPipeline<ClaimsChangePass>(state);
}

} // namespace

// Arg 0: bare pass manager; arg 1: with -verify-each instrumentation.
BENCHMARK(BM_NoOpPasses)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ChangingPasses)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
