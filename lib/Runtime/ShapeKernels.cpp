//===- ShapeKernels.cpp - Reference kernels: shape ops ------------------===//

#include "qopt/Runtime/Kernel.h"

using namespace qopt;
using namespace qopt::rt;

void rt::registerShapeKernels(KernelRegistry &r) {}
