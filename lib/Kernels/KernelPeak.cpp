//===- KernelPeak.cpp - Timing the register-only multiply-add loops -------===//

#include "qopt/Kernels/KernelPeak.h"
#include "PeakLoops.h"

#include <algorithm>
#include <chrono>

using namespace qopt;
using namespace qopt::kernels;

double kernels::measurePeakGmacs(Isa isa) {
  int64_t (*loop)(int64_t, int32_t *) = nullptr;
  switch (isa) {
  case Isa::Avx2:
    loop = peak::peakAvx2;
    break;
  case Isa::AvxVnni:
    loop = peak::peakAvxVnni;
    break;
  case Isa::Avx512Vnni:
    loop = peak::peakAvx512Vnni;
    break;
  case Isa::Amx:
    loop = peak::peakAmx;
    break;
  case Isa::Scalar:
    return 0;
  }
  if (!getHostCpuFeatures().supports(isa))
    return 0;
  using Clock = std::chrono::steady_clock;
  auto seconds = [&](int64_t iterations, int64_t &macs) {
    int32_t sink = 0;
    Clock::time_point start = Clock::now();
    macs = loop(iterations, &sink);
    std::chrono::duration<double> took = Clock::now() - start;
    static volatile int32_t kept;
    kept = sink; // the loop's result is used
    return took.count();
  };
  // Grow the round until it takes 10 ms (the clock's ramp and the timer's
  // resolution are then small), then keep the best of three.
  int64_t iterations = 1 << 14, macs = 0;
  while (seconds(iterations, macs) < 0.01 && iterations < (int64_t(1) << 40))
    iterations *= 2;
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    double took = seconds(iterations, macs);
    if (took > 0)
      best = std::max(best, double(macs) / took / 1e9);
  }
  return best;
}
