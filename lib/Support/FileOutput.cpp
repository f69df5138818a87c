//===- FileOutput.cpp - Atomic output files -------------------------------===//
//
// Each output is a PendingFile: its bytes go to a temporary next to the
// destination (or, for a device or FIFO, to the destination itself), all
// of them are flushed and closed, and only then do the temporaries replace
// their destinations, one rename each. A write that fails (a full disk, a
// file-size limit) fails while nothing has been replaced; a rename that
// fails after another output's rename puts that output's old file back
// from a hard link kept for the purpose.
//
//===----------------------------------------------------------------------===//

#include "qopt/Support/FileOutput.h"
#include "qopt/Support/Error.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"

#include <memory>
#include <optional>

#include <unistd.h>

using namespace qopt;
namespace fs = llvm::sys::fs;

namespace {

/// One output being written.
class PendingFile {
public:
  explicit PendingFile(llvm::StringRef path) : path(path.str()) {}
  PendingFile(const PendingFile &) = delete;
  PendingFile &operator=(const PendingFile &) = delete;
  ~PendingFile() {
    if (stream) {
      // Closed before the stream goes: a write error left from a failed
      // writer is this file's business, not a fatal one of the stream's.
      if (!closed)
        stream->close();
      stream->clear_error();
      stream.reset();
    }
    if (!tmpPath.empty()) {
      fs::remove(tmpPath);
      llvm::sys::DontRemoveFileOnSignal(tmpPath);
    }
    if (!backupPath.empty())
      fs::remove(backupPath);
  }

