//===- ResourceLimits.h - How much memory and work an input may ask for -*-===//
//
// A 150-byte model can ask for terabytes (a Concat chain that doubles) or
// for years of arithmetic (a convolution whose kernel an Expand makes
// huge); a path can name an endless device (/dev/zero). The tools bound
// what one model, plan or input file may take and refuse the rest with a
// one-line error naming the node or file and the limit, instead of running
// out of memory or time:
//
//   memory  the bytes read from one input file, the tensors the reference
//           interpreter holds at once (plus the large scratch of its conv
//           and matmul kernels), and a plan's arena, scratch and constants;
//           default 4 GiB, raised with --max-memory=SIZE
//   work    the multiply-accumulates (or window taps) of a run: the
//           interpreter's convs, matmuls, gemms and pools as they run, a
//           plan's steps when it is built or loaded; default 2^38 (256 Gi),
//           raised with --max-work=COUNT
//
// Every shared and zoo model needs a small fraction of both. Sizes take a
// K, M, G or T suffix (powers of 1024). The limits are process-wide:
// tools set them from their flags before reading anything.
//
// The last resort is an allocation the machine cannot give (its memory is
// below the limit): installResourceErrorHandlers turns it into the same
// one-line error and exit status 1, with temporary output files removed.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_SUPPORT_RESOURCELIMITS_H
#define QOPT_SUPPORT_RESOURCELIMITS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <initializer_list>
#include <memory>

namespace qopt {

struct ResourceLimits {
  static constexpr uint64_t kDefaultMemoryBytes = uint64_t(4) << 30;
  static constexpr uint64_t kDefaultWork = uint64_t(1) << 38;
  uint64_t memoryBytes = kDefaultMemoryBytes;
  uint64_t work = kDefaultWork;
};

/// The process's limits (the defaults until setResourceLimits).
ResourceLimits getResourceLimits();
void setResourceLimits(const ResourceLimits &limits);

/// The product of `factors`, or UINT64_MAX when it does not fit: sizes
/// charged against a limit, which UINT64_MAX always passes.
inline uint64_t saturatingProduct(std::initializer_list<uint64_t> factors) {
  uint64_t product = 1;
  for (uint64_t f : factors)
    if (__builtin_mul_overflow(product, f, &product))
      return UINT64_MAX;
  return product;
}

/// a + b, or UINT64_MAX when it does not fit.
inline uint64_t saturatingSum(uint64_t a, uint64_t b) {
  uint64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? UINT64_MAX : sum;
}

/// "4096", "64K", "512M", "8G", "1T" (powers of 1024); at least 1.
llvm::Expected<uint64_t> parseResourceSize(llvm::StringRef text);

/// "4 GiB", "256 Mi", "1000": a limit as --help and errors print it.
std::string formatResourceSize(uint64_t value, bool bytes);

/// The error for a request of `asked` (UINT64_MAX: beyond counting) over
/// the memory limit (`bytes`) or the work limit: "<what> needs <asked>[,
/// <context>]: over the memory limit of 4 GiB (raise it with
/// --max-memory)"; `what` names the node, step or file.
llvm::Error makeLimitError(const llvm::Twine &what, uint64_t asked, bool bytes,
                           const llvm::Twine &context = "");

/// The whole file at `path` ("-" is stdin), refused once it passes the
/// memory limit: a regular file by its size before reading, a device, FIFO
/// or pipe as it is read. Errors ("cannot read: <why>", "the file needs
/// ...") leave naming the path to the caller.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readFileWithinLimit(llvm::StringRef path);

/// --max-memory and --max-work in `category`: a tool makes one, and calls
/// apply() after parsing its command line.
class ResourceLimitOptions {
public:
  explicit ResourceLimitOptions(llvm::cl::OptionCategory &category);
  llvm::Error apply() const;

private:
  llvm::cl::opt<std::string> memory;
  llvm::cl::opt<std::string> work;
};

/// An allocation that fails prints "<tool>: error: out of memory ..." and
/// exits with status 1 (temporary output files removed) instead of
/// aborting; a write past the file-size limit (ulimit -f) fails as a write
/// error instead of killing the process with SIGXFSZ.
void installResourceErrorHandlers(const char *toolName);

} // namespace qopt

#endif // QOPT_SUPPORT_RESOURCELIMITS_H
