//===- PlanFileFuzzer.cpp - libFuzzer target: the .qplan reader -----------===//
//
// Any bytes: reading fails with a one-line error or gives a plan that passed
// the verifier. Inputs that start with the magic are read a second time with
// their size and checksum fixed up, so that mutations reach the fields
// behind the checksum. A plan that reads runs once on zero inputs (when its
// arena is small): the verifier's promise is that it touches no byte
// outside its tensors, which the sanitizers check.
//
//===----------------------------------------------------------------------===//

#include "qopt/Runtime/PlanFile.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/xxhash.h"

#include <cstdlib>

using namespace qopt;
using namespace qopt::rt;

static void readAndRun(llvm::StringRef bytes) {
  auto plan = readPlan(bytes, Isa::Scalar);
  if (!plan) {
    std::string msg = llvm::toString(plan.takeError());
    if (msg.find('\n') != std::string::npos)
      std::abort(); // errors are one line
    return;
  }
  if ((*plan)->arenaBytes > (size_t(1) << 24))
    return;
  std::map<std::string, Tensor> inputs;
  for (int id : (*plan)->inputs) {
    const PlanTensor &t = (*plan)->tensors[id];
    inputs[t.name] = Tensor(t.kind, t.shape);
  }
  PlanRunOptions options;
  options.threads = 1;
  llvm::consumeError((*plan)->run(inputs, options).takeError());
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  readAndRun(bytes);
  if (size >= 32 && isPlanFile(bytes)) {
    std::string sealed = bytes.str();
    llvm::support::endian::write64le(&sealed[16], sealed.size());
    llvm::support::endian::write64le(
        &sealed[24], llvm::xxHash64(llvm::StringRef(sealed).drop_front(32)));
    readAndRun(sealed);
  }
  return 0;
}
