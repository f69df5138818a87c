//===- InputDistributionOption.h - -dist values for the tools ---*- C++ -*-===//
//
// The values of the `-dist` option that qopt (-measure-cost) and qopt-run
// share, with their help text, in one place.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_TOOLSUPPORT_INPUTDISTRIBUTIONOPTION_H
#define QOPT_TOOLSUPPORT_INPUTDISTRIBUTIONOPTION_H

#include "qopt/Interpreter/Interpreter.h"

#include "llvm/Support/CommandLine.h"

namespace qopt {

inline llvm::cl::ValuesClass inputDistributionValues() {
  return llvm::cl::values(clEnumValN(interp::InputDistribution::Uniform,
                                     "uniform", "floats in [-1, 1)"),
                          clEnumValN(interp::InputDistribution::Image, "image",
                                     "smooth image-like values in [0, 1)"),
                          clEnumValN(interp::InputDistribution::ImageNet,
                                     "imagenet",
                                     "image-like, ImageNet-normalised"));
}

} // namespace qopt

#endif // QOPT_TOOLSUPPORT_INPUTDISTRIBUTIONOPTION_H
