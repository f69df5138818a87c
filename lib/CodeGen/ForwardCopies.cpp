//===- ForwardCopies.cpp - Copies read from where their channels came -----===//
//
// A channel copy piece that reads channels another copy step wrote as they
// were (a Concat reading a Split's part) reads them from that step's source
// instead; the part is then written only if something else still reads it.
// The bytes are the same: the first copy moved them unchanged.
//
//   %a, %b = copy (%s[0, m) -> %a, %s[m, n) -> %b)      (a Split)
//   %c = copy (%a -> %c[0, m), %b -> %c[m, n), %d -> ..)  (a Concat)
//     =>
//   %b = copy (%s[m, n) -> %b)                          (%b: an Add reads it)
//   %c = copy (%s[0, m) -> %c[0, m), %s[m, n) -> %c[m, n), %d -> ..)
//
// YOLO's C2f blocks split a conv's result and concatenate its halves with
// the bottlenecks' results: the half nothing else reads is no longer copied
// out and back.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderImpl.h"

#include "llvm/Support/Casting.h"

#include <algorithm>

using namespace qopt;
using namespace qopt::codegen;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

namespace {

/// Whether two NHWC tensors have the same pixels (batch, height, width).
bool samePixels(const PlanTensor &a, const PlanTensor &b) {
  return a.layout == PlanLayout::Nhwc && b.layout == PlanLayout::Nhwc &&
         a.shape.size() == 4 && b.shape.size() == 4 &&
         a.shape[0] == b.shape[0] && a.shape[2] == b.shape[2] &&
         a.shape[3] == b.shape[3];
}

} // namespace

void codegen::forwardCopiedChannels(Plan &plan) {
  std::vector<int> producer = findProducers(plan);
  bool changed = false;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const auto *reader = llvm::dyn_cast<ChannelCopyStep>(plan.steps[i].get());
    if (!reader)
      continue;
    std::vector<ChannelCopyStep::Piece> pieces = reader->getPieces().vec();
    bool forwarded = false;
    for (ChannelCopyStep::Piece &p : pieces) {
      int at = producer[p.from];
      const auto *writer =
          at < 0 ? nullptr
                 : llvm::dyn_cast<ChannelCopyStep>(plan.steps[at].get());
      if (!writer || writer == reader ||
          !samePixels(plan.tensors[p.from], plan.tensors[p.to]))
        continue;
      // The writer's one piece that put these channels there, a plain copy
      // from a tensor nothing else writes.
      const ChannelCopyStep::Piece *source = nullptr;
      int overlapping = 0;
      for (const ChannelCopyStep::Piece &w : writer->getPieces())
        if (w.to == p.from && w.toChannel < p.fromChannel + p.channels &&
            p.fromChannel < w.toChannel + w.channels) {
          ++overlapping;
          source = &w;
        }
      const ChannelCopyStep::Piece *w = overlapping == 1 ? source : nullptr;
      if (!w || !w->table.empty() || w->grid || w->from == w->to ||
          producer[w->from] == -2 || p.fromChannel < w->toChannel ||
          p.fromChannel + p.channels > w->toChannel + w->channels ||
          !samePixels(plan.tensors[w->from], plan.tensors[p.from]) ||
          plan.tensors[w->from].kind != plan.tensors[p.from].kind)
        continue;
      p.fromChannel = w->fromChannel + (p.fromChannel - w->toChannel);
      p.from = w->from;
      forwarded = true;
    }
    if (!forwarded)
      continue;
    plan.steps[i] = rebuildCopy(*reader, std::move(pieces), reader->outputs);
    changed = true;
  }
  if (!changed)
    return;
  // Parts nothing reads any more: their pieces go, and steps left with
  // none.
  Readers readers(plan);
  for (auto &s : plan.steps) {
    const auto *copy = llvm::dyn_cast<ChannelCopyStep>(s.get());
    if (!copy)
      continue;
    auto unread = [&](int id) { return readers.onlyReader(id, 0); };
    if (llvm::none_of(copy->outputs, unread))
      continue;
    std::vector<ChannelCopyStep::Piece> pieces;
    for (const ChannelCopyStep::Piece &p : copy->getPieces())
      if (!unread(p.to))
        pieces.push_back(p);
    if (pieces.empty()) {
      s.reset();
      continue;
    }
    std::vector<int> outputs;
    for (int id : copy->outputs)
      if (!unread(id))
        outputs.push_back(id);
    s = rebuildCopy(*copy, std::move(pieces), std::move(outputs));
  }
  plan.steps.erase(std::remove(plan.steps.begin(), plan.steps.end(), nullptr),
                   plan.steps.end());
}
