#include "onnx_light/runtime/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {
namespace {

// Multi-byte data is written and read as '<' (little-endian) without swapping.
static_assert(std::endian::native == std::endian::little, "npy.cc assumes a little-endian host");

constexpr std::array<unsigned char, 6> kMagic{0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::size_t kMagicAndVersion = 8;
constexpr std::size_t kLongestPrefix = kMagicAndVersion + 4;
constexpr std::size_t kHeaderAlignment = 64;

struct DtypeCode {
  std::string_view code;  // the descr without its byte-order character
  ElementType type;
};

constexpr std::array<DtypeCode, 14> kDtypes{{
    {"f4", ElementType::float32},
    {"f8", ElementType::float64},
    {"f2", ElementType::float16},
    {"i1", ElementType::int8},
    {"i2", ElementType::int16},
    {"i4", ElementType::int32},
    {"i8", ElementType::int64},
    {"u1", ElementType::uint8},
    {"u2", ElementType::uint16},
    {"u4", ElementType::uint32},
    {"u8", ElementType::uint64},
    {"b1", ElementType::boolean},
    {"c8", ElementType::complex64},
    {"c16", ElementType::complex128},
}};

// Printable excerpt of untrusted header text for messages.
std::string excerpt(std::string_view text) {
  constexpr std::size_t kMax = 80;
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\\' || c == '"') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (text.size() > kMax) out += "...";
  return fmt::format("\"{}\"", out);
}

[[noreturn]] void fail(const std::string& origin, std::string_view what) {
  throw InvalidValueError(fmt::format("{}: {}", origin, what));
}

[[noreturn]] void fail_field(const std::string& origin, std::string_view field, std::string_view what) {
  throw InvalidValueError(fmt::format("{}: invalid .npy header field '{}': {}", origin, field, what));
}

struct Prefix {
  unsigned major = 0;
  std::size_t header_begin = 0;
  std::size_t header_length = 0;
};

// `head` holds the first bytes of the file (at least kLongestPrefix of them when the file is that long);
// `total` is the size of the whole file.
Prefix parse_prefix(std::span<const std::byte> head, uint64_t total, const std::string& origin) {
  if (total < kMagicAndVersion || head.size() < kMagicAndVersion) {
    fail(origin, fmt::format("not a .npy file: only {} bytes, too short for the magic string and version", total));
  }
  if (std::memcmp(head.data(), kMagic.data(), kMagic.size()) != 0) {
    fail(origin, "not a .npy file: bad magic string (expected \\x93NUMPY)");
  }
  Prefix prefix;
  prefix.major = std::to_integer<unsigned>(head[6]);
  const auto minor = std::to_integer<unsigned>(head[7]);
  if (prefix.major < 1 || prefix.major > 3 || minor != 0) {
    fail(origin, fmt::format("unsupported .npy format version {}.{} (supported: 1.0, 2.0, 3.0)", prefix.major, minor));
  }
  const std::size_t length_size = prefix.major == 1 ? 2 : 4;
  prefix.header_begin = kMagicAndVersion + length_size;
  if (total < prefix.header_begin || head.size() < prefix.header_begin) {
    fail(origin, fmt::format("truncated .npy file: it ends inside the header length ({} bytes)", total));
  }
  uint64_t length = 0;
  for (std::size_t i = 0; i < length_size; ++i) {
    length |= std::to_integer<uint64_t>(head[kMagicAndVersion + i]) << (8 * i);
  }
  if (length > total - prefix.header_begin) {
    fail(origin, fmt::format("truncated .npy file: the header length {} runs past the end of the file ({} bytes)",
                             length, total));
  }
  prefix.header_length = static_cast<std::size_t>(length);
  return prefix;
}

struct Header {
  ElementType type = ElementType::undefined;
  std::string descr;
  Shape shape;
  uint64_t data_bytes = 0;
};

// The header is a Python dict literal; this accepts exactly the subset numpy writes
// ({'descr': str, 'fortran_order': bool, 'shape': tuple of int}, any key order, either quote style).
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& origin) : text_(text), origin_(origin) {}

