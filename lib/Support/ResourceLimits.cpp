//===- ResourceLimits.cpp - How much memory and work an input may ask for -===//

#include "qopt/Support/ResourceLimits.h"
#include "qopt/Support/Error.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <vector>

using namespace qopt;

static std::atomic<uint64_t> memoryLimit{ResourceLimits::kDefaultMemoryBytes};
static std::atomic<uint64_t> workLimit{ResourceLimits::kDefaultWork};

ResourceLimits qopt::getResourceLimits() {
  ResourceLimits limits;
  limits.memoryBytes = memoryLimit.load(std::memory_order_relaxed);
  limits.work = workLimit.load(std::memory_order_relaxed);
  return limits;
}

void qopt::setResourceLimits(const ResourceLimits &limits) {
  memoryLimit.store(limits.memoryBytes, std::memory_order_relaxed);
  workLimit.store(limits.work, std::memory_order_relaxed);
}

llvm::Expected<uint64_t> qopt::parseResourceSize(llvm::StringRef text) {
  llvm::StringRef digits = text.trim();
  unsigned shift = 0;
  if (!digits.empty()) {
    switch (llvm::toUpper(digits.back())) {
    case 'K':
      shift = 10;
      break;
    case 'M':
      shift = 20;
      break;
    case 'G':
      shift = 30;
      break;
    case 'T':
      shift = 40;
      break;
    default:
      break;
    }
    if (shift)
      digits = digits.drop_back();
  }
  uint64_t value;
  if (digits.getAsInteger(10, value) || value == 0 ||
      value > (UINT64_MAX >> shift))
    return makeError("'" + text +
                     "' is not a size of at least 1 (a number with an "
                     "optional K, M, G or T suffix)");
  return value << shift;
}

std::string qopt::formatResourceSize(uint64_t value, bool bytes) {
  static const char *const units[] = {"",    " Ki", " Mi", " Gi",
                                      " Ti", " Pi", " Ei"};
  // Exact in the largest unit that divides it, or to two decimals in the
  // largest unit it reaches: "4 GiB", "1.95 MiB", "1000 bytes".
  unsigned exact = 0;
  uint64_t whole = value;
  while (exact < 6 && whole && whole % 1024 == 0) {
    whole /= 1024;
    ++exact;
  }
  unsigned unit = 0;
  while (unit < 6 && value >> (10 * (unit + 1)))
    ++unit;
  std::string text;
  if (exact >= unit) {
    text = std::to_string(whole) + units[exact];
    unit = exact;
  } else {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.2f",
                  double(value) / double(uint64_t(1) << (10 * unit)));
    text = std::string(buffer) + units[unit];
  }
  if (bytes)
    text += unit ? "B" : " bytes";
  return text;
}

