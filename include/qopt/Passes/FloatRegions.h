//===- FloatRegions.h - Float data movement between quantized ops -*- C++
//-*-===//
//
// A float region is a set of float tensors joined by data movement (the
// ops QdqUtils' carriesIntegers names: Concat, Split, Slice, MaxPool,
// nearest Resize, Reshape, ...). Its entries are the members other ops
// compute (an activation, an Add); its exits the nodes outside it that
// read a member. A region is borrowable when every exit is a q.quantize or
// an Add whose result is itself a member or only quantized (a C2f
// bottleneck's residual Add), at least one exit is a per-tensor Q, some
// entry is not a DQ's result, and no member is a graph input, output or
// constant: Q/DQ on its entries with the grid of its widest exit Q put the
// whole region on int8 (borrow-scales; explain names that fix for them).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PASSES_FLOATREGIONS_H
#define QOPT_PASSES_FLOATREGIONS_H

#include <string>
#include <vector>

namespace qopt {

class Graph;
class Node;
class QuantType;
class Value;

struct FloatRegion {
  /// In graph order of first appearance.
  std::vector<Value *> members;
  /// Members computed by ops outside the region (not by a DQ).
  std::vector<Value *> entries;
  /// The Qs reading a member.
  std::vector<Node *> exitQs;
  /// The widest per-tensor grid among the exit Qs, and its Q.
  const QuantType *grid = nullptr;
  const Node *gridFrom = nullptr;
  /// Why the region is not borrowable; empty when it is.
  std::string refused;

  bool isBorrowable() const { return refused.empty(); }
};

/// Every float region of `g`, in graph order of its first member.
std::vector<FloatRegion> findFloatRegions(Graph &g);

/// True for the data movement ops regions are made of: carriesIntegers,
/// not a q.* op, every data operand float.
bool joinsFloatRegion(const Node &n);

} // namespace qopt

#endif // QOPT_PASSES_FLOATREGIONS_H