  Header parse() {
    std::optional<std::string> descr;
    std::optional<bool> fortran_order;
    std::optional<Shape> shape;

    skip_space();
    expect('{', "the dictionary to start with '{'");
    skip_space();
    while (!at('}')) {
      const std::string key = parse_string("a quoted key");
      skip_space();
      expect(':', fmt::format("':' after the key '{}'", key));
      skip_space();
      if (key == "descr") {
        if (descr) duplicate(key);
        if (at('[')) fail_field(origin_, "descr", "structured dtypes (a list of fields) are not supported");
        descr = parse_string("a quoted dtype string");
      } else if (key == "fortran_order") {
        if (fortran_order) duplicate(key);
        fortran_order = parse_bool();
      } else if (key == "shape") {
        if (shape) duplicate(key);
        shape = parse_shape();
      } else {
        fail(origin_, fmt::format("invalid .npy header: unexpected key {} (the keys are descr, fortran_order, shape)",
                                  excerpt(key)));
      }
      skip_space();
      if (at(',')) {
        ++pos_;
        skip_space();
      } else if (!at('}')) {
        syntax_error("',' or '}' after a value");
      }
    }
    ++pos_;
    skip_space();
    if (pos_ != text_.size()) syntax_error("only spaces and a newline after the dictionary");

    if (!descr) missing("descr");
    if (!fortran_order) missing("fortran_order");
    if (!shape) missing("shape");

    Header header;
    header.descr = *descr;
    header.type = element_type_for_descr(*descr);
    if (*fortran_order) {
      fail_field(origin_, "fortran_order",
                 "True (Fortran order) is not supported; save a C-ordered array (numpy.ascontiguousarray)");
    }
    int64_t count = 0;
    try {
      count = shape_element_count(*shape);
    } catch (const InvalidValueError&) {
      fail_field(origin_, "shape", fmt::format("{}: the element count overflows 64 bits", shape_to_string(*shape)));
    }
    const uint64_t size = element_size(header.type);
    if (static_cast<uint64_t>(count) > std::numeric_limits<uint64_t>::max() / size) {
      fail_field(origin_, "shape", fmt::format("{}: the data size overflows 64 bits", shape_to_string(*shape)));
    }
    header.data_bytes = static_cast<uint64_t>(count) * size;
    header.shape = std::move(*shape);
    return header;
  }

 private:
  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  void expect(char c, std::string_view what) {
    if (!at(c)) syntax_error(what);
    ++pos_;
  }

  [[noreturn]] void syntax_error(std::string_view expected) const {
    fail(origin_, fmt::format("invalid .npy header: expected {} at offset {} of {}", expected, pos_,
                              excerpt(text_)));
  }

  [[noreturn]] void duplicate(std::string_view key) const {
    fail(origin_, fmt::format("invalid .npy header: key '{}' appears twice", key));
  }

  [[noreturn]] void missing(std::string_view key) const {
    fail(origin_, fmt::format("invalid .npy header: missing key '{}' in {}", key, excerpt(text_)));
  }

