//===- ShapeKernelsTest.cpp - Reference kernels: Shape ops ------------------===//

#include "qopt/Runtime/Kernel.h"

#include "gtest/gtest.h"

using namespace qopt;
using namespace qopt::rt;

TEST(ShapeKernelsTest, RegistryHasKernels) {
  EXPECT_FALSE(KernelRegistry::get().ops().empty());
}
