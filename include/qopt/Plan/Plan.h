//===- Plan.h - The INT8 CPU execution plan --------------------*- C++ -*-===//
//
// A plan is a list of steps over numbered tensors, built once from a fused
// graph (lib/CodeGen) and run many times without the graph:
//
//   tensors  shape, element kind, layout, and where the bytes are: an
//            offset in one 64-byte-aligned arena (assigned by liveness, so
//            tensors that are never alive together share bytes) or a
//            constant held by the plan
//   steps    int8 conv units (Int8Conv: packed weights, the unit's epilogue,
//            a table step it feeds alone), int8 Gemm/MatMul units (the same
//            kernel over rows in ONNX layout), elementwise int8 ops as lookup
//            tables over the stored bytes (built at plan time by running the
//            reference kernel on every operand value), max pooling and channel
//            concat/split on NHWC tensors, layout changes between ONNX's NCHW
//            and the kernels' NHWC, and float steps that run the reference
//            interpreter's kernel of an op the plan has no kernel of its own
//            for (in NHWC too, for elementwise ops whose operands are NHWC)
//
// An int8 tensor in NHWC layout is stored as u8: s8 values + 128 (the
// kernels' one input kind); in ONNX layout it keeps its storage kind, as the
// interpreter's kernels expect.
//
// Steps run in order. A step splits its work into tiles (a conv's row
// groups and channel blocks, a gemm's rows), which TBB runs in parallel; tiles
// write disjoint bytes, so the result does not depend on the thread count.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PLAN_PLAN_H
#define QOPT_PLAN_PLAN_H

#include "qopt/Interpreter/Kernel.h"
#include "qopt/Kernels/Int8Conv.h"
#include "qopt/Kernels/Int8MatMul.h"
#include "qopt/Kernels/Int8Quantize.h"

#include <array>
#include <cassert>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace qopt {
namespace plan {

enum class PlanLayout : uint8_t {
  /// The ONNX shape, row major, in the tensor's element kind.
  Onnx,
  /// A 4-D NCHW tensor stored NHWC; int8 kinds stored as u8 (s8 + 128).
  Nhwc,
};

struct PlanTensor {
  /// The graph value it holds (a value and its other-layout twin share it).
  std::string name;
  /// The element kind in the graph (i8 for an s8 tensor in either layout).
  ElementKind kind = ElementKind::Unknown;
  /// The ONNX (logical) shape.
  interp::Shape shape;
  PlanLayout layout = PlanLayout::Onnx;
  /// Offset in the arena, or -1 for a constant.
  int64_t arenaOffset = -1;
  /// The value of a constant tensor (ONNX layout).
  std::shared_ptr<const interp::Tensor> constant;

  int64_t numElements() const;
  size_t byteSize() const;
  /// What is XORed into each byte of an int8 value to store it: 0x80 for
  /// an s8 tensor in NHWC layout (stored as u8), else 0.
  uint8_t getStoredFlip() const {
    return layout == PlanLayout::Nhwc && kind == ElementKind::I8 ? 0x80 : 0;
  }
};

class Plan;
class PlanRun;
class PlanVerifier;
namespace planfile {
class PlanEncoder;
} // namespace planfile

/// One step of the plan. Each kind is a row of qopt/Plan/PlanSteps.def and
/// a class of its own (qopt/Plan/Steps/), which runs it, writes its fields,
/// checks what its kernel relies on and counts its work; the plan's
/// encoder, decoder, verifier and budget go through those.
class PlanStep {
public:
  enum class Kind : uint8_t {
#define PLAN_STEP(KIND, CLASS, SPELLING, DESCRIPTION, VERSION) KIND,
#include "qopt/Plan/PlanSteps.def"
  };

  PlanStep(Kind kind, std::string name) : kind(kind), name(std::move(name)) {}
  virtual ~PlanStep();

