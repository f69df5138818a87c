//===- DiagnosticTest.cpp - qopt's one error type -------------------------===//
//
// Every error is a Diagnostic: its message is what callers print, as
// before; where it points travels beside the message, and a system error
// keeps its errno code.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/Steps/ReformatStep.h"
#include "qopt/Support/Error.h"

#include "gtest/gtest.h"

using namespace qopt;

TEST(DiagnosticTest, MessageIsTheTextAndNoPlaceByDefault) {
  llvm::Error err = makeError("something failed");
  ASSERT_TRUE(err.isA<Diagnostic>());
  EXPECT_EQ(getLocation(err).kind, DiagLocation::Kind::None);
  EXPECT_EQ(llvm::toString(std::move(err)), "something failed");
}

TEST(DiagnosticTest, LocationTravelsBesideTheMessage) {
  llvm::Error err = makeError(DiagLocation::node("conv1"), "bad weights");
  DiagLocation where = getLocation(err);
  EXPECT_EQ(where.kind, DiagLocation::Kind::Node);
  EXPECT_EQ(where.name, "conv1");
  // Reading the location leaves the error as it was.
  EXPECT_EQ(getLocation(err).name, "conv1");
  EXPECT_EQ(llvm::toString(std::move(err)), "bad weights");
}

TEST(DiagnosticTest, WithLocationKeepsTheInnerPlace) {
  llvm::Error bare =
      withLocation(makeError("no value"), DiagLocation::value("x"));
  EXPECT_EQ(getLocation(bare).name, "x");
  EXPECT_EQ(llvm::toString(std::move(bare)), "no value");

  llvm::Error inner =
      withLocation(makeError(DiagLocation::node("relu"), "kernel failed"),
                   DiagLocation::step(3, "outer"));
  DiagLocation where = getLocation(inner);
  EXPECT_EQ(where.kind, DiagLocation::Kind::Node);
  EXPECT_EQ(where.name, "relu");
  EXPECT_EQ(llvm::toString(std::move(inner)), "kernel failed");
}

TEST(DiagnosticTest, SystemErrorsKeepTheirCode) {
  auto code = std::make_error_code(std::errc::no_space_on_device);
  llvm::Error err = makeSystemError(code, DiagLocation::file("out.onnx"),
                                    "cannot write 'out.onnx'");
  DiagLocation where = getLocation(err);
  EXPECT_EQ(where.kind, DiagLocation::Kind::File);
  EXPECT_EQ(where.name, "out.onnx");
  EXPECT_EQ(llvm::errorToErrorCode(std::move(err)), code);
}

TEST(DiagnosticTest, PlanVerifierPointsAtTheStep) {
  plan::Plan plan;
  plan.steps.push_back(std::make_unique<plan::ReformatStep>("to NHWC"));
  llvm::Error err = plan::verifyPlan(plan, /*requirePlacement=*/false);
  ASSERT_TRUE(bool(err));
  DiagLocation where = getLocation(err);
  EXPECT_EQ(where.kind, DiagLocation::Kind::Step);
  EXPECT_EQ(where.index, 0);
  EXPECT_EQ(where.name, "to NHWC");
  EXPECT_EQ(llvm::toString(std::move(err)),
            "step 0 (reformat 'to NHWC'): expects 1 inputs and 1 outputs, "
            "has 0 and 0");
}
