//===- OnnxTensorData.cpp - ONNX TensorProto payloads -> DenseElements ----===//
//
// Raw, typed-field and external data, with every size checked before
// anything is allocated; external files are confined to the model directory.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporterImpl.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

using namespace qopt;
using namespace qopt::onnximport;

//===----------------------------------------------------------------------===//
// Tensor data
//===----------------------------------------------------------------------===//

/// Confines an external data location to the model directory.
static llvm::Expected<std::string> resolveExternalPath(llvm::StringRef base,
                                                       llvm::StringRef loc,
                                                       llvm::StringRef what) {
  if (loc.empty())
    return makeError(what + ": external data has no location");
  // A model read from stdin or from bytes has no folder: resolving its
  // files against the working directory would hand any file there over as
  // weights. The caller gives a folder explicitly, or there is none.
  if (base.empty())
    return makeError(what + ": external data file '" + loc +
                     "' needs the model's folder, and a model read from stdin "
                     "or from bytes has none: load it from its file, or give "
                     "its folder (Python: qopt.load(data, base_dir=...))");
  if (llvm::sys::path::is_absolute(loc))
    return makeError(what + ": external data path '" + loc +
                     "' is absolute; it must be relative to the model");
  for (auto it = llvm::sys::path::begin(loc), e = llvm::sys::path::end(loc);
       it != e; ++it)
    if (*it == "..")
      return makeError(what + ": external data path '" + loc +
                       "' escapes the model directory");
  llvm::SmallString<256> full(base);
  llvm::sys::path::append(full, loc);
  // Symbolic links may not lead out of the model's directory either.
  llvm::SmallString<256> realBase, realFull;
  if (!llvm::sys::fs::real_path(base, realBase) &&
      !llvm::sys::fs::real_path(full, realFull)) {
    llvm::StringRef f = realFull, b = realBase;
    if (!f.startswith(b) || (f.size() > b.size() && f[b.size()] != '/'))
      return makeError(what + ": external data path '" + loc +
                       "' leads out of the model directory");
  }
  return std::string(full.str());
}

