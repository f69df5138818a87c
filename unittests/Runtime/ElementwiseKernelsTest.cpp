//===- ElementwiseKernelsTest.cpp - Reference kernels: Elementwise ops ------------------===//

#include "qopt/Runtime/Kernel.h"

#include "gtest/gtest.h"

using namespace qopt;
using namespace qopt::rt;

TEST(ElementwiseKernelsTest, RegistryHasKernels) {
  EXPECT_FALSE(KernelRegistry::get().ops().empty());
}
