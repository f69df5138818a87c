//===- PlanFile.h - The CPU plan as a file (.qplan) -------------*- C++ -*-===//
//
// A plan written once (`qopt m.onnx -passes='default<cpu>' -emit=plan -o
// m.qplan`) and run many times (`qopt-run m.qplan`) without the model, the
// passes or the builder. The file holds everything a run needs: tensors and
// their arena places, each step's parameters, conv weights in ONNX's OIHW
// order, tables and constants; large arrays start at 64-byte offsets, so a
// mapped file could serve them in place (this reader maps the file, copies
// constants and tables and packs the weights, then lets the file go).
//
// The file is versioned and checksummed (xxHash64 of everything after the
// header); a file from another tool, another format version, cut short or
// changed is a one-line error. What a file describes is checked as well as
// its bytes (verifyPlan): a plan read from any file cannot make a step of
// its own kernels touch memory outside its tensors, and a float step passes
// the IR's verifier as a one-node graph, as the interpreter's nodes do.
//
// Weights are packed when the file is read, for the instruction set chosen
// then (selectIsa(): the CPU's best, or QOPT_ISA), so one file runs on any
// machine, with the same bits everywhere.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PLAN_PLANFILE_H
#define QOPT_PLAN_PLANFILE_H

#include "qopt/Plan/Plan.h"

namespace qopt {
namespace plan {

/// The first bytes of every plan file.
constexpr llvm::StringLiteral kPlanFileMagic = "QOPTPLAN";
/// The format this build writes; it reads every version from
/// kOldestPlanFileVersion on (2 added the conv steps' input dilation, 3
/// their weight zero points and output tables, the int8 gemm steps and the
/// tables' broadcast operands, 4 the conv steps' pair tables, 5 their
/// arithmetic, 6 the copy pieces' quantize grids and the reformats'
/// placement in a larger result, 7 the average pool steps and the table
/// steps' arithmetic, 8 the int8 matmul steps, 9 the dynamic quantize and
/// dynamic gemm steps, 10 the quantized types' block size and the 4-bit
/// element kinds, 11 the int4 weight-only gemm steps, 12 their
/// int8 activations).
constexpr uint32_t kPlanFileVersion = 12;
constexpr uint32_t kOldestPlanFileVersion = 1;

/// Whether `bytes` start like a plan file (its magic).
bool isPlanFile(llvm::StringRef bytes);

/// The plan as a file's bytes. Fails for a plan the format cannot hold (a
/// float step whose op has no kernel of that name in the registry).
llvm::Expected<std::string> serializePlan(const Plan &plan);

/// The plan in `bytes` (a whole file), its conv and quantize steps set up
/// for `isa`. Errors are one line: "plan file: <reason>".
llvm::Expected<std::unique_ptr<Plan>> readPlan(llvm::StringRef bytes,
                                               kernels::Isa isa);

/// Whether `bytes` are a plan's text form: its first line that is not
/// blank or a `#` comment starts with "qopt plan:".
bool isPlanText(llvm::StringRef bytes);

/// The plan's text form (PlanText.cpp): the fields of the file, one line per
/// label, blobs over 32 bytes as resources at the end. Fails as
/// serializePlan does.
llvm::Expected<std::string> printPlanText(const Plan &plan);

/// The plan in `text` (a text form), verified as readPlan verifies a file;
/// a plan whose tensors have no arena places yet (printed before the
/// assign-arena plan pass) is accepted without them, for plan passes to
/// run on, but cannot run. Errors are one line: "plan text: <reason>".
llvm::Expected<std::unique_ptr<Plan>> parsePlanText(llvm::StringRef text,
                                                    kernels::Isa isa);

/// readPlan (or parsePlanText, for a text form) on the file at `path`.
llvm::Expected<std::unique_ptr<Plan>> loadPlanFile(llvm::StringRef path,
                                                   kernels::Isa isa);
/// The same on a file's whole content.
llvm::Expected<std::unique_ptr<Plan>> loadPlanBytes(llvm::StringRef bytes,
                                                    kernels::Isa isa);

} // namespace plan
} // namespace qopt

#endif // QOPT_PLAN_PLANFILE_H
