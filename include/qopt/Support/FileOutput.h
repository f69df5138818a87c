//===- FileOutput.h - Atomic output files -----------------------*- C++ -*-===//
//
// Every tool writes its outputs through writeFileAtomically.
//
// - A regular file (or a path that does not exist yet) is written atomically:
//   the bytes go to a temporary file next to the destination, which is renamed
//   over it only when writing succeeded. On any error (or a signal that ends
//   the process) the temporary is removed and a previous file is untouched. A
//   symbolic link to a regular file stays a link: the file it names is
//   replaced.
// - Anything else that exists (a character or block device such as
//   /dev/null, a FIFO, a process substitution's /dev/fd/N), and any path
//   under /dev/ or /proc/ (/dev/stdout redirected to a file), is opened for
//   appending and written in place, never renamed over: renaming would
//   replace the device node, or the file the shell redirected, with a new
//   regular file.
// - A directory is refused; "-" writes to stdout.
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
