//===- KernelBench.cpp - int8 kernels against the machine's own peak ------===//
//
//   qopt-bench-kernels [--benchmark_filter=...]
//
// First measures each family's peak with a register-only loop (KernelPeak.h)
// on this machine, then times the int8 conv step on each of ResNet-18's
// convolution shapes (224x224 input, batch 1) for every family the machine
// runs, reporting GMAC/s and the share of that family's peak; and the conv
// epilogue (s32 sums to stored bytes) at each width the machine runs, 8
// lanes (avx2, avxvnni) and 16 (avx512vnni, amx), in ns per output
// element; and the depthwise 3x3/5x5 convs of MobileNet V2 and V3 shapes,
// which move few MACs per byte, in GB/s (input and output bytes) against
// this machine's measured copy bandwidth as well as GMAC/s against the
// peak. The conv_cold cases run the same convs with the caches flushed
// (256 MiB written) before each timed run but for the input, output and
// scratch: the weights come from memory, as in a network's one pass over
// its layers. The int4 cases run the weight-only 4-bit GEMM (Int4Gemm.h)
// on a 4096 x 4096 layer, block 128: decode (1 row) with the caches
// flushed, in GB/s of codes and scales read against this machine's
// measured read bandwidth (decode only reads its weights once), and
// prefill (128 rows) in GMAC/s. One thread: the figures are per core.
//
//===----------------------------------------------------------------------===//

#include "EpilogueKernels.h" // lib/Kernels
#include "qopt/Kernels/Int4DotGemm.h"
#include "qopt/Kernels/Int4Gemm.h"
#include "qopt/Kernels/Int8Conv.h"
#include "qopt/Kernels/KernelPeak.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>

using namespace qopt;
using namespace qopt::kernels;

namespace {

std::map<Isa, double> peakGmacs; // measured in main()
double copyGBs = 0;              // measured in main()
double readGBs = 0;              // measured in main()

struct ConvCase {
  const char *name;
  int64_t size, inC, outC, kernel, stride, pad, groups = 1;
};

/// Bytes written between the timed runs of a "cold" conv case: more than
/// the last-level cache, so that the weights come from memory, as they do
/// in a network's single pass over its layers.
constexpr size_t kEvictionBytes = size_t(256) << 20;

/// Depthwise convs of MobileNet V2 (3x3) and V3-Small (3x3, 5x5): one
/// channel per group.
const ConvCase kDepthwiseConvs[] = {
    {"dw3x3_112x112x32", 112, 32, 32, 3, 1, 1, 32},
    {"dw3x3s2_112x112x96", 112, 96, 96, 3, 2, 1, 96},
    {"dw3x3_56x56x144", 56, 144, 144, 3, 1, 1, 144},
    {"dw3x3_28x28x192", 28, 192, 192, 3, 1, 1, 192},
    {"dw3x3_14x14x384", 14, 384, 384, 3, 1, 1, 384},
    {"dw3x3_14x14x576", 14, 576, 576, 3, 1, 1, 576},
    {"dw3x3_7x7x960", 7, 960, 960, 3, 1, 1, 960},
    {"dw5x5s2_28x28x96", 28, 96, 96, 5, 2, 2, 96},
    {"dw5x5_7x7x576", 7, 576, 576, 5, 1, 2, 576},
};

/// A large memcpy's bandwidth (read and write bytes), GB/s, one thread.
double measureCopyGBs() {
  const size_t bytes = size_t(256) << 20;
  std::vector<char> a(bytes, 1), b(bytes, 2);
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    auto start = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    benchmark::DoNotOptimize(b.data());
    double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    best = std::max(best, 2.0 * bytes / s * 1e-9);
  }
  return best;
}

