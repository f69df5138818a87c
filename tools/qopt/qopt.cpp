//===- qopt.cpp - The qopt driver -----------------------------------------===//
//
//   qopt <input.onnx|input.qir|-> [-passes=...] [-o FILE] [-emit=qir|onnx]
//
// Reads a model, optionally runs a pass pipeline, and writes it as .qir text
// (default, on stdout) or ONNX. Every error is one line,
// "qopt: error: <file>: <what>: <reason>", with exit status 1; an output file
// is only ever replaced whole.
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/AsmParser.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/ModelSummary.h"
#include "qopt/Onnx/ModelIO.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace qopt;
namespace cl = llvm::cl;

static cl::OptionCategory qoptCategory("qopt options");

static cl::opt<std::string> inputPath(cl::Positional, cl::desc("<input>"),
                                      cl::init("-"), cl::cat(qoptCategory));
static cl::opt<std::string> outputPath("o", cl::desc("Output file ('-' = stdout)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(qoptCategory));
enum class EmitKind { Default, Qir, Onnx };
static cl::opt<EmitKind> emitKind(
    "emit", cl::desc("Output format (default: from the -o extension, else qir)"),
    cl::values(clEnumValN(EmitKind::Qir, "qir", ".qir text"),
               clEnumValN(EmitKind::Onnx, "onnx", "ONNX protobuf (QDQ form)")),
    cl::init(EmitKind::Default), cl::cat(qoptCategory));
static cl::opt<int64_t> inlineElementsLimit(
    "inline-elements-limit",
    cl::desc("Print constants with up to N elements inline as dense<...>; "
             "larger ones go to the resources section"),
    cl::init(16), cl::cat(qoptCategory));
static cl::opt<bool> elideResourceData(
    "elide-resource-data",
    cl::desc("Print dense_resource references without their bytes "
             "(readable, but does not parse back)"),
    cl::init(false), cl::cat(qoptCategory));
static cl::opt<bool> printStats("summary",
                                cl::desc("Print a summary of the model to stderr"),
                                cl::init(false), cl::cat(qoptCategory));

static void printVersion(llvm::raw_ostream &os) {
  os << "qopt version " QOPT_VERSION "\n";
}

/// One-line error; parse errors keep their located multi-line form.
static int reportError(llvm::Error err, llvm::StringRef file) {
  std::string located;
  llvm::handleAllErrors(
      std::move(err), [&](const ParseError &pe) { located = pe.message(); },
      [&](const llvm::ErrorInfoBase &e) {
        std::string msg = e.message();
        for (char &c : msg)
          if (c == '\n')
            c = ' ';
        llvm::errs() << "qopt: error: " << file << ": " << msg << "\n";
      });
  if (!located.empty())
    llvm::errs() << located << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::SetVersionPrinter(printVersion);
  cl::HideUnrelatedOptions(qoptCategory);
  cl::ParseCommandLineOptions(argc, argv,
                              "qopt: optimizer for explicitly quantized ONNX "
                              "models\n");

  Context ctx;
  auto model = loadModelFile(inputPath, ctx);
  if (!model)
    return reportError(model.takeError(), inputPath);

  if (printStats) {
    llvm::errs() << "qopt: " << inputPath << "\n";
    printModelSummary(**model, llvm::errs());
  }

  ModelFormat format = emitKind == EmitKind::Onnx   ? ModelFormat::Onnx
                       : emitKind == EmitKind::Qir ? ModelFormat::Qir
                       : outputPath == "-"         ? ModelFormat::Qir
                                                   : formatForPath(outputPath);
  PrintOptions printOptions;
  printOptions.inlineElementsLimit = inlineElementsLimit;
  printOptions.elideResourceData = elideResourceData;
  if (auto err = saveModelFile(**model, outputPath, format, printOptions))
    return reportError(std::move(err), outputPath);
  return 0;
}