  Kind getKind() const { return kind; }
  llvm::StringRef getKindName() const;
  /// The graph node the step comes from (or the tensor it converts).
  llvm::StringRef getName() const { return name; }

  /// Independent pieces of work; run() is called on disjoint ranges.
  virtual int64_t getNumTiles() const { return 1; }
  /// The same for a run, where a step's tiling depends on its tensors.
  virtual int64_t getNumTiles(const PlanRun & /*run*/) const {
    return getNumTiles();
  }
  /// Scratch bytes one caller of run() needs.
  virtual size_t getScratchBytes() const { return 0; }
  /// `n` rounded up to the 64 bytes the kernels align their scratch parts
  /// to: where a step's next part of scratch starts.
  static size_t alignScratch(size_t n) {
    constexpr size_t kScratchAlignment = 64;
    return (n + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment;
  }
  /// Multiply-accumulates the step does (0 where it does not count them).
  virtual int64_t getMacs() const { return 0; }
  /// Whether the step's time goes to arithmetic rather than to moving its
  /// bytes (multiply-accumulates, transcendental functions): its tiles are
  /// worth spreading over threads however few bytes they write. Plan::run
  /// gives a thread at least kMinParallelBytes of another step's output.
  virtual bool isComputeBound(const PlanRun & /*run*/) const {
    return getMacs() > 0;
  }
  static constexpr size_t kMinParallelBytes = 32 * 1024;
  /// Whether the step runs on the reference interpreter's kernel (in
  /// double, on copies of its operands) rather than a loop of the plan's
  /// own: the slowest way a step can run, which --profile marks.
  virtual bool runsReferenceKernel(const PlanRun & /*run*/) const {
    return false;
  }
  /// Bytes a step prepares once a run, before its tiles, for all of them
  /// (a weight-only int4 gemm's rows rounded to int8): prepare() writes
  /// them on the calling thread, run() reads them as PlanRun::getShared().
  virtual size_t getSharedBytes() const { return 0; }
  virtual llvm::Error prepare(PlanRun & /*run*/, void * /*shared*/) const {
    return llvm::Error::success();
  }
  virtual llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                          void *scratch) const = 0;

  /// Writes the step's own fields, after the ones every step has (kind,
  /// name, op, inputs, outputs), in the order its kind's reader
  /// (read<Class> in lib/Plan/Steps/<Class>.cpp) takes them back. Fails for
  /// a step no reader could load.
  virtual llvm::Error writeFields(planfile::PlanEncoder &out) const = 0;
  /// Checks what the step's kernel relies on in `check`'s plan (operand
  /// counts, layouts, kinds, shapes against its parameters): a step that
  /// passes touches no byte outside its tensors and scratch.
  virtual llvm::Error verify(const PlanVerifier &check) const = 0;
  /// The work units ResourceLimits::work counts for the step in `plan`: its
  /// multiply-accumulates (getMacs) or window taps where it has them, else
  /// the elements it reads and writes.
  virtual uint64_t getWork(const Plan &plan) const;
  /// The elements the step reads and writes in `plan` (saturating).
  uint64_t getElementsTouched(const Plan &plan) const;

  /// Tensor ids read and written.
  std::vector<int> inputs, outputs;
  /// The graph op the step runs (empty for a reformat), for listings.
  std::string op;

private:
  Kind kind;
  std::string name;
};

struct PlanRunOptions {
  PlanRunOptions() = default;
  explicit PlanRunOptions(unsigned threads) : threads(threads) {}
  /// Worker threads; 0 = every core.
  unsigned threads = 0;
  /// The threads a run with these options uses: `threads`, at most the
  /// cores this process may run on (each thread has its scratch: a million
  /// asked for would take the machine's memory), or for 0 all of them.
  unsigned getThreadCount() const;
  /// The cores this process may run on.
  static unsigned getAvailableThreads();
  /// Called before and after each step (e.g. to feed a step the
  /// reference's inputs and compare its outputs, or to time it).
  std::function<void(const PlanStep &, PlanRun &)> beforeStep, afterStep;
};

class Plan {
public:
  Plan();
  ~Plan();
  Plan(const Plan &) = delete;
  Plan &operator=(const Plan &) = delete;

