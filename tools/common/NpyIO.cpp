//===- NpyIO.cpp - NumPy .npy / .npz files --------------------------------===//

#include "qopt/ToolSupport/NpyIO.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/ResourceLimits.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstring>

using namespace qopt;
using namespace qopt::interp;

static const struct {
  ElementKind kind;
  const char *descr;
} kDescrs[] = {
    {ElementKind::F32, "<f4"}, {ElementKind::F64, "<f8"},
    {ElementKind::F16, "<f2"}, {ElementKind::I8, "|i1"},
    {ElementKind::U8, "|u1"},  {ElementKind::I16, "<i2"},
    {ElementKind::U16, "<u2"}, {ElementKind::I32, "<i4"},
    {ElementKind::U32, "<u4"}, {ElementKind::I64, "<i8"},
    {ElementKind::U64, "<u8"}, {ElementKind::Bool, "|b1"},
};

/// Value of `key` in the header dict, e.g. 'descr': '<f4'.
static llvm::StringRef headerField(llvm::StringRef header,
                                   llvm::StringRef key) {
  size_t pos = header.find(("'" + key + "'").str());
  if (pos == llvm::StringRef::npos)
    return {};
  llvm::StringRef rest = header.drop_front(pos + key.size() + 2).ltrim();
  rest = rest.drop_front(1).ltrim(); // ':'
  if (rest.startswith("'"))
    return rest.drop_front(1).take_until([](char c) { return c == '\''; });
  if (rest.startswith("("))
    return rest.drop_front(1).take_until([](char c) { return c == ')'; });
  return rest.take_until([](char c) { return c == ',' || c == '}'; }).trim();
}

llvm::Expected<Tensor> qopt::parseNpy(llvm::StringRef bytes,
                                      llvm::StringRef what) {
  if (bytes.size() < 10 || !bytes.startswith("\x93NUMPY"))
    return makeError(what + ": not a .npy file");
  uint8_t major = bytes[6];
  size_t headerLen, offset;
  if (major == 1) {
    headerLen = static_cast<uint8_t>(bytes[8]) | static_cast<uint8_t>(bytes[9])
                                                     << 8;
    offset = 10;
  } else {
    if (bytes.size() < 12)
      return makeError(what + ": truncated .npy header");
    uint32_t len;
    std::memcpy(&len, bytes.data() + 8, 4);
    headerLen = len;
    offset = 12;
  }
  if (offset + headerLen > bytes.size())
    return makeError(what + ": truncated .npy header");
  llvm::StringRef header = bytes.substr(offset, headerLen);
  llvm::StringRef descr = headerField(header, "descr");
  if (headerField(header, "fortran_order").startswith("True"))
    return makeError(what + ": Fortran-ordered arrays are not supported");
  std::optional<ElementKind> kind;
  for (const auto &d : kDescrs)
    if (descr == d.descr ||
        (descr.size() == 3 &&
         descr.substr(1) == llvm::StringRef(d.descr).substr(1) &&
         (descr[0] == '=' || descr[0] == '|' || descr[0] == '<')))
      kind = d.kind;
  if (!kind)
    return makeError(what + ": unsupported dtype '" + descr + "'");
  Shape shape;
  llvm::SmallVector<llvm::StringRef, 4> parts;
  headerField(header, "shape").split(parts, ',', -1, false);
  for (llvm::StringRef p : parts) {
    int64_t d;
    if (p.trim().getAsInteger(10, d) || d < 0)
      return makeError(what + ": bad shape in .npy header");
    shape.push_back(d);
  }
  auto t = Tensor::allocate(*kind, shape);
  if (!t)
    return t.takeError();
  llvm::StringRef data = bytes.drop_front(offset + headerLen);
  if (data.size() < t->byteSize())
    return makeError(what + ": .npy data is shorter than its shape needs");
  if (t->byteSize())
    std::memcpy(t->bytes(), data.data(), t->byteSize());
  return t;
}

llvm::Expected<Tensor> qopt::readNpy(llvm::StringRef path) {
  auto buf = readFileWithinLimit(path);
  if (!buf)
    return makeError(path + ": " + llvm::toString(buf.takeError()));
  return parseNpy((*buf)->getBuffer(), path);
}

std::string qopt::serializeNpy(const Tensor &t) {
  const char *descr = "<f4";
  for (const auto &d : kDescrs)
    if (d.kind == t.kind())
      descr = d.descr;
  std::string shape = "(";
  for (int64_t d : t.shape())
    shape += std::to_string(d) + ",";
  if (t.rank() > 1)
    shape.pop_back();
  shape += ")";
  std::string header = "{'descr': '" + std::string(descr) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out.push_back('\0');
  out.push_back(static_cast<char>(header.size() & 0xFF));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  out.append(t.bytes(), t.byteSize());
  return out;
}