  std::string parse_string(std::string_view what) {
    if (!at('\'') && !at('"')) syntax_error(what);
    const char quote = text_[pos_++];
    const std::size_t begin = pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') syntax_error("a string without escape sequences");
      if (text_[pos_] == '\n') syntax_error("a closing quote before the end of the line");
      ++pos_;
    }
    if (pos_ == text_.size()) syntax_error("a closing quote");
    return std::string(text_.substr(begin, pos_++ - begin));
  }

  bool parse_bool() {
    for (const auto& [word, value] : {std::pair<std::string_view, bool>{"True", true}, {"False", false}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    const std::size_t end = std::min(text_.size(), pos_ + 16);
    fail_field(origin_, "fortran_order", fmt::format("expected True or False, found {}", excerpt(text_.substr(pos_, end - pos_))));
  }

  Shape parse_shape() {
    Shape shape;
    if (!at('(')) fail_field(origin_, "shape", fmt::format("expected a tuple such as (2, 3), found {}", excerpt(text_.substr(pos_, 16))));
    ++pos_;
    skip_space();
    bool trailing_comma = false;
    while (!at(')')) {
      if (pos_ >= text_.size()) syntax_error("')' closing the shape tuple");
      shape.push_back(parse_dimension(shape.size()));
      skip_space();
      trailing_comma = at(',');
      if (trailing_comma) {
        ++pos_;
        skip_space();
      } else if (!at(')')) {
        syntax_error("',' or ')' in the shape tuple");
      }
    }
    ++pos_;
    // In Python "(3)" is the integer 3, not a tuple.
    if (shape.size() == 1 && !trailing_comma) {
      fail_field(origin_, "shape", fmt::format("({}) is not a tuple; a 1-d shape is written ({},)", shape[0], shape[0]));
    }
    return shape;
  }

  int64_t parse_dimension(std::size_t index) {
    if (at('-')) {
      std::size_t end = pos_ + 1;
      while (end < text_.size() && text_[end] >= '0' && text_[end] <= '9') ++end;
      fail_field(origin_, "shape", fmt::format("dimension {} is negative ({})", index, text_.substr(pos_, end - pos_)));
    }
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') {
      fail_field(origin_, "shape", fmt::format("dimension {} is not a non-negative integer: {}", index,
                                               excerpt(text_.substr(pos_, 16))));
    }
    uint64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const auto digit = static_cast<uint64_t>(text_[pos_] - '0');
      if (value > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - digit) / 10) {
        fail_field(origin_, "shape", fmt::format("dimension {} does not fit in 64 bits", index));
      }
      value = value * 10 + digit;
      ++pos_;
    }
    // Python 2 numpy wrote long integers with an L suffix.
    if (at('L') || at('l')) ++pos_;
    return static_cast<int64_t>(value);
  }

  ElementType element_type_for_descr(std::string_view descr) const {
    if (descr.size() < 2) fail_field(origin_, "descr", fmt::format("{} is not a dtype string such as '<f4'", excerpt(descr)));
    const char order = descr[0];
    const std::string_view code = descr.substr(1);
    for (const auto& entry : kDtypes) {
      if (entry.code != code) continue;
      const bool single_byte = element_size(entry.type) == 1;
      // Byte order means nothing for one-byte types; numpy writes '|' for them.
      if (order == '<' || (single_byte && (order == '|' || order == '>' || order == '='))) return entry.type;
      if (order == '>') {
        fail_field(origin_, "descr", fmt::format("big-endian data ('{}') is not supported; save it as '<{}'", descr, code));
      }
      fail_field(origin_, "descr", fmt::format("byte order '{}' in '{}' is not supported; multi-byte data must be "
                                               "little-endian ('<{}')", order, descr, code));
    }
    fail_field(origin_, "descr", fmt::format("unsupported dtype {} (supported: float16/32/64, int8..int64, "
                                             "uint8..uint64, bool, complex64/128)", excerpt(descr)));
  }

  std::string_view text_;
  const std::string& origin_;
  std::size_t pos_ = 0;
};

struct Layout {
  Header header;
  uint64_t data_offset = 0;
};

Layout parse_layout(std::span<const std::byte> head, uint64_t total, const std::string& origin) {
  const Prefix prefix = parse_prefix(head, total, origin);
  if (head.size() < prefix.header_begin + prefix.header_length) {
    fail(origin, "internal error: the header was not read completely");
  }
  const std::string_view text(reinterpret_cast<const char*>(head.data()) + prefix.header_begin, prefix.header_length);
  Layout layout;
  layout.header = HeaderParser(text, origin).parse();
  layout.data_offset = prefix.header_begin + prefix.header_length;
  const uint64_t available = total - layout.data_offset;
  const Header& h = layout.header;
  if (available != h.data_bytes) {
    fail(origin, fmt::format("{} .npy data: the header ('{}', shape {}) needs {} bytes of data but the file has {}",
                             available < h.data_bytes ? "truncated" : "oversized", h.descr, shape_to_string(h.shape),
                             h.data_bytes, available));
  }
  return layout;
}

std::string_view descr_for(ElementType type, const std::string& destination) {
  switch (type) {
    case ElementType::float32: return "<f4";
    case ElementType::float64: return "<f8";
    case ElementType::float16: return "<f2";
    case ElementType::int8: return "|i1";
    case ElementType::int16: return "<i2";
    case ElementType::int32: return "<i4";
    case ElementType::int64: return "<i8";
    case ElementType::uint8: return "|u1";
    case ElementType::uint16: return "<u2";
    case ElementType::uint32: return "<u4";
    case ElementType::uint64: return "<u8";
    case ElementType::boolean: return "|b1";
    case ElementType::complex64: return "<c8";
    case ElementType::complex128: return "<c16";
    case ElementType::bfloat16:
      throw InvalidValueError(fmt::format("{}: bfloat16 has no NumPy .npy dtype; convert the tensor to float32 "
                                          "before writing it",
                                          destination));
    default:
      break;
  }
  throw InvalidValueError(fmt::format("{}: cannot write a tensor of element type '{}' as .npy", destination,
                                      element_type_name(type)));
}