/// ResNet-18's convolutions (input side and channels, kernel side, stride,
/// pad): the stem, the 3x3s and the 1x1 downsamples.
const ConvCase kResNet18Convs[] = {
    {"stem_7x7s2_224x224x3_64", 224, 3, 64, 7, 2, 3},
    {"layer1_3x3_56x56x64", 56, 64, 64, 3, 1, 1},
    {"layer2_3x3s2_56x56x64_128", 56, 64, 128, 3, 2, 1},
    {"layer2_1x1s2_56x56x64_128", 56, 64, 128, 1, 2, 0},
    {"layer2_3x3_28x28x128", 28, 128, 128, 3, 1, 1},
    {"layer3_3x3s2_28x28x128_256", 28, 128, 256, 3, 2, 1},
    {"layer3_1x1s2_28x28x128_256", 28, 128, 256, 1, 2, 0},
    {"layer3_3x3_14x14x256", 14, 256, 256, 3, 1, 1},
    {"layer4_3x3s2_14x14x256_512", 14, 256, 512, 3, 2, 1},
    {"layer4_1x1s2_14x14x256_512", 14, 256, 512, 1, 2, 0},
    {"layer4_3x3_7x7x512", 7, 512, 512, 3, 1, 1},
};

void benchConv(benchmark::State &state, Isa isa, ConvCase c, bool cold) {
  Int8ConvShape s;
  s.inH = s.inW = c.size;
  s.inC = c.inC;
  s.outC = c.outC;
  s.kernelH = s.kernelW = c.kernel;
  s.strideH = s.strideW = c.stride;
  s.padTop = s.padLeft = s.padBottom = s.padRight = c.pad;
  s.groups = c.groups;
  std::mt19937 rng(1);
  std::vector<uint8_t> x(s.inH * s.inW * s.inC);
  std::vector<int8_t> w(s.outC * (s.inC / c.groups) * c.kernel * c.kernel);
  for (auto &v : x)
    v = uint8_t(rng());
  for (auto &v : w)
    v = int8_t(rng());
  Int8Epilogue e;
  e.scale.assign(s.outC, 0.01f);
  e.inputZero = 128;
  e.activation = Activation::Relu;
  e.outputScale = 0.05f;
  e.outputZero = 0;
  Int8Conv conv(isa, s, w.data(), e);
  std::vector<uint8_t> y(s.outH() * s.outW() * s.outC);
  std::vector<char> scratch(conv.getScratchBytes() + 64);
  void *aligned = reinterpret_cast<void *>(
      (reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t(63));
  std::vector<char> eviction(cold ? kEvictionBytes : 0);
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      std::memset(eviction.data(), int(state.iterations()), eviction.size());
      benchmark::DoNotOptimize(eviction.data());
      // The input, output and scratch as the steps before would leave
      // them: in cache.
      std::memcpy(y.data(), x.data(), std::min(x.size(), y.size()));
      std::memset(scratch.data(), 0, scratch.size());
      state.ResumeTiming();
    }
    conv.run(x.data(), nullptr, y.data(), 0, conv.getNumRows(), aligned);
    benchmark::ClobberMemory();
  }
  double macs = double(s.outH() * s.outW()) * s.outC * (s.inC / c.groups) *
                c.kernel * c.kernel;
  if (c.groups > 1) {
    double bytes = double(x.size() + y.size());
    state.counters["GB/s"] = benchmark::Counter(
        bytes * 1e-9 * state.iterations(), benchmark::Counter::kIsRate);
    if (copyGBs > 0)
      state.counters["of_copy"] =
          benchmark::Counter(bytes * 1e-9 * state.iterations() / copyGBs,
                             benchmark::Counter::kIsRate);
  }
  state.counters["GMAC/s"] = benchmark::Counter(
      macs * 1e-9 * state.iterations(), benchmark::Counter::kIsRate);
  if (peakGmacs[isa] > 0)
    state.counters["of_peak"] =
        benchmark::Counter(macs * 1e-9 * state.iterations() / peakGmacs[isa],
                           benchmark::Counter::kIsRate);
}

