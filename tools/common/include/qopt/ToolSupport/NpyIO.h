//===- NpyIO.h - NumPy .npy / .npz files ------------------------*- C++ -*-===//
//
// Reading and writing tensors in NumPy's formats, little-endian, C order.
// .npz archives are plain (stored) zip files of .npy members; compressed
// archives (np.savez_compressed) are reported as unsupported.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_TOOLSUPPORT_NPYIO_H
#define QOPT_TOOLSUPPORT_NPYIO_H

#include "qopt/Interpreter/Tensor.h"

#include <map>

namespace qopt {
namespace rt {

llvm::Expected<Tensor> parseNpy(llvm::StringRef bytes, llvm::StringRef what);
llvm::Expected<Tensor> readNpy(llvm::StringRef path);
std::string serializeNpy(const Tensor &t);

/// Members by name without the ".npy" suffix, in archive order.
llvm::Expected<std::vector<std::pair<std::string, Tensor>>>
readNpz(llvm::StringRef path);
std::string
serializeNpz(const std::vector<std::pair<std::string, Tensor>> &members);

} // namespace rt
} // namespace qopt

#endif // QOPT_TOOLSUPPORT_NPYIO_H