// Magic, version, header length and the padded header: everything before the data.
std::string npy_preamble(const Tensor& tensor, const std::string& destination) {
  if (tensor.empty()) {
    throw InvalidValueError(fmt::format("{}: cannot write an empty (undefined) tensor as .npy", destination));
  }
  std::string shape;
  for (const int64_t dim : tensor.shape()) shape += fmt::format("{}, ", dim);
  if (tensor.rank() > 1) shape.resize(shape.size() - 2);
  if (tensor.rank() == 1) shape.pop_back();  // Python's 1-tuple: "(3,)"
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}",
                                 descr_for(tensor.element_type(), destination), shape);

  // Version 1.0 has a 16-bit header length; only absurdly high ranks need 2.0.
  unsigned major = 1;
  std::size_t prefix = kMagicAndVersion + 2;
  std::size_t unpadded = prefix + dict.size() + 1;
  if ((unpadded + kHeaderAlignment - 1) / kHeaderAlignment * kHeaderAlignment - prefix > 0xFFFF) {
    major = 2;
    prefix = kMagicAndVersion + 4;
    unpadded = prefix + dict.size() + 1;
  }
  const std::size_t padding = (kHeaderAlignment - unpadded % kHeaderAlignment) % kHeaderAlignment;
  dict.append(padding, ' ');
  dict.push_back('\n');
  const std::size_t length = dict.size();

  std::string out(reinterpret_cast<const char*>(kMagic.data()), kMagic.size());
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  for (std::size_t i = 0; i < prefix - kMagicAndVersion; ++i) out.push_back(static_cast<char>((length >> (8 * i)) & 0xFF));
  out += dict;
  return out;
}

std::string errno_text(int error) { return std::strerror(error); }