  /// Opens the stream: a temporary next to the destination, the
  /// destination itself where it is not a regular file, or stdout for "-".
  llvm::Error open();
  llvm::raw_ostream &os() { return stream ? *stream : llvm::outs(); }
  /// Flushes and closes the stream; a write error (ENOSPC, EFBIG) is the
  /// error, naming the destination.
  llvm::Error finish();
  /// Keeps a hard link to the file the destination holds now, so that
  /// restore() can put it back after commit() replaced it.
  void keepOld();
  /// Renames the temporary over the destination.
  llvm::Error commit();
  /// After commit(): the destination as it was before (or gone, if there
  /// was none).
  void restore();

private:
  std::string path;
  /// What the destination resolves to (through a symbolic link).
  llvm::SmallString<256> target;
  llvm::SmallString<256> tmpPath, backupPath;
  std::unique_ptr<llvm::raw_fd_ostream> stream;
  bool existed = false, committed = false, closed = false;
};

llvm::Error PendingFile::open() {
  if (path == "-")
    return llvm::Error::success();
  target = path;
  fs::file_status status;
  std::optional<fs::perms> keepPerms;
  if (!fs::status(path, status, /*Follow=*/true)) {
    if (status.type() == fs::file_type::directory_file)
      return makeSystemError(std::make_error_code(std::errc::is_a_directory),
                             DiagLocation::file(path),
                             "cannot write '" + path + "': it is a directory");
    // /dev/stdout, /dev/fd/N, /proc/self/fd/N name an open file (maybe a
    // regular one the shell redirected to): written through, never
    // replaced. Appending: /dev/stdout redirected to a file reopens that
    // file, whose content the shell already truncated ('>') or means to
    // keep ('>>').
    if (status.type() != fs::file_type::regular_file ||
        llvm::StringRef(path).startswith("/dev/") ||
        llvm::StringRef(path).startswith("/proc/")) {
      int fd;
      if (std::error_code ec = fs::openFileForWrite(
              path, fd, fs::CD_OpenExisting, fs::OF_Append))
        return makeSystemError(ec, DiagLocation::file(path),
                               "cannot open '" + path +
                                   "' for writing: " + ec.message());
      stream = std::make_unique<llvm::raw_fd_ostream>(fd, /*shouldClose=*/true);
      return llvm::Error::success();
    }
    existed = true;
    keepPerms = status.permissions();
    if (fs::is_symlink_file(path))
      if (std::error_code ec = fs::real_path(path, target))
        return makeSystemError(ec, DiagLocation::file(path),
                               "cannot resolve '" + path +
                                   "': " + ec.message());
  }
  int fd;
  std::string model = (target + ".tmp-%%%%%%%%").str();
  if (std::error_code ec = fs::createUniqueFile(model, fd, tmpPath))
    return makeSystemError(ec, DiagLocation::file(path),
                           "cannot create a temporary file next to '" + path +
                               "': " + ec.message());
  // A signal that ends the process (Ctrl-C, a file-size limit) removes it.
  llvm::sys::RemoveFileOnSignal(tmpPath);
  // Replacing a file keeps who may read it: a 0600 file stays 0600.
  if (keepPerms)
    if (std::error_code ec = fs::setPermissions(fd, *keepPerms)) {
      ::close(fd);
      return makeSystemError(
          ec, DiagLocation::file(path),
          "cannot give the new '" + path +
              "' the old one's permissions: " + ec.message());
    }
  stream = std::make_unique<llvm::raw_fd_ostream>(fd, /*shouldClose=*/true);
  return llvm::Error::success();
}

llvm::Error PendingFile::finish() {
  if (!stream) {
    llvm::outs().flush();
    return llvm::Error::success();
  }
  stream->close();
  closed = true;
  if (!stream->has_error())
    return llvm::Error::success();
  std::error_code ec = stream->error();
  stream->clear_error();
  return makeSystemError(ec, DiagLocation::file(path),
                         "cannot write '" + path + "': " + ec.message());
}

void PendingFile::keepOld() {
  if (tmpPath.empty() || !existed)
    return;
  std::string model = (target + ".old-%%%%%%%%").str();
  // A name that is free now; the link takes it (or, if another process
  // took it meanwhile, there is no backup and restore() cannot help).
  if (fs::createUniqueFile(model, backupPath) || fs::remove(backupPath) ||
      fs::create_hard_link(target, backupPath))
    backupPath.clear();
}

llvm::Error PendingFile::commit() {
  if (tmpPath.empty())
    return llvm::Error::success(); // written in place
  if (std::error_code ec = fs::rename(tmpPath, target))
    return makeSystemError(ec, DiagLocation::file(path),
                           "cannot rename the output to '" + path +
                               "': " + ec.message());
  llvm::sys::DontRemoveFileOnSignal(tmpPath);
  tmpPath.clear();
  committed = true;
  return llvm::Error::success();
}

void PendingFile::restore() {
  if (!committed)
    return;
  if (!backupPath.empty()) {
    if (!fs::rename(backupPath, target))
      backupPath.clear();
  } else if (!existed) {
    fs::remove(target);
  }
}

} // namespace

llvm::Error qopt::writeFilesAtomically(
    llvm::ArrayRef<std::string> paths,
    llvm::function_ref<llvm::Error(llvm::ArrayRef<llvm::raw_ostream *>)>
        writer) {
  std::vector<std::unique_ptr<PendingFile>> files;
  std::vector<llvm::raw_ostream *> streams;
  for (const std::string &path : paths) {
    files.push_back(std::make_unique<PendingFile>(path));
    if (auto err = files.back()->open())
      return err;
    streams.push_back(&files.back()->os());
  }
  // Every byte is written and flushed before anything is replaced.
  if (auto err = writer(streams))
    return err;
  for (auto &file : files)
    if (auto err = file->finish())
      return err;
  if (files.size() > 1)
    for (auto &file : files)
      file->keepOld();
  for (size_t i = 0; i < files.size(); ++i)
    if (auto err = files[i]->commit()) {
      for (size_t j = 0; j < i; ++j)
        files[j]->restore();
      return err;
    }
  return llvm::Error::success();
}

llvm::Error qopt::writeFileAtomically(
    llvm::StringRef path,
    llvm::function_ref<llvm::Error(llvm::raw_ostream &)> writer) {
  return writeFilesAtomically({path.str()},
                              [&](llvm::ArrayRef<llvm::raw_ostream *> streams) {
                                return writer(*streams[0]);
                              });
}
