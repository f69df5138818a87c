//===- InterpreterBench.cpp - Reference interpreter speed -----------------===//
//
// One batch-1 inference of ../shared/models/resnet18_qat.onnx (or
// $QOPT_BENCH_MODEL) on the reference interpreter, single-threaded. The
// interpreter is the correctness reference, not the fast path; the target
// is only that real models stay usable in tests (under 5 s).
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/Graph.h"
#include "qopt/Interpreter/Interpreter.h"
#include "qopt/Onnx/ModelIO.h"

#include "benchmark/benchmark.h"

using namespace qopt;

static void BM_InterpretResNet18(benchmark::State &state) {
  const char *env = std::getenv("QOPT_BENCH_MODEL");
  std::string path = env ? env : QOPT_SHARED_DIR "/models/resnet18_qat.onnx";
  Context ctx;
  auto model = loadModelFile(path, ctx);
  if (!model) {
    state.SkipWithError(llvm::toString(model.takeError()).c_str());
    return;
  }
  auto reference = interp::Interpreter::create(**model);
  if (!reference) {
    state.SkipWithError(llvm::toString(reference.takeError()).c_str());
    return;
  }
  auto inputs = interp::makeRandomInputs((*model)->getGraph(), 1, {},
                                         interp::InputDistribution::ImageNet);
  if (!inputs) {
    state.SkipWithError(llvm::toString(inputs.takeError()).c_str());
    return;
  }
  for (auto _ : state) {
    auto out = (*reference)->run(*inputs);
    if (!out) {
      state.SkipWithError(llvm::toString(out.takeError()).c_str());
      return;
    }
    benchmark::DoNotOptimize(out->data());
  }
}
BENCHMARK(BM_InterpretResNet18)->Unit(benchmark::kMillisecond)->Iterations(5);

BENCHMARK_MAIN();
