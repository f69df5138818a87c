//===- ImportExportBench.cpp - ONNX import/export speed and memory --------===//
//
// Times import, export and the full import+export of a model (default
// ../shared/models/resnet18_qat.onnx, or $QOPT_BENCH_MODEL) and reports the
// process's peak resident memory as a multiple of the file size. Run one
// benchmark per process (--benchmark_filter) for a clean peak-memory figure;
// bench/run_io_bench.sh does that and adds ONNX Runtime's load time.
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/Graph.h"
#include "qopt/Onnx/OnnxExporter.h"
#include "qopt/Onnx/OnnxImporter.h"

#include "benchmark/benchmark.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <sys/resource.h>

using namespace qopt;

namespace {

std::string modelPath() {
  if (const char *env = std::getenv("QOPT_BENCH_MODEL"))
    return env;
  return QOPT_SHARED_DIR "/models/resnet18_qat.onnx";
}

double peakRssBytes() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;
}

/// Discards bytes but counts them.
class CountingStream : public llvm::raw_ostream {
public:
  uint64_t bytes = 0;
  CountingStream() { SetUnbuffered(); }

private:
  void write_impl(const char *, size_t size) override { bytes += size; }
  uint64_t current_pos() const override { return bytes; }
};

void addMemoryCounters(benchmark::State &state) {
  uint64_t fileSize = 0;
  llvm::sys::fs::file_size(modelPath(), fileSize);
  state.counters["file_MB"] = fileSize / 1e6;
  state.counters["peak_rss_MB"] = peakRssBytes() / 1e6;
  state.counters["peak_over_file"] = peakRssBytes() / fileSize;
}

void BM_Import(benchmark::State &state) {
  for (auto _ : state) {
    Context ctx;
    auto m = importOnnxFile(modelPath(), ctx);
    if (!m) {
      state.SkipWithError(llvm::toString(m.takeError()).c_str());
      return;
    }
    benchmark::DoNotOptimize(m->get());
  }
  addMemoryCounters(state);
}

void BM_Export(benchmark::State &state) {
  Context ctx;
  auto m = importOnnxFile(modelPath(), ctx);
  if (!m) {
    state.SkipWithError(llvm::toString(m.takeError()).c_str());
    return;
  }
  for (auto _ : state) {
    CountingStream os;
    if (auto err = exportOnnx(**m, os)) {
      state.SkipWithError(llvm::toString(std::move(err)).c_str());
      return;
    }
    benchmark::DoNotOptimize(os.bytes);
  }
  addMemoryCounters(state);
}

/// What `qopt in.onnx -o out.onnx` does, minus the file write.
void BM_ImportExport(benchmark::State &state) {
  for (auto _ : state) {
    Context ctx;
    auto m = importOnnxFile(modelPath(), ctx);
    if (!m) {
      state.SkipWithError(llvm::toString(m.takeError()).c_str());
      return;
    }
    CountingStream os;
    if (auto err = exportOnnx(**m, os)) {
      state.SkipWithError(llvm::toString(std::move(err)).c_str());
      return;
    }
    benchmark::DoNotOptimize(os.bytes);
  }
  addMemoryCounters(state);
}

} // namespace

BENCHMARK(BM_Import)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_Export)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_ImportExport)->Unit(benchmark::kMillisecond)->MinTime(2.0);

BENCHMARK_MAIN();
