//===- PlanTestSupport.h - Building and checking plans in tests -*- C++ -*-===//
//
// Shared by the plan builder's tests: a plan built from .qir text, and its
// outputs checked against the reference interpreter's.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_UNITTESTS_CODEGEN_PLANTESTSUPPORT_H
#define QOPT_UNITTESTS_CODEGEN_PLANTESTSUPPORT_H

#include "qopt/CodeGen/PlanBuilder.h"
#include "qopt/IR/AsmParser.h"
#include "qopt/IR/Graph.h"
#include "qopt/Interpreter/Interpreter.h"

#include "gtest/gtest.h"

#include <memory>

namespace qopt {
namespace plan {

struct Built {
  Context ctx;
  std::unique_ptr<Model> model;
  std::unique_ptr<Plan> plan;
};

inline std::unique_ptr<Built> build(const char *text) {
  auto b = std::make_unique<Built>();
  auto m = parseModel(text, "<test>", b->ctx);
  EXPECT_TRUE(bool(m)) << llvm::toString(m.takeError());
  b->model = std::move(*m);
  auto plan = buildPlan(*b->model, PlanBuildOptions{});
  EXPECT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  b->plan = std::move(*plan);
  return b;
}

/// The plan's outputs at 1 and 2 threads equal the interpreter's bit for
/// bit.
inline void expectMatchesInterpreter(const Built &b,
                                     const interp::TensorMap &inputs) {
  auto reference = interp::Interpreter::create(*b.model);
  ASSERT_TRUE(bool(reference));
  auto want = (*reference)->run(inputs);
  ASSERT_TRUE(bool(want)) << llvm::toString(want.takeError());
  for (unsigned threads : {1u, 2u}) {
    auto got = b.plan->run(inputs, PlanRunOptions{threads});
    ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < got->size(); ++i)
      EXPECT_TRUE((*got)[i].identicalTo((*want)[i]))
          << "output " << i << " at " << threads << " threads";
  }
}

} // namespace plan
} // namespace qopt

#endif // QOPT_UNITTESTS_CODEGEN_PLANTESTSUPPORT_H
