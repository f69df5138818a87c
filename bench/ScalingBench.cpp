//===- ScalingBench.cpp - End-to-end time as the graph grows --------------===//
//
// Does qopt stay linear in the size of the model? Synthetic models of
// N = 10k, 100k and 1M nodes are built through the IR API (not timed), then
// timed end to end as a user runs them:
//
//   export to ONNX bytes -> import -> -passes=cse,dce with -verify-each
//     -> verify -> export
//
// Shapes (each stresses a different structure):
//   chain        N alternating Relu/Sigmoid, one after the other
//   fanout-same  N/2 identical Relu(%x) summed by an Add chain: cse merges
//                them, so %x loses N/2 uses one at a time
//   fanout-attrs N/2 LeakyRelu(%x) {alpha = i} summed by an Add chain: %x
//                keeps N/2 uses through every verification, and cse must
//                tell N/2 alphas apart
//   qdq-mix      blocks of Q -> 2 DQ -> Relu/Sigmoid -> Mul, Mul (duplicate,
//                merged by cse), Neg (dead, removed by dce), LeakyRelu, Add
//
// One line per case: total time, the ratio to the 10k case of the same
// shape and to the previous size (linear growth is ~10x per step), time per
// node, the phases and the process's peak RSS so far.
//
//   qopt-bench-scaling [--sizes=10000,100000,1000000] [benchmark flags]
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/Graph.h"
#include "qopt/IR/Verifier.h"
#include "qopt/Onnx/OnnxExporter.h"
#include "qopt/Onnx/OnnxImporter.h"
#include "qopt/Passes/PassPlugin.h"
#include "qopt/Passes/PassRegistry.h"
#include "qopt/Passes/StandardInstrumentations.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "benchmark/benchmark.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>

using namespace qopt;

