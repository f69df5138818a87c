//===- CopyRun.h - Short copies without a call ------------------*- C++ -*-===//
//
// Private to lib/Interpreter: the im2col rows of an int8 conv (a tap's few
// input channels) and the channel copy steps (a pixel's 16-32 float
// channels) copy many short runs, for which a memcpy call costs more than
// the bytes.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_KERNELS_COPYRUN_H
#define QOPT_KERNELS_COPYRUN_H

#include <cstdint>
#include <cstring>

namespace qopt {
namespace kernels {

/// Copies n bytes between arrays that do not overlap: a run of at most 128
/// bytes as two possibly overlapping runs of whole 8-, 16-, 32- or 64-byte
/// moves, without a call; a longer one through memcpy.
inline void copyRun(void *to, const void *from, int64_t n) {
  char *dst = static_cast<char *>(to);
  const char *src = static_cast<const char *>(from);
  auto overlapping = [&](auto chunk) {
    constexpr int64_t kBytes = sizeof(chunk);
    decltype(chunk) head, tail;
    std::memcpy(&head, src, kBytes);
    std::memcpy(&tail, src + n - kBytes, kBytes);
    std::memcpy(dst, &head, kBytes);
    std::memcpy(dst + n - kBytes, &tail, kBytes);
  };
  struct Bytes16 {
    uint64_t low, high;
  };
  struct Bytes32 {
    Bytes16 low, high;
  };
  struct Bytes64 {
    Bytes32 low, high;
  };
  if (n > 128)
    std::memcpy(dst, src, size_t(n));
  else if (n >= 64)
    overlapping(Bytes64());
  else if (n >= 32)
    overlapping(Bytes32());
  else if (n >= 16)
    overlapping(Bytes16());
  else if (n >= 8)
    overlapping(uint64_t());
  else if (n >= 4)
    overlapping(uint32_t());
  else
    for (int64_t i = 0; i < n; ++i) // none for n <= 0
      dst[i] = src[i];
}

} // namespace kernels
} // namespace qopt

#endif // QOPT_KERNELS_COPYRUN_H