/// One GEMM call's worth of the epilogue (48 pixels x 64 channels, as in
/// ResNet-18's first stage): relu, relu with a residual, SiLU, and a float
/// result.
void benchEpilogue(benchmark::State &state, epilogue::Kernel kernel,
                   epilogue::VectorActivation activation, bool residual,
                   bool quantized) {
  const int64_t pixels = 48, channels = 64;
  std::mt19937 rng(1);
  std::vector<int32_t> acc(pixels * channels), zeroTerms(channels);
  std::vector<float> scales(channels), biases(channels), out(pixels * channels);
  std::vector<uint8_t> residuals(pixels * channels);
  for (auto &v : acc)
    v = int32_t(rng() % 20000) - 10000;
  for (auto &v : scales)
    v = 0.0001f * float(1 + rng() % 10);
  for (auto &v : biases)
    v = 0.01f * float(int(rng() % 100) - 50);
  for (auto &v : residuals)
    v = uint8_t(rng());
  epilogue::Params p{};
  p.zeroTerm = zeroTerms.data();
  p.scale = scales.data();
  p.bias = biases.data();
  p.activation = activation;
  p.hasResidual = residual;
  p.residualScale = 0.02f;
  p.residualZero = 3;
  p.outputScale = quantized ? 0.05f : 0;
  p.outputZero = 2;
  for (auto _ : state) {
    kernel(p, acc.data(), pixels, channels,
           residual ? residuals.data() : nullptr, out.data(), channels);
    benchmark::ClobberMemory();
  }
  state.counters["per_element"] = benchmark::Counter(
      double(pixels * channels) * state.iterations(),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

/// A large buffer's read bandwidth, GB/s, one thread (a sum that the
/// compiler vectorizes).
double measureReadGBs() {
  const size_t count = (size_t(256) << 20) / sizeof(uint64_t);
  std::vector<uint64_t> a(count, 1);
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    auto start = std::chrono::steady_clock::now();
    uint64_t sum = 0;
    for (uint64_t v : a)
      sum += v;
    benchmark::DoNotOptimize(sum);
    double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    best = std::max(best, double(count * sizeof(uint64_t)) / s * 1e-9);
  }
  return best;
}

/// The weight-only 4-bit GEMM on a k x n layer (block 128, int4 without
/// zero points), `rows` rows; `cold` flushes the caches before each run;
/// `int8Rows` runs the integer kernel (Int4DotGemm.h) instead of the f32 one.
void benchInt4(benchmark::State &state, Isa isa, int64_t rows, bool cold,
               bool int8Rows) {
  const int64_t k = 4096, n = 4096, block = 128;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> code(-8, 7);
  std::vector<int8_t> q(size_t(k * n));
  for (int8_t &v : q)
    v = int8_t(code(rng));
  std::vector<float> scales(size_t(k / block * n), 0.01f);
  Int4Weights w =
      Int4Weights::pack(q.data(), k, n, block, true, scales.data(), nullptr);
  std::vector<float> x(size_t(rows * k), 0.5f), y(size_t(rows * n));
  std::vector<float> scratch(int4GemmScratchBytes(w, rows) / sizeof(float) + 1);
  Int4DotWeights dot;
  std::vector<uint8_t> dotScratch;
  if (int8Rows) {
    dot = Int4DotWeights::pack(w);
    dotScratch.resize(int4DotGemmRowsBytes(dot, rows));
  }
  std::vector<char> evict(cold ? kEvictionBytes : 0);
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      std::memset(evict.data(), int(state.iterations() & 0xFF), evict.size());
      benchmark::ClobberMemory();
      state.ResumeTiming();
    }
    if (int8Rows) {
      int4DotGemmQuantizeRows(x.data(), rows, dot, dotScratch.data());
      int4DotGemm(isa, dotScratch.data(), rows, dot, 0, dot.numPanels(),
                  y.data());
    } else {
      int4Gemm(isa, x.data(), rows, w, 0, w.numPanels(), y.data(),
               scratch.data());
    }
    benchmark::ClobberMemory();
  }
  double weightBytes = double(w.codes.size() + w.scales.size() * 4);
  double macs = double(rows * k * n);
  state.counters["GMAC/s"] = benchmark::Counter(
      macs * state.iterations() * 1e-9, benchmark::Counter::kIsRate);
  state.counters["weight_GB/s"] = benchmark::Counter(
      weightBytes * state.iterations() * 1e-9, benchmark::Counter::kIsRate);
  if (readGBs > 0)
    state.counters["share_of_read_bw"] =
        benchmark::Counter(weightBytes * state.iterations() * 1e-9 / readGBs,
                           benchmark::Counter::kIsRate);
}

} // namespace

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  std::printf("CPU: %s\n", getHostCpuFeatures().model.c_str());
  copyGBs = measureCopyGBs();
  std::printf("copy %.1f GB/s (256 MiB memcpy, read + write, one thread)\n",
              copyGBs);
  readGBs = measureReadGBs();
  std::printf("read %.1f GB/s (256 MiB summed, one thread)\n", readGBs);
  for (Isa isa : getSupportedIsas()) {
    peakGmacs[isa] = measurePeakGmacs(isa);
    if (peakGmacs[isa] > 0)
      std::printf("peak %-10s %7.1f GMAC/s per core (register-only loop)\n",
                  getIsaName(isa).str().c_str(), peakGmacs[isa]);
    for (const ConvCase &c : kResNet18Convs)
      benchmark::RegisterBenchmark(
          ("conv/" + getIsaName(isa).str() + "/" + c.name).c_str(), benchConv,
          isa, c, false)
          ->Unit(benchmark::kMicrosecond);
    for (const ConvCase &c : kResNet18Convs)
      benchmark::RegisterBenchmark(
          ("conv_cold/" + getIsaName(isa).str() + "/" + c.name).c_str(),
          benchConv, isa, c, true)
          ->Unit(benchmark::kMicrosecond);
    for (const ConvCase &c : kDepthwiseConvs)
      benchmark::RegisterBenchmark(
          ("depthwise/" + getIsaName(isa).str() + "/" + c.name).c_str(),
          benchConv, isa, c, false)
          ->Unit(benchmark::kMicrosecond);
    // The AVX2 and AVX-512 kernels (the scalar one takes minutes a run).
    if (isa == Isa::Avx2 || isa == Isa::Avx512Vnni) {
      benchmark::RegisterBenchmark(
          ("int4/" + getIsaName(isa).str() + "/decode_4096x4096_cold").c_str(),
          benchInt4, isa, 1, true, false)
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(
          ("int4/" + getIsaName(isa).str() + "/prefill128_4096x4096").c_str(),
          benchInt4, isa, 128, false, false)
          ->Unit(benchmark::kMillisecond);
    }
    // The integer kernel, x rounded to int8 (AVX-512 VNNI).
    if (isa == Isa::Avx512Vnni) {
      benchmark::RegisterBenchmark(
          ("int4_int8/" + getIsaName(isa).str() + "/decode_4096x4096_cold")
              .c_str(),
          benchInt4, isa, 1, true, true)
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(
          ("int4_int8/" + getIsaName(isa).str() + "/prefill128_4096x4096")
              .c_str(),
          benchInt4, isa, 128, false, true)
          ->Unit(benchmark::kMillisecond);
    }
  }
  // Each epilogue width the machine runs: 8 lanes (AVX2 and AVX-VNNI
  // families), 16 lanes (the AVX-512 ones).
  struct EpilogueWidth {
    const char *name;
    Isa needs;
    epilogue::Kernel kernel;
  };
  for (const EpilogueWidth &width :
       {EpilogueWidth{"avx2", Isa::Avx2, epilogue::avx2},
        EpilogueWidth{"avx512", Isa::Avx512Vnni, epilogue::avx512}}) {
    if (!getHostCpuFeatures().supports(width.needs))
      continue;
    using epilogue::VectorActivation;
    struct EpilogueCase {
      const char *name;
      VectorActivation activation;
      bool residual, quantized;
    };
    for (const EpilogueCase &c :
         {EpilogueCase{"relu", VectorActivation::Relu, false, true},
          EpilogueCase{"relu_residual", VectorActivation::Relu, true, true},
          EpilogueCase{"silu", VectorActivation::Silu, false, true},
          EpilogueCase{"none_float", VectorActivation::None, false, false}})
      benchmark::RegisterBenchmark(
          (std::string("epilogue/") + width.name + "/" + c.name).c_str(),
          benchEpilogue, width.kernel, c.activation, c.residual, c.quantized)
          ->Unit(benchmark::kMicrosecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
