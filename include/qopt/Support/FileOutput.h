//===- FileOutput.h - Atomic output files -----------------------*- C++ -*-===//
//
// Every tool writes its outputs through writeFileAtomically: the bytes go to a
// temporary file next to the destination, which is renamed over it only when
// writing succeeded. On any error the temporary is removed and a previous
// file at the destination is untouched. "-" writes to stdout.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_SUPPORT_FILEOUTPUT_H
#define QOPT_SUPPORT_FILEOUTPUT_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace qopt {

llvm::Error writeFileAtomically(
    llvm::StringRef path,
    llvm::function_ref<llvm::Error(llvm::raw_ostream &)> writer);

} // namespace qopt

#endif // QOPT_SUPPORT_FILEOUTPUT_H
