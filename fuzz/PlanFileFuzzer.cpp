//===- PlanFileFuzzer.cpp - libFuzzer target: the plan readers ------------===//
//
// Any bytes, as a .qplan file or (when they look like one) a text plan:
// reading fails with a one-line error or gives a plan that passed
// the verifier and the resource limits. Inputs that start with the magic
// are read a second time with their size and checksum fixed up, so that
// mutations reach the fields behind the checksum; the last byte picks the
// instruction set the weights are packed for. A plan that reads runs once
// on zero inputs: the verifier's promise is that it touches no byte outside
// its tensors (the sanitizers check), and the limits' that it costs at most
// what they allow (set small here: 64 MiB, 2^27 MACs; libFuzzer's -timeout
// and -rss_limit_mb check).
//
// Besides libFuzzer's byte mutations, half the mutations are geometry-aware:
// a plan (a binary one through its text form) has one number of one field
// line replaced by a value at an edge of what the verifier must weigh
// (0, 1, -1, a neighbour's value +-1, 2^31, 2^62, ...): a window larger than
// its input, a stride past it, a shape one off its step's, a pad that puts
// every window in the padding.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/PlanFile.h"
#include "qopt/Support/ResourceLimits.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

#include "llvm/Support/Casting.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/xxhash.h"

#include <cstdlib>
#include <cstring>
#include <random>

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

static void readAndRun(llvm::StringRef bytes, Isa isa) {
  auto plan =
      isPlanText(bytes) ? parsePlanText(bytes, isa) : readPlan(bytes, isa);
  if (!plan) {
    std::string msg = llvm::toString(plan.takeError());
    if (msg.find('\n') != std::string::npos)
      std::abort(); // errors are one line
    return;
  }
  if (!(*plan)->isPlaced())
    return;
  std::map<std::string, Tensor> inputs;
  for (int id : (*plan)->inputs) {
    const PlanTensor &t = (*plan)->tensors[id];
    inputs[t.name] = Tensor(t.kind, t.shape);
  }
  llvm::consumeError((*plan)->run(inputs, PlanRunOptions(1)).takeError());
}

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  ResourceLimits limits;
  limits.memoryBytes = uint64_t(64) << 20;
  limits.work = uint64_t(1) << 27;
  setResourceLimits(limits);
  return 0;
}

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

/// One number of one field line of the text plan `text` replaced by an
/// edge value; false if the text has no such number.
static bool mutateGeometry(std::string &text, std::mt19937_64 &rng) {
  // The numbers outside the resources (blobs are bytes, not geometry).
  struct Number {
    size_t begin, end;
  };
  llvm::StringRef all(text);
  size_t stop = all.find("\nresources:");
  if (stop == llvm::StringRef::npos)
    stop = all.size();
  std::vector<Number> numbers;
  for (size_t i = 0; i < stop;) {
    bool sign = text[i] == '-' && i + 1 < stop && llvm::isDigit(text[i + 1]);
    if (!(llvm::isDigit(text[i]) || sign) ||
        (i > 0 && (llvm::isAlnum(text[i - 1]) || text[i - 1] == '.' ||
                   text[i - 1] == '%'))) {
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < stop && llvm::isDigit(text[j]))
      ++j;
    if (j >= stop || text[j] != '.') // floats are scales, not geometry
      numbers.push_back({i, j});
    i = j;
  }
  if (numbers.empty())
    return false;
  size_t pick = rng() % numbers.size();
  const Number &n = numbers[pick];
  int64_t old = 0;
  llvm::StringRef(text).slice(n.begin, n.end).getAsInteger(10, old);
  int64_t neighbour = old;
  if (numbers.size() > 1) {
    const Number &m =
        numbers[(pick + 1 + rng() % (numbers.size() - 1)) % numbers.size()];
    llvm::StringRef(text).slice(m.begin, m.end).getAsInteger(10, neighbour);
  }
  // Wrapping arithmetic: the fields hold any int64.
  auto plus = [](int64_t a, int64_t b) {
    return int64_t(uint64_t(a) + uint64_t(b));
  };
  const int64_t edges[] = {0,
                           1,
                           -1,
                           2,
                           plus(old, 1),
                           plus(old, -1),
                           plus(old, old),
                           neighbour,
                           plus(neighbour, 1),
                           plus(neighbour, -1),
                           int64_t(1) << 31,
                           (int64_t(1) << 31) - 1,
                           int64_t(1) << 32,
                           int64_t(1) << 62,
                           INT64_MAX,
                           INT64_MIN};
  int64_t value = edges[rng() % (sizeof(edges) / sizeof(edges[0]))];
  text.replace(n.begin, n.end - n.begin, std::to_string(value));
  return true;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned int seed) {
  std::mt19937_64 rng(seed);
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  if (rng() % 2 == 0)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::string text;
  if (isPlanText(bytes)) {
    text = bytes.str();
  } else if (isPlanFile(bytes)) {
    auto plan = readPlan(bytes, Isa::Scalar);
    if (!plan) {
      llvm::consumeError(plan.takeError());
      return LLVMFuzzerMutate(data, size, maxSize);
    }
    auto printed = printPlanText(**plan);
    if (!printed) {
      llvm::consumeError(printed.takeError());
      return LLVMFuzzerMutate(data, size, maxSize);
    }
    text = std::move(*printed);
  }
  if (text.empty() || !mutateGeometry(text, rng) || text.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, text.data(), text.size());
  return text.size();
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
