//===- PlanFileFuzzer.cpp - libFuzzer target: the plan readers ------------===//
//
// Any bytes, as a .qplan file or (when they look like one) a text plan:
// reading fails with a one-line error or gives a plan that passed
// the verifier. Inputs that start with the magic are read a second time with
// their size and checksum fixed up, so that mutations reach the fields
// behind the checksum; the last byte picks the instruction set the weights
// are packed for. A plan that reads runs once on zero inputs when the run is
// cheap (a small arena and scratch, few MACs, small pooling windows): the
// verifier's promise is that it touches no byte outside its tensors, which
// the sanitizers check.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/PlanFile.h"

#include "llvm/Support/Casting.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/xxhash.h"

#include <cstdlib>

using namespace qopt;
using namespace qopt::rt;

/// Whether one run of `plan` fits a fuzzing budget (of time and memory;
/// the verifier has seen to safety).
static bool isCheapToRun(const Plan &plan) {
  constexpr int64_t kMaxWork = int64_t(1) << 27;
  if (plan.arenaBytes > (size_t(1) << 24))
    return false;
  int64_t work = 0;
  for (const auto &step : plan.steps) {
    if (step->getScratchBytes() > (size_t(1) << 24))
      return false;
    work += step->getMacs();
    if (const auto *pool = llvm::dyn_cast<PoolStep>(step.get())) {
      const PoolStep::Window &w = pool->getWindow();
      if (w.kernelH * w.kernelW > 4096)
        return false;
      work += w.batch * w.outH * w.outW * w.channels * w.kernelH * w.kernelW;
    }
    if (const auto *pool = llvm::dyn_cast<AveragePoolStep>(step.get())) {
      const PoolStep::Window &w = pool->getParams().window;
      if (w.kernelH * w.kernelW > 4096)
        return false;
      work += w.batch * w.outH * w.outW * w.channels * w.kernelH * w.kernelW;
    }
    if (const auto *resize = llvm::dyn_cast<ResizeStep>(step.get())) {
      const ResizeStep::Geometry &g = resize->getGeometry();
      work += g.batch * g.outH * g.outW * g.channels;
    }
    if (work > kMaxWork)
      return false;
  }
  return true;
}

static void readAndRun(llvm::StringRef bytes, Isa isa) {
  auto plan =
      isPlanText(bytes) ? parsePlanText(bytes, isa) : readPlan(bytes, isa);
  if (!plan) {
    std::string msg = llvm::toString(plan.takeError());
    if (msg.find('\n') != std::string::npos)
      std::abort(); // errors are one line
    return;
  }
  if (!isCheapToRun(**plan) || !(*plan)->isPlaced())
    return;
  std::map<std::string, Tensor> inputs;
  for (int id : (*plan)->inputs) {
    const PlanTensor &t = (*plan)->tensors[id];
    inputs[t.name] = Tensor(t.kind, t.shape);
  }
  llvm::consumeError((*plan)->run(inputs, PlanRunOptions(1)).takeError());
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  static const std::vector<Isa> isas = getSupportedIsas();
  Isa isa = size ? isas[data[size - 1] % isas.size()] : Isa::Scalar;
  readAndRun(bytes, isa);
  if (size >= 32 && isPlanFile(bytes)) {
    std::string sealed = bytes.str();
    llvm::support::endian::write64le(&sealed[16], sealed.size());
    llvm::support::endian::write64le(
        &sealed[24], llvm::xxHash64(llvm::StringRef(sealed).drop_front(32)));
    readAndRun(sealed, isa);
  }
  return 0;
}
