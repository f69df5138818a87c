//===- Plan.cpp - Running the INT8 CPU execution plan ---------------------===//
//
// One run: an arena of the plan's size, the inputs copied in, each step in
// order with its tiles spread over TBB's workers (each worker with its own
// scratch), the outputs copied out. The arena and scratch are kept for the next
// run.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/Plan.h"
#include "qopt/Plan/Steps/Int4GemmStep.h"
#include "qopt/Plan/Steps/ReformatStep.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/ResourceLimits.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

int64_t PlanTensor::numElements() const {
  // The builder took the shape from a checked static type.
  return shapeNumElements(shape).value_or(0);
}

size_t PlanTensor::byteSize() const {
  return numElements() * getElementByteSize(kind);
}

PlanStep::~PlanStep() = default;

llvm::StringRef PlanStep::getKindName() const {
  static const llvm::StringRef descriptions[] = {
#define PLAN_STEP(KIND, CLASS, SPELLING, DESCRIPTION, VERSION) DESCRIPTION,
#include "qopt/Plan/PlanSteps.def"
  };
  return descriptions[size_t(kind)];
}

const char *PlanRun::read(int id) const {
  const PlanTensor &t = plan.tensors[id];
  if (t.constant)
    return t.constant->bytes();
  return arena + t.arenaOffset;
}

char *PlanRun::write(int id) const {
  return arena + plan.tensors[id].arenaOffset;
}

Tensor PlanRun::copyOut(int id) const {
  const PlanTensor &t = plan.tensors[id];
  if (t.constant)
    return *t.constant;
  if (t.kind == ElementKind::String || !t.byteSize())
    return Tensor(t.kind, t.shape); // no bytes to point to
  return Tensor::copyOf(t.kind, t.shape, read(id));
}

/// Element (n, c, h, w) of a 4-D NCHW shape at its NHWC offset.
static int64_t nhwcOffset(const Shape &s, int64_t nchw) {
  int64_t w = nchw % s[3], h = nchw / s[3] % s[2];
  int64_t c = nchw / (s[3] * s[2]) % s[1], n = nchw / (s[3] * s[2] * s[1]);
  return ((n * s[2] + h) * s[3] + w) * s[1] + c;
}

Tensor PlanRun::readValue(int id) const {
  const PlanTensor &t = plan.tensors[id];
  Tensor stored = copyOut(id);
  if (t.layout == PlanLayout::Onnx)
    return stored;
  Tensor out(t.kind, t.shape);
  size_t size = getElementByteSize(t.kind);
  for (int64_t i = 0, e = t.numElements(); i < e; ++i) {
    std::memcpy(out.bytes() + i * size,
                stored.bytes() + nhwcOffset(t.shape, i) * size, size);
    if (uint8_t flip = t.getStoredFlip())
      out.bytes()[i] ^= flip;
  }
  return out;
}

bool PlanRun::writeValue(int id, const Tensor &value) const {
  const PlanTensor &t = plan.tensors[id];
  if (t.constant || value.kind() != t.kind || value.shape() != t.shape)
    return false;
  char *to = write(id);
  if (t.layout == PlanLayout::Onnx) {
    if (t.byteSize())
      std::memcpy(to, value.bytes(), t.byteSize());
    return true;
  }
  size_t size = getElementByteSize(t.kind);
  for (int64_t i = 0, e = t.numElements(); i < e; ++i) {
    char *at = to + nhwcOffset(t.shape, i) * size;
    std::memcpy(at, value.bytes() + i * size, size);
    if (uint8_t flip = t.getStoredFlip())
      *at ^= flip;
  }
  return true;
}

