//===- PlanWork.h - Counting a step's work ----------------------*- C++ -*-===//
//
// The saturating counts PlanStep::getWork overrides share (PlanBudget.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_PLAN_PLANWORK_H
#define QOPT_LIB_PLAN_PLANWORK_H

#include "qopt/Plan/Plan.h"

#include <cstdint>

namespace qopt {
namespace plan {
namespace planwork {

/// The elements of `shape` (negative dims as 0), saturating at 2^64 - 1.
uint64_t elementsOf(const interp::Shape &shape);
/// Taps of a window that lie inside the input, per output.
uint64_t tapsInside(int64_t kernelH, int64_t kernelW, int64_t inH, int64_t inW);

} // namespace planwork
} // namespace plan
} // namespace qopt

#endif // QOPT_LIB_PLAN_PLANWORK_H