llvm::Error qopt::makeLimitError(const llvm::Twine &what, uint64_t asked,
                                 bool bytes, const llvm::Twine &context) {
  ResourceLimits limits = getResourceLimits();
  uint64_t limit = bytes ? limits.memoryBytes : limits.work;
  std::string amount = asked == UINT64_MAX
                           ? "more than " + formatResourceSize(limit, bytes)
                           : formatResourceSize(asked, bytes) +
                                 (bytes ? "" : " multiply-accumulates");
  std::string extra = context.str();
  return makeError(what + " needs " + amount +
                   (extra.empty() ? "" : ", " + extra) + ": over the " +
                   (bytes ? "memory" : "work") + " limit of " +
                   formatResourceSize(limit, bytes) + " (raise it with " +
                   (bytes ? "--max-memory" : "--max-work") + ")");
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
qopt::readFileWithinLimit(llvm::StringRef path) {
  uint64_t limit = getResourceLimits().memoryBytes;
  llvm::sys::fs::file_status status;
  bool regular = path != "-" && !llvm::sys::fs::status(path, status) &&
                 llvm::sys::fs::is_regular_file(status);
  if (regular) {
    if (status.getSize() > limit)
      return makeLimitError("the file", status.getSize(), /*bytes=*/true);
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer)
      return makeError("cannot read: " + buffer.getError().message());
    return std::move(*buffer);
  }
  // A stream: read it in pieces (no buffer regrown and copied as it
  // grows), and stop once it passes the limit.
  int fd = 0;
  if (path != "-") {
    if (std::error_code ec = llvm::sys::fs::openFileForRead(path, fd))
      return makeError("cannot read: " + ec.message());
  }
  constexpr size_t kPiece = size_t(1) << 20;
  std::vector<std::unique_ptr<char[]>> pieces;
  uint64_t total = 0;
  size_t last = kPiece;
  llvm::Error err = llvm::Error::success();
  for (;;) {
    if (total > limit) {
      err = makeLimitError("the file", UINT64_MAX, /*bytes=*/true);
      break;
    }
    if (last == kPiece) {
      pieces.push_back(std::make_unique<char[]>(kPiece));
      last = 0;
    }
    auto read = llvm::sys::fs::readNativeFile(
        fd,
        llvm::makeMutableArrayRef(pieces.back().get() + last, kPiece - last));
    if (!read) {
      err = makeError("cannot read: " + llvm::toString(read.takeError()));
      break;
    }
    if (*read == 0)
      break;
    last += *read;
    total += *read;
  }
  if (path != "-")
    ::close(fd);
  if (err)
    return std::move(err);
  auto buffer = llvm::WritableMemoryBuffer::getNewUninitMemBuffer(total, path);
  for (size_t i = 0; i < pieces.size(); ++i) {
    size_t size = i + 1 < pieces.size() ? kPiece : last;
    std::memcpy(buffer->getBufferStart() + i * kPiece, pieces[i].get(), size);
    pieces[i].reset();
  }
  return std::unique_ptr<llvm::MemoryBuffer>(std::move(buffer));
}

ResourceLimitOptions::ResourceLimitOptions(llvm::cl::OptionCategory &category)
    : memory("max-memory",
             llvm::cl::desc(
                 "Most memory one model, plan or input file may ask for: an "
                 "input file's bytes, the tensors the reference interpreter "
                 "holds at once, a plan's arena and constants (K, M, G, T "
                 "suffixes; default 4G)"),
             llvm::cl::value_desc("size"), llvm::cl::init("4G"),
             llvm::cl::cat(category)),
      work("max-work",
           llvm::cl::desc("Most multiply-accumulates (and window taps) one "
                          "run of a model or plan may ask for (K, M, G, T "
                          "suffixes; default 256G)"),
           llvm::cl::value_desc("count"), llvm::cl::init("256G"),
           llvm::cl::cat(category)) {}

llvm::Error ResourceLimitOptions::apply() const {
  ResourceLimits limits;
  auto bytes = parseResourceSize(memory);
  if (!bytes)
    return makeError("--max-memory: " + llvm::toString(bytes.takeError()));
  auto count = parseResourceSize(work);
  if (!count)
    return makeError("--max-work: " + llvm::toString(count.takeError()));
  limits.memoryBytes = *bytes;
  limits.work = *count;
  setResourceLimits(limits);
  return llvm::Error::success();
}

static const char *oomToolName = "qopt";

static void reportOutOfMemory(void *, const char *, bool) {
  // Nothing here may allocate: write the line with the raw syscall.
  llvm::SmallString<160> line;
  line += oomToolName;
  line += ": error: out of memory: the machine could not give an allocation "
          "below the memory limit (lower --max-memory to be refused "
          "earlier)\n";
  (void)!::write(2, line.data(), line.size());
  llvm::sys::RunInterruptHandlers();
  ::_exit(1);
}

void qopt::installResourceErrorHandlers(const char *toolName) {
  oomToolName = toolName;
  llvm::install_bad_alloc_error_handler(reportOutOfMemory);
  // Past a file-size limit (ulimit -f) a write fails with EFBIG, which the
  // output's writer reports, instead of the signal killing the process.
  ::signal(SIGXFSZ, SIG_IGN);
}