void Plan::print(llvm::raw_ostream &os) const {
  auto describe = [&](int id) {
    if (id < 0) {
      os << "-";
      return;
    }
    const PlanTensor &t = tensors[id];
    os << "%" << id << " '" << toPrintableLine(t.name) << "' "
       << getElementKindName(t.kind) << shapeToString(t.shape)
       << (t.layout == PlanLayout::Nhwc ? " nhwc" : "")
       << (t.constant ? " const" : "");
  };
  os << "plan: " << steps.size() << " steps, isa " << getIsaName(isa)
     << ", arena " << arenaBytes << " bytes\n";
  for (size_t i = 0; i < steps.size(); ++i) {
    const PlanStep &s = *steps[i];
    os << "  " << i << ": " << s.getKindName();
    if (!s.op.empty())
      os << " " << s.op;
    os << " '" << toPrintableLine(s.getName()) << "' (";
    for (size_t k = 0; k < s.inputs.size(); ++k) {
      os << (k ? ", " : "");
      describe(s.inputs[k]);
    }
    os << ") -> (";
    for (size_t k = 0; k < s.outputs.size(); ++k) {
      os << (k ? ", " : "");
      describe(s.outputs[k]);
    }
    os << ")";
    if (const auto *r = llvm::dyn_cast<ReformatStep>(&s); r && r->rowStride)
      os << " rows " << r->rowStride << " apart from column " << r->columnOffset
         << ", row " << r->firstRow << " on of "
         << (r->batchRows ? r->batchRows : r->shape[1]) << " an image";
    if (const auto *g = llvm::dyn_cast<Int4GemmStep>(&s);
        g && g->hasInt8Activations())
      os << " rows rounded to int8";
    if (s.getMacs())
      os << " " << s.getMacs() << " MACs, " << s.getNumTiles()
         << (s.getNumTiles() == 1 ? " tile" : " tiles");
    os << "\n";
  }
}

namespace {

/// 64-byte-aligned bytes, freed on scope exit.
/// Zeroed once, when allocated: a plan file whose step reads bytes no step
/// wrote reads zeros, not whatever the allocator left (runs stay
/// deterministic, and valgrind has nothing uninitialised to report).
struct AlignedBuffer {
  explicit AlignedBuffer(size_t bytes)
      : data(static_cast<char *>(std::aligned_alloc(64, roundedUp(bytes)))) {
    if (data)
      std::memset(data, 0, roundedUp(bytes));
  }
  static size_t roundedUp(size_t bytes) {
    return std::max<size_t>(64, (bytes + 63) & ~size_t(63));
  }
  ~AlignedBuffer() { std::free(data); }
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;
  char *data;
};

} // namespace

struct Plan::RunBuffers {
  RunBuffers(size_t arenaBytes, size_t scratchBytes)
      : arena(arenaBytes), scratch(scratchBytes), arenaBytes(arenaBytes),
        scratchBytes(scratchBytes) {}
  AlignedBuffer arena, scratch;
  size_t arenaBytes, scratchBytes;
};

Plan::Plan() = default;
Plan::~Plan() = default;

unsigned PlanRunOptions::getAvailableThreads() {
  return static_cast<unsigned>(std::max(1, tbb::info::default_concurrency()));
}

unsigned PlanRunOptions::getThreadCount() const {
  unsigned available = getAvailableThreads();
  return threads ? std::min(threads, available) : available;
}

bool Plan::isPlaced() const {
  auto placed = [&](int id) {
    return id < 0 || size_t(id) >= tensors.size() || tensors[id].constant ||
           tensors[id].arenaOffset >= 0;
  };
  for (const std::vector<int> *ids : {&inputs, &outputs})
    if (!llvm::all_of(*ids, placed))
      return false;
  for (const auto &s : steps)
    if (!llvm::all_of(s->inputs, placed) || !llvm::all_of(s->outputs, placed))
      return false;
  return true;
}

