//===- AssignArena.cpp - Every tensor's place in the arena ----------------===//
//
// The last plan pass: each tensor a step reads or writes, and each graph
// input and output, gets a 64-byte aligned offset in the one arena a run
// allocates, such that no two tensors alive at the same time overlap. A
// tensor lives from the first step that writes it (the start, for graph
// inputs) to the last step that reads or writes it (the end, for graph
// outputs). Constants keep offset -1.
//
//   tensor %3, 4096 bytes, steps 2..5   =>   %3 @ 0
//   tensor %5, 1024 bytes, steps 6..7        %5 @ 0     (%3 is dead by then)
//   tensor %4, 1024 bytes, steps 3..6        %4 @ 4096
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderImpl.h"

#include <algorithm>

using namespace qopt;
using namespace qopt::codegen;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

/// Greedy placement by size: each tensor goes to the lowest 64-byte-aligned
/// offset that no tensor alive at the same time occupies.
void codegen::assignArena(Plan &plan) {
  size_t numSteps = plan.steps.size();
  struct Life {
    int id;
    size_t first, last, bytes;
  };
  std::vector<Life> lives;
  std::vector<size_t> first(plan.tensors.size(), SIZE_MAX),
      last(plan.tensors.size(), 0);
  for (int id : plan.inputs)
    first[id] = 0;
  for (size_t i = 0; i < numSteps; ++i) {
    // A tensor several steps write (reformats placed in a Concat's result)
    // lives until the last of them too, read or not.
    for (int id : plan.steps[i]->outputs)
      if (id >= 0) {
        first[id] = std::min(first[id], i);
        last[id] = std::max(last[id], i);
      }
    for (int id : plan.steps[i]->inputs)
      if (id >= 0)
        last[id] = std::max(last[id], i);
  }
  for (int id : plan.outputs)
    last[id] = numSteps;
  for (size_t id = 0; id < plan.tensors.size(); ++id) {
    if (!plan.tensors[id].constant)
      plan.tensors[id].arenaOffset = -1; // a place from an earlier run goes
    if (plan.tensors[id].constant || first[id] == SIZE_MAX)
      continue;
    size_t bytes = (plan.tensors[id].byteSize() + 63) & ~size_t(63);
    lives.push_back({static_cast<int>(id), first[id],
                     std::max(last[id], first[id]), bytes});
  }
  std::stable_sort(
      lives.begin(), lives.end(),
      [](const Life &a, const Life &b) { return a.bytes > b.bytes; });
  // The tensors placed so far by offset: a new one scans those alive at
  // the same time in that order for the first gap it fits (no sort per
  // tensor, which made 16,384 tensors alive at once take seconds).
  std::vector<std::pair<size_t, size_t>> placed; // offset, index in lives
  size_t total = 0;
  for (size_t i = 0; i < lives.size(); ++i) {
    size_t offset = 0;
    for (auto [begin, j] : placed) {
      if (lives[j].first > lives[i].last || lives[i].first > lives[j].last)
        continue;
      if (offset + lives[i].bytes <= begin)
        break;
      offset = std::max(offset, begin + lives[j].bytes);
    }
    placed.insert(std::upper_bound(placed.begin(), placed.end(),
                                   std::make_pair(offset, SIZE_MAX)),
                  {offset, i});
    plan.tensors[lives[i].id].arenaOffset = static_cast<int64_t>(offset);
    total = std::max(total, offset + lives[i].bytes);
  }
  plan.arenaBytes = total;
}
