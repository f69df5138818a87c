//===- AsmPrinter.h - The .qir text form: printing --------------*- C++ -*-===//
//
// Deterministic text: the same model always prints the same bytes, and
// printing what the parser read reproduces the input's printing exactly.
//
//   model {ir_version = 7, opset_import = ["ai.onnx:13"]}
//
//   !q0 = !quant.uniform<u8:f32, 0.05:128>
//   graph @main(%x: tensor<1x3xf32>) -> (tensor<1x3xf32>) {
//     %s = onnx.Constant() {value = dense<0.05>} : tensor<f32>
//     %xq = q.quantize(%x, %s) : tensor<1x3x!q0> loc("q1")
//     ...
//     return %y
//   }
//   {-#
//     resources: {
//       "w": "0x0A0B..."
//     }
//   #-}
//
// Constants with more elements than `inlineElementsLimit` print as
// `dense_resource<name>`; their bytes go to the trailing resources section.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_IR_ASMPRINTER_H
#define QOPT_IR_ASMPRINTER_H

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

namespace qopt {

class Graph;
class Model;

struct PrintOptions {
  /// Constants up to this many elements print inline as dense<...>.
  int64_t inlineElementsLimit = 16;
  /// Print `dense_resource<name>` references without the resources section
  /// (readable, but the text no longer parses back to the same weights).
  bool elideResourceData = false;
};

void printModel(const Model &model, llvm::raw_ostream &os,
                const PrintOptions &options = {});
/// Prints just the graph (aliases included), e.g. for -print-after.
void printGraph(const Graph &graph, llvm::raw_ostream &os,
                const PrintOptions &options = {});

/// Quotes and escapes a string the way the parser reads it back.
std::string quoteString(llvm::StringRef s);
/// `%name` or `%"odd name"`; `@name` for graphs.
std::string formatValueName(llvm::StringRef name);
/// True if `s` can print without quotes after % or @.
bool isBareIdentifier(llvm::StringRef s);

} // namespace qopt

#endif // QOPT_IR_ASMPRINTER_H
