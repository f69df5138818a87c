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
// - A file replaced keeps its permissions (a 0600 file stays 0600); a new
//   one gets the process's default (0666 less the umask).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_SUPPORT_FILEOUTPUT_H
#define QOPT_SUPPORT_FILEOUTPUT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace qopt {

llvm::Error writeFileAtomically(
    llvm::StringRef path,
    llvm::function_ref<llvm::Error(llvm::raw_ostream &)> writer);

/// Several files that belong together (a model and its external data):
/// `writer` gets a stream per path, in order; every file is written and
/// flushed before any replaces its destination, then they are renamed in
/// order. If writing fails, nothing is replaced; if a rename fails, the
/// files renamed before it get their old content back (or are removed, if
/// there was none). Each replaced file keeps its permissions.
llvm::Error writeFilesAtomically(
    llvm::ArrayRef<std::string> paths,
    llvm::function_ref<llvm::Error(llvm::ArrayRef<llvm::raw_ostream *>)>
        writer);

} // namespace qopt

#endif // QOPT_SUPPORT_FILEOUTPUT_H
