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

llvm::Expected<interp::Tensor> parseNpy(llvm::StringRef bytes,
                                        llvm::StringRef what);
llvm::Expected<interp::Tensor> readNpy(llvm::StringRef path);
std::string serializeNpy(const interp::Tensor &t);

/// Members by name without the ".npy" suffix, in archive order.
llvm::Expected<std::vector<std::pair<std::string, interp::Tensor>>>
readNpz(llvm::StringRef path);
/// The archive of `members` (by name, each "<npzMemberName(name)>.npy").
/// Refused: more than 65,535 members, a member name over 65,535 bytes, two
/// names that map to one member, 4 GiB or more (a zip without ZIP64).
llvm::Expected<std::string> serializeNpz(
    const std::vector<std::pair<std::string, interp::Tensor>> &members);

/// The archive member a tensor `name` is written as (without ".npy"): the
/// name with '/', '\\' and control bytes made '_', so no member names a
/// directory or leaves the folder it is unpacked in ("../../x" is
/// ".._.._x", "/etc/x" is "_etc_x").
std::string npzMemberName(llvm::StringRef name);

} // namespace qopt

#endif // QOPT_TOOLSUPPORT_NPYIO_H
