//===- ModelSummary.h - One-screen overview of a model ----------*- C++ -*-===//

#ifndef QOPT_IR_MODELSUMMARY_H
#define QOPT_IR_MODELSUMMARY_H

#include "llvm/Support/raw_ostream.h"

namespace qopt {

class Model;

/// Node counts per op, quantized tensors (per tensor / per axis, storage
/// types) and the Q/DQ nodes left opaque, e.g. for `qopt -stats`.
void printModelSummary(const Model &model, llvm::raw_ostream &os);

} // namespace qopt

#endif // QOPT_IR_MODELSUMMARY_H
