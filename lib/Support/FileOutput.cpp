//===- FileOutput.cpp - Atomic output files -------------------------------===//

#include "qopt/Support/FileOutput.h"
#include "qopt/Support/Error.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"

using namespace qopt;
namespace fs = llvm::sys::fs;

/// Runs `writer` on the open descriptor `fd` (closed here) and turns a
/// stream error into an error naming `path`.
static llvm::Error
writeToDescriptor(int fd, llvm::StringRef path,
                  llvm::function_ref<llvm::Error(llvm::raw_ostream &)> writer) {
  llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
  llvm::Error result = writer(os);
  os.flush();
  if (os.has_error()) {
    std::error_code ec = os.error();
    os.clear_error();
    if (!result)
      result = makeSystemError(ec, DiagLocation::file(path),
                               "cannot write '" + path + "': " + ec.message());
  }
  return result;
}

/// Writes into an existing file that is not a regular one (a device, a FIFO)
/// where it is: no temporary, no rename, no truncation.
static llvm::Error
writeInPlace(llvm::StringRef path,
             llvm::function_ref<llvm::Error(llvm::raw_ostream &)> writer) {
  // Appending: /dev/stdout redirected to a file reopens that file, whose
  // content the shell already truncated ('>') or means to keep ('>>').
  int fd;
  if (std::error_code ec =
          fs::openFileForWrite(path, fd, fs::CD_OpenExisting, fs::OF_Append))
    return makeSystemError(ec, DiagLocation::file(path),
                           "cannot open '" + path +
                               "' for writing: " + ec.message());
  return writeToDescriptor(fd, path, writer);
}

llvm::Error qopt::writeFileAtomically(
    llvm::StringRef path,
    llvm::function_ref<llvm::Error(llvm::raw_ostream &)> writer) {
  if (path == "-") {
    if (auto err = writer(llvm::outs()))
      return err;
    llvm::outs().flush();
    return llvm::Error::success();
  }
  // What the path names, through symbolic links.
  llvm::SmallString<256> target(path);
  fs::file_status status;
  if (!fs::status(path, status, /*Follow=*/true)) {
    if (status.type() == fs::file_type::directory_file)
      return makeSystemError(std::make_error_code(std::errc::is_a_directory),
                             DiagLocation::file(path),
                             "cannot write '" + path + "': it is a directory");
    // /dev/stdout, /dev/fd/N, /proc/self/fd/N name an open file (maybe a
    // regular one the shell redirected to): written through, never
    // replaced.
    if (status.type() != fs::file_type::regular_file ||
        path.startswith("/dev/") || path.startswith("/proc/"))
      return writeInPlace(path, writer);
    if (fs::is_symlink_file(path))
      if (std::error_code ec = fs::real_path(path, target))
        return makeSystemError(ec, DiagLocation::file(path),
                               "cannot resolve '" + path +
                                   "': " + ec.message());
  }
  llvm::SmallString<256> tmpPath;
  int fd;
  std::string model = (target + ".tmp-%%%%%%%%").str();
  if (std::error_code ec = fs::createUniqueFile(model, fd, tmpPath))
    return makeSystemError(ec, DiagLocation::file(path),
                           "cannot create a temporary file next to '" + path +
                               "': " + ec.message());
  // A signal that ends the process (Ctrl-C, a file-size limit) removes it too.
  llvm::sys::RemoveFileOnSignal(tmpPath);
  llvm::Error result = writeToDescriptor(fd, path, writer);
  if (!result)
    if (std::error_code ec = fs::rename(tmpPath, target))
      result = makeSystemError(ec, DiagLocation::file(path),
                               "cannot rename the output to '" + path +
                                   "': " + ec.message());
  if (result)
    fs::remove(tmpPath);
  llvm::sys::DontRemoveFileOnSignal(tmpPath);
  return result;
}