llvm::Expected<DenseElementsRef>
qopt::onnxbridge::tensorFromProto(onnx::TensorProto &t, llvm::StringRef baseDir,
                                  llvm::StringRef what) {
  auto kind = elementKindFromOnnx(t.data_type(), what);
  if (!kind)
    return kind.takeError();
  if (*kind == ElementKind::Unknown)
    return makeError(what + ": tensor has no data type (UNDEFINED)");
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0)
      return makeError(what + ": negative dimension in " + shapeText(dims));
    if (__builtin_mul_overflow(count, d, &count))
      return makeError(what + ": element count of " + shapeText(dims) +
                       " overflows");
  }
  if (*kind == ElementKind::String) {
    if (t.string_data_size() != count)
      return makeError(what + ": has " + llvm::Twine(t.string_data_size()) +
                       " strings, expected " + llvm::Twine(count));
    return std::make_shared<const DenseElements>(
        dims,
        std::vector<std::string>(t.string_data().begin(),
                                 t.string_data().end()),
        t.name());
  }
  auto bytes = DenseElements::byteSizeFor(*kind, count);
  constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 34; // 16 GiB
  if (!bytes || *bytes > kMaxTensorBytes)
    return makeError(what + ": " + llvm::Twine(count) +
                     " elements is more than qopt accepts for one tensor");
  unsigned width = getElementByteSize(*kind);
  // What ONNX stores: two 4-bit elements a byte; unpacked once read.
  uint64_t stored = onnxByteSize(*kind, uint64_t(count));
  auto inMemory = [&](std::string data) {
    return isPackedInOnnx(*kind) ? unpackNibbles(data, uint64_t(count), *kind)
                                 : std::move(data);
  };

  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    uint64_t offset = 0;
    std::optional<uint64_t> length;
    for (const auto &kv : t.external_data()) {
      uint64_t v = 0;
      if (kv.key() == "location") {
        location = kv.value();
      } else if (kv.key() == "offset" || kv.key() == "length") {
        if (llvm::StringRef(kv.value()).getAsInteger(10, v))
          return makeError(what + ": invalid external data " + kv.key() + " '" +
                           kv.value() + "'");
        if (kv.key() == "offset")
          offset = v;
        else
          length = v;
      }
    }
    auto path = resolveExternalPath(baseDir, location, what);
    if (!path)
      return path.takeError();
    uint64_t fileSize = 0;
    if (!llvm::sys::fs::is_regular_file(*path) ||
        llvm::sys::fs::file_size(*path, fileSize))
      return makeError(what + ": external data file '" + location +
                       "' is missing or not a regular file");
    uint64_t len = length ? *length : stored;
    if (len != stored)
      return makeError(what + ": external data length " + llvm::Twine(len) +
                       " does not match the " + llvm::Twine(stored) +
                       " bytes its shape needs");
    if (offset > fileSize || fileSize - offset < len)
      return makeError(what + ": external data file '" + location +
                       "' is too short");
    int fd = ::open(path->c_str(), O_RDONLY);
    if (fd < 0)
      return makeError(what + ": cannot open external data file '" + location +
                       "'");
    std::string data(len, '\0');
    // One pread returns at most 0x7ffff000 bytes on Linux, and any call may
    // return fewer than asked: read until the tensor is complete.
    uint64_t done = 0;
    while (done < len) {
      ssize_t got = ::pread(fd, data.data() + done, len - done,
                            static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0)
        break;
      done += static_cast<uint64_t>(got);
    }
    ::close(fd);
    if (done != len)
      return makeError(what + ": short read from external data file '" +
                       location + "'");
    return std::make_shared<const DenseElements>(
        *kind, dims, inMemory(std::move(data)), t.name());
  }

  if (t.has_raw_data()) {
    // ONNX's checker refuses a tensor that holds its values twice.
    if (t.float_data_size() || t.int32_data_size() || t.int64_data_size() ||
        t.double_data_size() || t.uint64_data_size() || t.string_data_size())
      return makeError(what + ": holds raw_data and a typed data field "
                              "both; a tensor keeps its values in one");
    if (t.raw_data().size() != stored)
      return makeError(what + ": raw_data has " +
                       llvm::Twine(t.raw_data().size()) + " bytes, expected " +
                       llvm::Twine(stored) + " for shape " + shapeText(dims));
    std::string data;
    data.swap(*t.mutable_raw_data()); // no copy of large weights
    return std::make_shared<const DenseElements>(
        *kind, dims, inMemory(std::move(data)), t.name());
  }

  auto countMismatch = [&](int have) {
    return makeError(what + ": has " + llvm::Twine(have) +
                     " values, expected " + llvm::Twine(count) + " for shape " +
                     shapeText(dims));
  };
  // The typed field's length is checked before anything is allocated.
  int have;
  switch (*kind) {
  case ElementKind::F32:
    have = t.float_data_size();
    break;
  case ElementKind::F64:
    have = t.double_data_size();
    break;
  case ElementKind::I64:
    have = t.int64_data_size();
    break;
  case ElementKind::U32:
  case ElementKind::U64:
    have = t.uint64_data_size();
    break;
  default:
    have = t.int32_data_size();
  }
  if (isPackedInOnnx(*kind)) {
    // int32_data holds the packed bytes, one a value.
    if (uint64_t(have) != stored)
      return makeError(what + ": has " + llvm::Twine(have) +
                       " packed values, expected " + llvm::Twine(stored) +
                       " for shape " + shapeText(dims));
    std::string packed(stored, '\0');
    for (uint64_t i = 0; i < stored; ++i) {
      int32_t v = t.int32_data(int(i));
      if (v < 0 || v > 255)
        return makeError(what + ": int32_data holds " + llvm::Twine(v) +
                         " at packed element " + llvm::Twine(i) +
                         ", not a byte of two 4-bit values");
      packed[i] = static_cast<char>(v);
    }
    return std::make_shared<const DenseElements>(*kind, dims, inMemory(packed),
                                                 t.name());
  }
  if (have != count)
    return countMismatch(have);
  std::string data(*bytes, '\0');
  switch (*kind) {
  case ElementKind::F32:
    if (t.float_data_size() != count)
      return countMismatch(t.float_data_size());
    if (*bytes)
      std::memcpy(data.data(), t.float_data().data(), *bytes);
    break;
  case ElementKind::F64:
    if (t.double_data_size() != count)
      return countMismatch(t.double_data_size());
    if (*bytes)
      std::memcpy(data.data(), t.double_data().data(), *bytes);
    break;
  case ElementKind::I64:
    if (t.int64_data_size() != count)
      return countMismatch(t.int64_data_size());
    if (*bytes)
      std::memcpy(data.data(), t.int64_data().data(), *bytes);
    break;
  case ElementKind::U32:
  case ElementKind::U64:
    if (t.uint64_data_size() != count)
      return countMismatch(t.uint64_data_size());
    for (int64_t i = 0; i < count; ++i) {
      uint64_t v = t.uint64_data(i);
      std::memcpy(&data[i * width], &v, width);
    }
    break;
  default: { // int32_data carries I32 and all narrower kinds (and f16 bits)
    if (t.int32_data_size() != count)
      return countMismatch(t.int32_data_size());
    // A narrower kind's value must fit it: an int8 300 would wrap to 44.
    bool isSigned = *kind == ElementKind::I8 || *kind == ElementKind::I16;
    int64_t lowest = 0, highest = int64_t(INT32_MAX);
    if (width < 4) {
      lowest = isSigned ? -(int64_t(1) << (8 * width - 1)) : 0;
      highest = isSigned ? (int64_t(1) << (8 * width - 1)) - 1
                         : (int64_t(1) << (8 * width)) - 1;
      if (*kind == ElementKind::Bool)
        highest = 1;
    } else {
      lowest = int64_t(INT32_MIN);
    }
    for (int64_t i = 0; i < count; ++i) {
      int32_t v = t.int32_data(i);
      if (v < lowest || v > highest)
        return makeError(what + ": int32_data holds " + llvm::Twine(v) +
                         " at element " + llvm::Twine(i) + ", outside " +
                         getElementKindName(*kind) + "'s range");
      std::memcpy(&data[i * width], &v, width);
    }
  }
  }
  return std::make_shared<const DenseElements>(*kind, dims, std::move(data),
                                               t.name());
}