llvm::Expected<std::vector<Tensor>>
Plan::run(const std::map<std::string, Tensor> &given,
          const PlanRunOptions &options) const {
  if (!isPlaced())
    return makeError("the plan's tensors have no arena places yet (run the "
                     "assign-arena plan pass)");
  std::optional<tbb::global_control> threadLimit;
  size_t workers = options.getThreadCount();
  if (options.threads)
    threadLimit.emplace(tbb::global_control::max_allowed_parallelism, workers);
  // One scratch slab per thread index TBB can hand out.
  size_t arenaSlots =
      static_cast<size_t>(tbb::this_task_arena::max_concurrency());
  size_t slots = std::max(workers, arenaSlots);
  size_t scratchBytes = 0, sharedBytes = 0;
  for (const auto &step : steps) {
    scratchBytes = std::max(scratchBytes, (step->getScratchBytes() + 63) & ~63);
    sharedBytes = std::max(sharedBytes, (step->getSharedBytes() + 63) & ~63);
  }
  // The scratch of every thread counts against --max-memory, with the
  // arena and the steps' shared bytes (the plan's check counted one slab).
  uint64_t runBytes = saturatingSum(
      saturatingSum(arenaBytes, sharedBytes),
      saturatingProduct({uint64_t(scratchBytes), uint64_t(slots)}));
  if (runBytes > getResourceLimits().memoryBytes)
    return makeLimitError("a run of the plan on " + llvm::Twine(slots) +
                              " threads (the arena and each thread's scratch)",
                          runBytes, /*bytes=*/true);

  std::unique_ptr<RunBuffers> buffers;
  {
    std::lock_guard<std::mutex> lock(spareLock);
    buffers = std::move(spare);
  }
  size_t allScratch = scratchBytes * slots + sharedBytes;
  if (!buffers || buffers->arenaBytes < arenaBytes ||
      buffers->scratchBytes < allScratch)
    buffers = std::make_unique<RunBuffers>(arenaBytes, allScratch);
  if (!buffers->arena.data || !buffers->scratch.data)
    return makeError("cannot allocate the plan's arena of " +
                     llvm::Twine(arenaBytes) + " bytes and " +
                     llvm::Twine(allScratch) + " bytes of scratch");
  auto keepBuffers = llvm::make_scope_exit([&] {
    std::lock_guard<std::mutex> lock(spareLock);
    spare = std::move(buffers);
  });
  char *scratch = buffers->scratch.data;
  char *shared = scratch + scratchBytes * slots;
  PlanRun state(*this, buffers->arena.data);
  for (int id : inputs) {
    const PlanTensor &t = tensors[id];
    auto it = given.find(t.name);
    if (it == given.end())
      return makeError("no value given for graph input '" + t.name + "'");
    if (it->second.kind() != t.kind || it->second.shape() != t.shape)
      return makeError("graph input '" + t.name + "' expects " +
                       getElementKindName(t.kind) + " " +
                       shapeToString(t.shape) + ", got " +
                       getElementKindName(it->second.kind()) + " " +
                       shapeToString(it->second.shape()));
    if (t.byteSize()) // an empty input has no bytes to point to
      std::memcpy(state.write(id), it->second.bytes(), t.byteSize());
  }

  for (const auto &step : steps) {
    if (options.beforeStep)
      options.beforeStep(*step, state);
    if (step->getSharedBytes()) {
      if (auto err = step->prepare(state, shared))
        return std::move(err);
      state.setShared(shared);
    }
    int64_t tiles = step->getNumTiles(state);
    // Tiles a thread takes at least: a step that moves bytes gives each
    // thread kMinParallelBytes of its output or runs on this one (waking
    // a worker for a 16 KB copy costs more than the copy).
    int64_t grain = 1;
    if (tiles > 1 && workers > 1 && !step->isComputeBound(state)) {
      size_t written = 0;
      for (int id : step->outputs)
        if (id >= 0)
          written += tensors[id].byteSize();
      grain = written ? int64_t(std::min<uint64_t>(
                            tiles, (uint64_t(PlanStep::kMinParallelBytes) *
                                        uint64_t(tiles) +
                                    written - 1) /
                                       written))
                      : tiles;
    }
    if (tiles <= 1 || workers <= 1 || grain >= tiles) {
      if (auto err = step->run(state, 0, tiles, scratch))
        return std::move(err);
      if (options.afterStep)
        options.afterStep(*step, state);
      continue;
    }
    // Tiles write disjoint bytes; the first error wins.
    std::mutex errorLock;
    llvm::Error firstError = llvm::Error::success();
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, tiles, grain),
                      [&](const tbb::blocked_range<int64_t> &r) {
                        int slot = tbb::this_task_arena::current_thread_index();
                        llvm::Error err =
                            slot < 0 || static_cast<size_t>(slot) >= slots
                                ? makeError("TBB thread index " +
                                            llvm::Twine(slot) +
                                            " is outside the scratch slots")
                                : step->run(state, r.begin(), r.end(),
                                            scratch + scratchBytes * slot);
                        if (err) {
                          std::lock_guard<std::mutex> lock(errorLock);
                          if (firstError)
                            llvm::consumeError(std::move(err));
                          else
                            firstError = std::move(err);
                        }
                      });
    if (firstError)
      return std::move(firstError);
    if (options.afterStep)
      options.afterStep(*step, state);
  }

  std::vector<Tensor> results;
  for (int id : outputs)
    results.push_back(state.copyOut(id));
  return results;
}
