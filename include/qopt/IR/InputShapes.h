//===- InputShapes.h - Static shapes for a model's inputs -------*- C++ -*-===//
//
// A model's inputs often have dynamic dims (a batch "N", an image size);
// what runs it on data (the plan, the interpreter on given inputs) needs
// them bound. This binds them and infers the shapes after them again.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_IR_INPUTSHAPES_H
#define QOPT_IR_INPUTSHAPES_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace qopt {
class Model;

/// Gives every graph input of `model` the static shape a plan needs: its
/// shape in `given` (of data the caller has, by input name) if any, else
/// each dynamic dim's value in `dims` (by symbol, "?" for unnamed ones) or,
/// with `unboundToOne`, 1; then infers the shapes after them again and
/// folds the shape arithmetic that became constant (fold-constants). A
/// given shape that contradicts the model is an error naming the input.
llvm::Error bindStaticInputShapes(
    Model &model, const std::map<std::string, int64_t> &dims,
    const std::map<std::string, std::vector<int64_t>> &given = {},
    bool unboundToOne = true);

} // namespace qopt

#endif // QOPT_IR_INPUTSHAPES_H