template <typename T> static T readLE(const char *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T> static void appendLE(std::string &s, T v) {
  s.append(reinterpret_cast<const char *>(&v), sizeof(T));
}

llvm::Expected<std::vector<std::pair<std::string, Tensor>>>
qopt::readNpz(llvm::StringRef path) {
  auto buf = readFileWithinLimit(path);
  if (!buf)
    return makeError(path + ": " + llvm::toString(buf.takeError()));
  llvm::StringRef bytes = (*buf)->getBuffer();
  std::vector<std::pair<std::string, Tensor>> out;
  size_t pos = 0;
  while (pos + 30 <= bytes.size() &&
         readLE<uint32_t>(bytes.data() + pos) == 0x04034b50) {
    const char *h = bytes.data() + pos;
    uint16_t method = readLE<uint16_t>(h + 8);
    uint32_t compSize = readLE<uint32_t>(h + 18);
    uint16_t nameLen = readLE<uint16_t>(h + 26),
             extraLen = readLE<uint16_t>(h + 28);
    if (pos + 30 + nameLen + extraLen + compSize > bytes.size())
      return makeError(path + ": truncated .npz archive");
    std::string name(h + 30, nameLen);
    if (method != 0)
      return makeError(path + ": compressed .npz members are not supported");
    llvm::StringRef data =
        bytes.substr(pos + 30 + nameLen + extraLen, compSize);
    std::string what = (path + ":" + name).str();
    auto t = parseNpy(data, what);
    if (!t)
      return t.takeError();
    llvm::StringRef key = name;
    key.consume_back(".npy");
    out.push_back({key.str(), std::move(*t)});
    pos += 30 + nameLen + extraLen + compSize;
  }
  if (out.empty())
    return makeError(path + ": not a .npz archive");
  return out;
}

std::string qopt::npzMemberName(llvm::StringRef name) {
  std::string member;
  for (char c : name) {
    unsigned char u = static_cast<unsigned char>(c);
    member += c == '/' || c == '\\' || u < 0x20 || u == 0x7f ? '_' : c;
  }
  return member;
}

llvm::Expected<std::string>
qopt::serializeNpz(const std::vector<std::pair<std::string, Tensor>> &members) {
  // A zip without ZIP64: 16-bit counts and name lengths, 32-bit offsets.
  constexpr size_t kMaxMembers = 0xffff, kMaxNameBytes = 0xffff;
  constexpr uint64_t kMaxArchiveBytes = 0xffffffffu;
  if (members.size() > kMaxMembers)
    return makeError(llvm::Twine(members.size()) +
                     " outputs: an .npz holds at most 65,535 (write fewer, "
                     "or one .npy each)");
  std::string out, central;
  uint16_t count = 0;
  llvm::StringMap<llvm::StringRef> taken;
  for (const auto &[name, tensor] : members) {
    std::string file = npzMemberName(name) + ".npy";
    if (file.size() > kMaxNameBytes)
      return makeError("output '" + toPrintableLine(name, 64) +
                       "': a name of " + llvm::Twine(name.size()) +
                       " bytes; .npz member names hold at most 65,531");
    if (!taken.try_emplace(file, name).second)
      return makeError("outputs '" + toPrintableLine(taken[file], 64) +
                       "' and '" + toPrintableLine(name, 64) +
                       "' would both be the .npz member '" +
                       toPrintableLine(file, 64) + "'");
    std::string data = serializeNpy(tensor);
    uint32_t crc = llvm::crc32(llvm::arrayRefFromStringRef(data));
    uint32_t offset = out.size();
    appendLE<uint32_t>(out, 0x04034b50);
    appendLE<uint16_t>(out, 20);
    appendLE<uint16_t>(out, 0);
    appendLE<uint16_t>(out, 0); // stored
    appendLE<uint16_t>(out, 0);
    appendLE<uint16_t>(out, 0x21); // 1980-01-01
    appendLE<uint32_t>(out, crc);
    appendLE<uint32_t>(out, data.size());
    appendLE<uint32_t>(out, data.size());
    appendLE<uint16_t>(out, file.size());
    appendLE<uint16_t>(out, 0);
    out += file;
    out += data;
    appendLE<uint32_t>(central, 0x02014b50);
    appendLE<uint16_t>(central, 20);
    appendLE<uint16_t>(central, 20);
    appendLE<uint16_t>(central, 0);
    appendLE<uint16_t>(central, 0);
    appendLE<uint16_t>(central, 0);
    appendLE<uint16_t>(central, 0x21);
    appendLE<uint32_t>(central, crc);
    appendLE<uint32_t>(central, data.size());
    appendLE<uint32_t>(central, data.size());
    appendLE<uint16_t>(central, file.size());
    appendLE<uint16_t>(central, 0);
    appendLE<uint16_t>(central, 0);
    appendLE<uint16_t>(central, 0);
    appendLE<uint16_t>(central, 0);
    appendLE<uint32_t>(central, 0);
    appendLE<uint32_t>(central, offset);
    central += file;
    ++count;
    if (out.size() + central.size() > kMaxArchiveBytes)
      return makeError("the outputs pass an .npz's 4 GiB (no ZIP64 here): "
                       "write them as .npy files");
  }
  uint32_t centralOffset = out.size();
  out += central;
  appendLE<uint32_t>(out, 0x06054b50);
  appendLE<uint16_t>(out, 0);
  appendLE<uint16_t>(out, 0);
  appendLE<uint16_t>(out, count);
  appendLE<uint16_t>(out, count);
  appendLE<uint32_t>(out, central.size());
  appendLE<uint32_t>(out, centralOffset);
  appendLE<uint16_t>(out, 0);
  return out;
}