namespace {

const char *gArgv0 = "qopt-bench-scaling";

enum class Shape { Chain, FanOutSame, FanOutAttrs, QdqMix };

struct ShapeInfo {
  Shape shape;
  const char *name;
};
const ShapeInfo kShapes[] = {{Shape::Chain, "chain"},
                             {Shape::FanOutSame, "fanout-same"},
                             {Shape::FanOutAttrs, "fanout-attrs"},
                             {Shape::QdqMix, "qdq-mix"}};

/// Builds a model of about `n` nodes with one input %x and one output.
std::unique_ptr<Model> buildModel(Context &ctx, Shape shape, int64_t n) {
  auto m = std::make_unique<Model>(ctx);
  m->opsetImports.push_back({"", 13});
  m->producerName = "qopt-bench-scaling";
  Graph &g = m->getGraph();
  const TensorType *f = ctx.getTensorType(llvm::ArrayRef<int64_t>{1, 16},
                                          ctx.getElementType(ElementKind::F32));
  Value *x = g.addInput(f, "x");
  auto node = [&](llvm::StringRef op, llvm::ArrayRef<Value *> operands,
                  std::string name, const TensorType *t = nullptr,
                  std::vector<NamedAttribute> attrs = {}) {
    return g
        .createNode(op, operands, {{t ? t : f, std::move(name)}},
                    std::move(attrs))
        ->getResult();
  };
  Value *out = x;
  switch (shape) {
  case Shape::Chain:
    for (int64_t i = 0; i < n; ++i)
      out = node(i % 2 ? "onnx.Sigmoid" : "onnx.Relu", {out},
                 "c" + std::to_string(i));
    break;
  case Shape::FanOutSame:
  case Shape::FanOutAttrs: {
    bool attrs = shape == Shape::FanOutAttrs;
    out = nullptr;
    for (int64_t i = 0; i < n / 2; ++i) {
      std::string id = std::to_string(i);
      Value *r =
          attrs ? node("onnx.LeakyRelu", {x}, "r" + id, nullptr,
                       {{"alpha", Attribute(1e-6f * static_cast<float>(i))}})
                : node("onnx.Relu", {x}, "r" + id);
      out = out ? node("onnx.Add", {out, r}, "s" + id) : r;
    }
    break;
  }
  case Shape::QdqMix:
    for (int64_t b = 0; b < n / 10; ++b) {
      std::string id = std::to_string(b);
      const QuantType *qt = ctx.getPerTensorQuantType(
          ElementKind::U8, ElementKind::F32,
          0.01f + 0.0001f * static_cast<float>(b % 100), 128);
      Value *q = node("q.quantize", {out}, "q" + id, f->withElementType(qt));
      Value *d1 = node("q.dequantize", {q}, "d" + id + "a");
      Value *d2 = node("q.dequantize", {q}, "d" + id + "b");
      Value *r = node("onnx.Relu", {d1}, "r" + id);
      Value *s = node("onnx.Sigmoid", {d2}, "s" + id);
      Value *m1 = node("onnx.Mul", {r, s}, "m" + id + "a");
      Value *m2 = node("onnx.Mul", {r, s}, "m" + id + "b");
      node("onnx.Neg", {m1}, "dead" + id);
      Value *l = node("onnx.LeakyRelu", {m1}, "l" + id, nullptr,
                      {{"alpha", Attribute(0.01f)}});
      out = node("onnx.Add", {l, m2}, "h" + id);
    }
    break;
  }
  g.addOutput(out);
  return m;
}

/// The pass registry with the built-in plugins, loaded once.
PassRegistry &registry() {
  static PassRegistry *r = [] {
    auto *reg = new PassRegistry;
    registerCoreAnalyses(*reg);
    for (const std::string &dir :
         defaultPluginDirectories(gArgv0, reinterpret_cast<void *>(&registry)))
      if (llvm::sys::fs::is_directory(dir))
        if (auto err = loadPluginsFromDirectory(dir, *reg))
          llvm::errs() << "qopt-bench-scaling: " << toString(std::move(err))
                       << "\n";
    return reg;
  }();
  return *r;
}

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct Phases {
  double exportMs = 0, importMs = 0, passesMs = 0, verifyMs = 0, reexportMs = 0;
  size_t importedNodes = 0, finalNodes = 0;
  double total() const {
    return exportMs + importMs + passesMs + verifyMs + reexportMs;
  }
};

/// One end-to-end run; an error message on failure.
std::string runOnce(const Model &built, Phases &p) {
  Clock::time_point t = Clock::now();
  std::string bytes;
  {
    llvm::raw_string_ostream os(bytes);
    if (auto err = exportOnnx(built, os))
      return "export: " + toString(std::move(err));
  }
  p.exportMs += msSince(t);

  t = Clock::now();
  Context ctx;
  auto model = importOnnxBuffer(bytes, ".", ctx);
  if (!model)
    return "import: " + toString(model.takeError());
  p.importMs += msSince(t);
  p.importedNodes = (*model)->getGraph().getNumNodes();

  t = Clock::now();
  auto pm = registry().parsePipeline("cse,dce");
  if (!pm)
    return "pipeline: " + toString(pm.takeError());
  PassInstrumentation pi;
  InstrumentationOptions io; // verify-each on, as qopt runs by default
  StandardInstrumentations si(io);
  si.registerCallbacks(pi);
  AnalysisManager am(&pi);
  registry().nameAnalyses(am);
  if (auto err = pm->runAndCheck((*model)->getGraph(), am))
    return "passes: " + toString(std::move(err));
  p.passesMs += msSince(t);
  p.finalNodes = (*model)->getGraph().getNumNodes();

  t = Clock::now();
  if (auto err = verifyModel(**model))
    return "verify: " + toString(std::move(err));
  p.verifyMs += msSince(t);

  t = Clock::now();
  std::string out;
  {
    llvm::raw_string_ostream os(out);
    if (auto err = exportOnnx(**model, os))
      return "re-export: " + toString(std::move(err));
  }
  p.reexportMs += msSince(t);
  return {};
}

/// Per shape: (size, total ms) of its smallest and of its previous case.
struct History {
  std::pair<int64_t, double> first, previous;
};
std::map<std::string, History> &history() {
  static std::map<std::string, History> h;
  return h;
}

void runCase(benchmark::State &state, const ShapeInfo &info, int64_t n) {
  Context ctx;
  std::unique_ptr<Model> built = buildModel(ctx, info.shape, n);
  Phases p;
  int64_t runs = 0;
  for (auto _ : state) {
    std::string err = runOnce(*built, p);
    if (!err.empty()) {
      state.SkipWithError(err.c_str());
      return;
    }
    ++runs;
    state.SetIterationTime(p.total() / runs / 1000.0);
  }
  double total = p.total() / runs;
  auto inserted =
      history().try_emplace(info.name, History{{n, total}, {n, total}});
  History &h = inserted.first->second;
  state.counters["ratio"] = total / h.first.second;
  state.counters["step"] = total / h.previous.second;
  state.counters["is_base"] = inserted.second;
  h.previous = {n, total};
  state.SetLabel(info.name);
  state.counters["nodes"] =
      static_cast<double>(built->getGraph().getNumNodes());
  state.counters["imported"] = static_cast<double>(p.importedNodes);
  state.counters["after"] = static_cast<double>(p.finalNodes);
  state.counters["total_ms"] = total;
  state.counters["export_ms"] = p.exportMs / runs;
  state.counters["import_ms"] = p.importMs / runs;
  state.counters["passes_ms"] = p.passesMs / runs;
  state.counters["verify_ms"] = p.verifyMs / runs;
  state.counters["reexport_ms"] = p.reexportMs / runs;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  state.counters["peak_rss_mb"] = static_cast<double>(ru.ru_maxrss) / 1024;
}

/// Prints the table: one line per case.
class TableReporter : public benchmark::BenchmarkReporter {
public:
  bool ReportContext(const Context &context) override {
    std::printf("qopt scaling: export -> import -> cse,dce (verify-each) -> "
                "verify -> export\n");
    std::printf("%-13s %9s %9s %9s %10s %8s %7s %8s %8s %8s %8s %8s %8s "
                "%7s\n",
                "case", "nodes", "imported", "after", "total_ms", "ratio",
                "step", "us/node", "export", "import", "passes", "verify",
                "reexp", "rss_mb");
    return true;
  }
  void ReportRuns(const std::vector<Run> &runs) override {
    for (const Run &r : runs) {
      if (r.error_occurred) {
        std::printf("%-40s error: %s\n", r.benchmark_name().c_str(),
                    r.error_message.c_str());
        continue;
      }
      auto c = [&](const char *k) {
        auto it = r.counters.find(k);
        return it == r.counters.end() ? 0.0 : it->second.value;
      };
      char ratio[32], step[32];
      if (c("is_base")) {
        std::snprintf(ratio, sizeof ratio, "base");
        std::snprintf(step, sizeof step, "-");
      } else {
        std::snprintf(ratio, sizeof ratio, "%.1fx", c("ratio"));
        std::snprintf(step, sizeof step, "%.1fx", c("step"));
      }
      std::printf("%-13s %9.0f %9.0f %9.0f %10.1f %8s %7s %8.2f %8.1f %8.1f "
                  "%8.1f %8.1f %8.1f %7.0f\n",
                  r.report_label.c_str(), c("nodes"), c("imported"), c("after"),
                  c("total_ms"), ratio, step, 1000 * c("total_ms") / c("nodes"),
                  c("export_ms"), c("import_ms"), c("passes_ms"),
                  c("verify_ms"), c("reexport_ms"), c("peak_rss_mb"));
      std::fflush(stdout);
    }
  }
  void Finalize() override {
    std::printf("ratio: total time over the smallest size of the same case; "
                "step: over the previous size (sizes grow 10x: linear is "
                "~10x per step)\n");
  }
};

/// Takes --sizes=a,b,c out of argv.
std::vector<int64_t> takeSizes(int &argc, char **argv) {
  std::vector<int64_t> sizes = {10000, 100000, 1000000};
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (!arg.consume_front("--sizes=")) {
      argv[out++] = argv[i];
      continue;
    }
    sizes.clear();
    llvm::SmallVector<llvm::StringRef, 4> parts;
    arg.split(parts, ',', -1, false);
    for (llvm::StringRef part : parts) {
      int64_t v;
      if (part.getAsInteger(10, v) || v < 10) {
        std::fprintf(stderr, "qopt-bench-scaling: bad size '%s'\n",
                     part.str().c_str());
        std::exit(1);
      }
      sizes.push_back(v);
    }
  }
  argc = out;
  std::sort(sizes.begin(), sizes.end());
  return sizes;
}

} // namespace

int main(int argc, char **argv) {
  gArgv0 = argv[0];
  std::vector<int64_t> sizes = takeSizes(argc, argv);
  for (const ShapeInfo &info : kShapes)
    for (int64_t n : sizes) {
      std::string name =
          std::string("scaling/") + info.name + "/" + std::to_string(n);
      benchmark::RegisterBenchmark(
          name.c_str(),
          [&info, n](benchmark::State &s) { runCase(s, info, n); })
          // Small cases repeat to average out noise; 1M runs once.
          ->Iterations(std::max<int64_t>(1, 100000 / n))
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  TableReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