  /// One line per step: kind, name, the tensors it reads and writes with
  /// their layouts, and MACs for int8 convs; then the arena size.
  void print(llvm::raw_ostream &os) const;

  /// Whether every tensor a step or the caller reads or writes has its
  /// place in the arena or is a constant (assign-arena ran).
  bool isPlaced() const;

  /// Runs with inputs by graph-input name; returns the outputs in order.
  /// The arena and scratch come from the last run that finished, when it
  /// had enough: a run allocates nothing else but its outputs.
  llvm::Expected<std::vector<interp::Tensor>>
  run(const std::map<std::string, interp::Tensor> &inputs,
      const PlanRunOptions &options = {}) const;

  std::vector<PlanTensor> tensors;
  std::vector<std::unique_ptr<PlanStep>> steps;
  /// Graph inputs and outputs (ONNX layout), in order.
  std::vector<int> inputs, outputs;
  /// Arena bytes (64-byte aligned) a run needs.
  size_t arenaBytes = 0;
  /// The instruction set of the int8 kernels.
  kernels::Isa isa = kernels::Isa::Scalar;
  /// Owns the quantized types the float steps' KernelOps point to.
  Context types;

private:
  struct RunBuffers;
  /// A finished run's buffers, for the next run to take.
  mutable std::mutex spareLock;
  mutable std::unique_ptr<RunBuffers> spare;
};

/// Checks that every step's tensors are what its kernel assumes (ids in
/// range, layouts, kinds, shapes against its parameters, arena places inside
/// the arena), so that running the plan touches no byte outside its
/// tensors; an error names the step or tensor and the reason. Without
/// `requirePlacement`, tensors without an arena place (offset -1) pass: a
/// plan before the assign-arena plan pass.
llvm::Error verifyPlan(const Plan &plan, bool requirePlacement = true);

/// Checks that a verified plan's memory (arena, scratch, constants) and
/// work (each step's MACs or window taps) fit the process's
/// ResourceLimits; verifyPlan ends with it. The error names the step.
llvm::Error checkPlanBudget(const Plan &plan);

/// Refuses a plan whose float steps (reference kernels) do more of its
/// multiply-accumulates than its int8 steps: an fp32 model, or one quantized
/// around a few ops only, which the plan would run many times slower than a
/// float runtime. The error names the largest float step and the flag that
/// builds it anyway (PlanBuildOptions::allowFloatPlan).
llvm::Error checkMostlyInt8(const Plan &plan);

/// What a step sees of one run: the arena and the tensors' bytes.
class PlanRun {
public:
  PlanRun(const Plan &plan, char *arena) : plan(plan), arena(arena) {}
  const Plan &getPlan() const { return plan; }
  const PlanTensor &tensor(int id) const { return plan.tensors[id]; }
  /// The bytes of tensor `id`: its constant or its place in the arena.
  const char *read(int id) const;
  char *write(int id) const;
  /// Tensor `id` as a Tensor (a copy, for the float steps).
  interp::Tensor copyOut(int id) const;
  /// The value of tensor `id` in ONNX layout and kind, whatever its layout.
  interp::Tensor readValue(int id) const;
  /// Stores `value` (ONNX layout, the tensor's kind and shape) into tensor
  /// `id` in its layout; false when kind or shape differ.
  bool writeValue(int id, const interp::Tensor &value) const;
  /// What the running step's prepare() wrote (PlanStep::getSharedBytes).
  const void *getShared() const { return shared; }
  void setShared(const void *bytes) { shared = bytes; }

private:
  const Plan &plan;
  char *arena;
  const void *shared = nullptr;
};

} // namespace plan
} // namespace qopt

#endif // QOPT_PLAN_PLAN_H
