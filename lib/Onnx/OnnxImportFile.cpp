//===- OnnxImportFile.cpp - ONNX files and buffers into the importer ------===//
//
// The importer's entry points: a file or buffer parsed into a ModelProto
// (in an arena, within the resource limits), graph inputs bound to values
// where asked, then Importer::run (OnnxImporter.cpp).
//
//===----------------------------------------------------------------------===//

#include "OnnxImporterImpl.h"
#include "qopt/Onnx/OnnxImporter.h"
#include "qopt/Support/ResourceLimits.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <set>
#include <unistd.h>

using namespace qopt;
using namespace qopt::onnximport;

static llvm::Error parseProto(google::protobuf::io::ZeroCopyInputStream &in,
                              onnx::ModelProto &proto) {
  google::protobuf::io::CodedInputStream coded(&in);
  coded.SetTotalBytesLimit(std::numeric_limits<int>::max());
  coded.SetRecursionLimit(onnxbridge::kProtoRecursionLimit);
  if (!proto.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    return makeError("not a valid ONNX model (protobuf parsing failed: the "
                     "file is truncated, not ONNX, or nested more than 256 "
                     "levels deep)");
  if (!proto.has_graph() && proto.opset_import_size() == 0)
    return makeError("not a valid ONNX model (no graph and no opset "
                     "imports)");
  return llvm::Error::success();
}

/// Binds `bound` to the graph inputs of those names: each becomes an
/// initializer (replacing any default value) and leaves the inputs.
static llvm::Error
bindInputs(onnx::ModelProto &proto,
           const std::map<std::string, DenseElementsRef> &bound) {
  if (bound.empty()) // mutable_graph() would give a graphless model one
    return llvm::Error::success();
  onnx::GraphProto *graph = proto.mutable_graph();
  std::set<std::string> found;
  for (int i = graph->input_size() - 1; i >= 0; --i) {
    const onnx::ValueInfoProto &input = graph->input(i);
    auto it = bound.find(input.name());
    if (it == bound.end())
      continue;
    // The value must have the element kind the input declares.
    if (input.type().has_tensor_type() &&
        input.type().tensor_type().elem_type()) {
      auto declared = onnxbridge::elementKindFromOnnx(
          input.type().tensor_type().elem_type(), input.name());
      if (!declared)
        return declared.takeError();
      if (*declared != it->second->getKind())
        return makeError("graph input '" + input.name() + "' is " +
                         getElementKindName(*declared) +
                         "; the value bound to it is " +
                         getElementKindName(it->second->getKind()));
    }
    found.insert(it->first);
    // An input with a default value (an initializer of the same name)
    // gets the bound value instead.
    onnx::TensorProto *slot = nullptr;
    for (onnx::TensorProto &t : *graph->mutable_initializer())
      if (t.name() == it->first)
        slot = &t;
    if (!slot)
      slot = graph->add_initializer();
    slot->Clear();
    onnxbridge::tensorToProto(*it->second, it->first, *slot);
    graph->mutable_input()->DeleteSubrange(i, 1);
  }
  for (const auto &[name, value] : bound)
    if (!found.count(name))
      return makeError("no graph input '" + name + "' to bind a value to");
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<Model>>
qopt::importOnnxFile(llvm::StringRef path, Context &ctx) {
  return importOnnxFileWithInputsBound(path, ctx, {});
}

llvm::Expected<std::unique_ptr<Model>> qopt::importOnnxFileWithInputsBound(
    llvm::StringRef path, Context &ctx,
    const std::map<std::string, DenseElementsRef> &bound) {
  // A regular file is parsed as it is read, once its size passes the
  // memory limit; anything else (a device, a FIFO) is read within the
  // limit first.
  llvm::sys::fs::file_status status;
  bool found = !llvm::sys::fs::status(path, status);
  if (found && !llvm::sys::fs::is_regular_file(status)) {
    if (!bound.empty())
      return makeError("cannot bind inputs of a model that is not a file");
    auto buffer = readFileWithinLimit(path);
    if (!buffer)
      return buffer.takeError();
    llvm::SmallString<256> dir(path);
    llvm::sys::path::remove_filename(dir);
    if (dir.empty())
      dir = ".";
    return importOnnxBuffer((*buffer)->getBuffer(), dir, ctx);
  }
  if (found && status.getSize() > getResourceLimits().memoryBytes)
    return makeLimitError("the file", status.getSize(), /*bytes=*/true);
  int fd = ::open(path.str().c_str(), O_RDONLY);
  if (fd < 0)
    return makeError("cannot open file: " + llvm::Twine(std::strerror(errno)));
  // The message lives in an arena: a model of 100k nodes is 100k small
  // messages, and allocating and freeing them one by one costs more than
  // the import.
  google::protobuf::Arena arena;
  auto *proto =
      google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  llvm::Error err = llvm::Error::success();
  {
    google::protobuf::io::FileInputStream in(fd);
    err = parseProto(in, *proto);
  }
  ::close(fd);
  if (err)
    return std::move(err);
  if (auto bindError = bindInputs(*proto, bound))
    return std::move(bindError);
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  return Importer(*proto, dir, ctx).run();
}

llvm::Expected<std::unique_ptr<Model>>
qopt::importOnnxBuffer(llvm::StringRef bytes, llvm::StringRef baseDir,
                       Context &ctx) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return makeError("model larger than 2 GiB; use external data");
  google::protobuf::io::ArrayInputStream in(bytes.data(),
                                            static_cast<int>(bytes.size()));
  google::protobuf::Arena arena;
  auto *proto =
      google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  if (auto err = parseProto(in, *proto))
    return std::move(err);
  return Importer(*proto, baseDir, ctx).run();
}
