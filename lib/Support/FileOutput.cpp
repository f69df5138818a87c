//===- FileOutput.cpp - Atomic output files -------------------------------===//

#include "qopt/Support/FileOutput.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace qopt;

llvm::Error qopt::writeFileAtomically(
    llvm::StringRef path,
    llvm::function_ref<llvm::Error(llvm::raw_ostream &)> writer) {
  if (path == "-") {
    if (auto err = writer(llvm::outs()))
      return err;
    llvm::outs().flush();
    return llvm::Error::success();
  }
  llvm::SmallString<256> tmpPath;
  int fd;
  std::string model = (path + ".tmp-%%%%%%%%").str();
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(model, fd, tmpPath))
    return llvm::createStringError(ec,
                                   "cannot create a temporary file next "
                                   "to '%s': %s",
                                   path.str().c_str(), ec.message().c_str());
  llvm::Error result = llvm::Error::success();
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    result = writer(os);
    os.flush();
    if (!result && os.has_error()) {
      result = llvm::createStringError(os.error(), "cannot write '%s': %s",
                                       path.str().c_str(),
                                       os.error().message().c_str());
      os.clear_error();
    }
  }
  if (result) {
    llvm::sys::fs::remove(tmpPath);
    return result;
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmpPath, path)) {
    llvm::sys::fs::remove(tmpPath);
    return llvm::createStringError(ec, "cannot rename the output to '%s': %s",
                                   path.str().c_str(), ec.message().c_str());
  }
  return llvm::Error::success();
}