// Reads up to `size` bytes; returns how many were read (fewer only at end of file).
std::size_t read_up_to(int fd, void* buffer, std::size_t size, const std::filesystem::path& path) {
  std::size_t done = 0;
  auto* out = static_cast<char*>(buffer);
  while (done < size) {
    const ssize_t n = ::read(fd, out + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError(fmt::format("{}: cannot read: {}", path.string(), errno_text(errno)));
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

void write_all(int fd, const void* buffer, std::size_t size, const std::filesystem::path& path) {
  std::size_t done = 0;
  const auto* in = static_cast<const char*>(buffer);
  while (done < size) {
    const ssize_t n = ::write(fd, in + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError(fmt::format("{}: cannot write: {}", path.string(), errno_text(errno)));
    }
    done += static_cast<std::size_t>(n);
  }
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// The whole file's size according to its header, or nullopt while `head` is too short to tell.
std::optional<uint64_t> expected_file_size(std::span<const std::byte> head, const std::string& origin) {
  if (head.size() < kLongestPrefix) return std::nullopt;
  const Prefix prefix = parse_prefix(head, std::numeric_limits<uint64_t>::max(), origin);
  const std::size_t header_end = prefix.header_begin + prefix.header_length;
  if (head.size() < header_end) return std::nullopt;
  const std::string_view text(reinterpret_cast<const char*>(head.data()) + prefix.header_begin, prefix.header_length);
  const Header header = HeaderParser(text, origin).parse();
  if (header.data_bytes > std::numeric_limits<uint64_t>::max() - header_end - 1) {
    fail_field(origin, "shape", fmt::format("{}: the file size overflows 64 bits", shape_to_string(header.shape)));
  }
  return header_end + header.data_bytes;
}

}  // namespace

Tensor parse_npy(std::span<const std::byte> bytes, const std::string& origin) {
  const Layout layout = parse_layout(bytes, bytes.size(), origin);
  return Tensor::from_bytes(layout.header.type, layout.header.shape,
                            bytes.subspan(static_cast<std::size_t>(layout.data_offset)));
}

Tensor read_npy(const std::filesystem::path& path) {
  const std::string origin = path.string();
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw IoError(fmt::format("{}: cannot open: {}", origin, errno_text(errno)));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw IoError(fmt::format("{}: cannot stat: {}", origin, errno_text(errno)));
  if (S_ISDIR(st.st_mode)) throw IoError(fmt::format("{}: is a directory, not a .npy file", origin));

  if (!S_ISREG(st.st_mode)) {
    // Pipes and process substitutions have no size up front: read until the header says we have
    // everything (plus one byte to detect excess data) or the stream ends, then parse.
    std::vector<std::byte> all;
    std::optional<uint64_t> expected;
    constexpr std::size_t kChunk = 65536;
    while (!expected || all.size() <= *expected) {
      const std::size_t want =
          expected ? static_cast<std::size_t>(std::min<uint64_t>(kChunk, *expected + 1 - all.size())) : kChunk;
      const std::size_t before = all.size();
      all.resize(before + want);
      const std::size_t n = read_up_to(fd.get(), all.data() + before, want, path);
      all.resize(before + n);
      if (n == 0) break;
      if (!expected) expected = expected_file_size(all, origin);
    }
    return parse_npy(all, origin);
  }

  // Regular files: read the header, validate it against the file size, then read the data straight
  // into the tensor, so a hostile header cannot make us allocate more than the file holds.
  const auto total = static_cast<uint64_t>(st.st_size);
  std::vector<std::byte> head(static_cast<std::size_t>(std::min<uint64_t>(total, kLongestPrefix)));
  head.resize(read_up_to(fd.get(), head.data(), head.size(), path));
  const Prefix prefix = parse_prefix(head, total, origin);
  const std::size_t header_end = prefix.header_begin + prefix.header_length;
  const std::size_t already = head.size();
  if (header_end > already) {
    head.resize(header_end);
    const std::size_t n = read_up_to(fd.get(), head.data() + already, header_end - already, path);
    if (n != header_end - already) throw IoError(fmt::format("{}: the file shrank while it was being read", origin));
  } else {
    head.resize(header_end);  // the data is read below, after the seek
  }
  const Layout layout = parse_layout(head, total, origin);
  if (::lseek(fd.get(), static_cast<off_t>(layout.data_offset), SEEK_SET) < 0) {
    throw IoError(fmt::format("{}: cannot seek to the data: {}", origin, errno_text(errno)));
  }
  Tensor tensor(layout.header.type, layout.header.shape);
  const auto out = tensor.mutable_bytes();
  if (read_up_to(fd.get(), out.data(), out.size(), path) != out.size()) {
    throw IoError(fmt::format("{}: the file shrank while it was being read", origin));
  }
  return tensor;
}

std::vector<std::byte> serialize_npy(const Tensor& tensor) {
  const std::string preamble = npy_preamble(tensor, "<bytes>");
  const auto data = tensor.bytes();
  std::vector<std::byte> out(preamble.size() + data.size());
  std::memcpy(out.data(), preamble.data(), preamble.size());
  if (!data.empty()) std::memcpy(out.data() + preamble.size(), data.data(), data.size());
  return out;
}

void write_npy(const std::filesystem::path& path, const Tensor& tensor) {
  const std::string origin = path.string();
  const std::string preamble = npy_preamble(tensor, origin);  // validate before touching the file
  FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
  if (fd.get() < 0) throw IoError(fmt::format("{}: cannot create: {}", origin, errno_text(errno)));
  struct stat st {};
  const bool regular = ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode);
  try {
    write_all(fd.get(), preamble.data(), preamble.size(), path);
    const auto data = tensor.bytes();
    if (!data.empty()) write_all(fd.get(), data.data(), data.size(), path);
    if (::close(fd.release()) != 0) throw IoError(fmt::format("{}: cannot write: {}", origin, errno_text(errno)));
  } catch (const IoError&) {
    // A partial file would later fail as "truncated"; better no file at all (but never unlink a
    // device or pipe such as /dev/full that we were merely writing into).
    if (regular) ::unlink(path.c_str());
    throw;
  }
}

}  // namespace onnx_light::runtime
