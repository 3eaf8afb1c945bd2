#include "onnx_light/runtime/external_data.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

namespace fs = std::filesystem;

bool uses_external_data(const onnx::TensorProto& proto) {
  return proto.data_location() == onnx::TensorProto_DataLocation_EXTERNAL || proto.external_data_size() > 0;
}

struct ExternalDataDirectory::MappedFile {
  std::byte* base = nullptr;
  uint64_t size = 0;
  std::string path;
  ~MappedFile() {
    if (base != nullptr) munmap(base, size);
  }
};

namespace {

// The file descriptor, closed when it goes.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) close(fd);
  }
};

// True when `path` (absolute, normalized) is `directory` or below it.
bool is_within(const fs::path& path, const fs::path& directory) {
  auto p = path.begin();
  for (auto d = directory.begin(); d != directory.end(); ++d, ++p) {
    if (d->empty()) continue;  // a trailing separator
    if (p == path.end() || *p != *d) return false;
  }
  return true;
}

uint64_t parse_unsigned(const std::string& text, const std::string& what) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || value > static_cast<uint64_t>(INT64_MAX))
    throw ModelError(fmt::format("{} '{}' is not a non-negative integer", what, text));
  return value;
}

}  // namespace

ExternalDataDirectory::ExternalDataDirectory(const fs::path& directory, std::string origin)
    : directory_(fs::absolute(directory.empty() ? fs::path(".") : directory).lexically_normal()),
      origin_(std::move(origin)) {}

ExternalDataDirectory::~ExternalDataDirectory() = default;

std::shared_ptr<const ExternalDataDirectory::MappedFile> ExternalDataDirectory::map(const std::string& location,
                                                                                    const std::string& label) const {
  auto refuse = [&](const std::string& why) {
    return ModelError(fmt::format("{}: {}: external data location '{}' {}", origin_, label, location, why));
  };
  if (location.empty()) throw refuse("is empty");
  if (location.find('\0') != std::string::npos) throw refuse("contains a NUL byte");
  const fs::path relative(location);
  if (relative.is_absolute() || relative.has_root_name() || relative.has_root_directory())
    throw refuse("is an absolute path (external data must be inside the model's directory)");
  for (const auto& part : relative)
    if (part == "..") throw refuse("contains '..' (external data must be inside the model's directory)");

  const fs::path wanted = directory_ / relative;
  Descriptor file;
  // O_NONBLOCK: a FIFO planted as a location must not hang the load (it is refused below).
  file.fd = open(wanted.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (file.fd < 0) throw refuse(fmt::format("cannot be opened ({}: {})", wanted.string(), std::strerror(errno)));
  // Where the open landed, every symlink resolved: it must be inside the model's directory, as
  // the directory itself resolves.
  std::error_code ec;
  const fs::path opened = fs::read_symlink(fs::path("/proc/self/fd") / std::to_string(file.fd), ec);
  const fs::path real = ec ? fs::canonical(wanted, ec) : opened;
  const fs::path real_directory = fs::canonical(directory_, ec);
  if (ec || real.empty() || !is_within(real, real_directory))
    throw refuse(fmt::format("resolves to {}, outside the model's directory {}", real.empty() ? "?" : real.string(),
                             real_directory.string()));
  struct stat info {};
  if (fstat(file.fd, &info) != 0) throw refuse(fmt::format("cannot be read ({})", std::strerror(errno)));
  if (!S_ISREG(info.st_mode)) throw refuse("is not a regular file");

  std::lock_guard lock(mutex_);
  if (auto it = files_.find(real.string()); it != files_.end()) return it->second;
  auto mapped = std::make_shared<MappedFile>();
  mapped->path = real.string();
  mapped->size = static_cast<uint64_t>(info.st_size);
  if (mapped->size > 0) {
    void* base = mmap(nullptr, mapped->size, PROT_READ, MAP_PRIVATE, file.fd, 0);
    if (base == MAP_FAILED) throw refuse(fmt::format("cannot be memory-mapped ({})", std::strerror(errno)));
    mapped->base = static_cast<std::byte*>(base);
  }
  files_.emplace(mapped->path, mapped);
  return mapped;
}

Tensor ExternalDataDirectory::read(const onnx::TensorProto& proto, ElementType type, const Shape& shape,
                                   uint64_t bytes) const {
  const std::string label = proto.name().empty() ? std::string("a tensor") : fmt::format("tensor '{}'", proto.name());
  auto fail = [&](const std::string& why) { return ModelError(fmt::format("{}: {}: {}", origin_, label, why)); };
  if (proto.data_location() != onnx::TensorProto_DataLocation_EXTERNAL)
    throw fail("has external_data entries but data_location is not EXTERNAL");
  if (proto.has_raw_data()) throw fail("has both external data and raw_data");
  std::string location;
  bool has_location = false, has_length = false;
  uint64_t offset = 0, length = 0;
  for (const auto& entry : proto.external_data()) {
    const std::string& key = entry.key();
    try {
      if (key == "location") {
        location = entry.value();
        has_location = true;
      } else if (key == "offset") {
        offset = parse_unsigned(entry.value(), "offset");
      } else if (key == "length") {
        length = parse_unsigned(entry.value(), "length");
        has_length = true;
      } else if (key != "checksum") {  // checksum: optional in the format, not verified here
        throw ModelError(fmt::format("unknown external_data key '{}' (known: location, offset, length, checksum)", key));
      }
    } catch (const ModelError& e) {
      throw fail(e.what());
    }
  }
  if (!has_location) throw fail("external data has no 'location' entry");
  auto file = map(location, label);
  if (offset > file->size)
    throw fail(fmt::format("offset {} is past the end of '{}' ({} bytes)", offset, location, file->size));
  const uint64_t available = file->size - offset;
  if (has_length && length > available)
    throw fail(fmt::format("offset {} + length {} runs past the end of '{}' ({} bytes)", offset, length, location,
                           file->size));
  const uint64_t stored = has_length ? length : available;
  if (stored != bytes)
    throw fail(fmt::format("'{}' holds {} bytes at offset {}{} but {}{} needs {}", location, stored, offset,
                           has_length ? "" : " (to the end of the file: no length entry)", element_type_name(type),
                           shape_to_string(shape), bytes));
  if (bytes == 0) return Tensor(type, shape);
  const std::byte* at = file->base + offset;
  if (reinterpret_cast<std::uintptr_t>(at) % kTensorAlignment == 0 && Tensor::storage_bytes(type, shape) <= available) {
    // A view sharing the mapping's lifetime (read-only pages: kernels never write their inputs).
    std::shared_ptr<std::byte> storage(file, const_cast<std::byte*>(at));
    return Tensor::adopt(type, shape, std::move(storage), static_cast<std::size_t>(available));
  }
  Tensor copy(type, shape);
  std::memcpy(copy.raw_data(), at, static_cast<std::size_t>(bytes));
  return copy;
}

}  // namespace onnx_light::runtime
