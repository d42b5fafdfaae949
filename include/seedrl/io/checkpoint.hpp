#pragma once
/// \file
/// Checkpoints: a versioned, checksummed file holding a learner's weights, optimizer state,
/// counters and a few strings, written atomically so that a crash at any moment leaves either
/// the previous checkpoint or the new one, never a half-written file under a checkpoint's name.
///
///   - `serialize_checkpoint` / `parse_checkpoint`: the byte format (docs/checkpoints.md), every
///     integer little-endian byte by byte, a CRC-32C per section, one over the header and one
///     over the whole file. Parsing validates everything before it returns, so a caller never
///     sees a half-valid checkpoint.
///   - `write_checkpoint(dir, c)`: writes `ckpt-<step>.seedrl` through a temporary file in the
///     same directory (write, fsync, rename, fsync the directory), then keeps the newest N.
///   - `read_checkpoint(path)`, `latest_checkpoint(dir)`: read one file; find the newest valid
///     one, reporting and skipping temporary, truncated and corrupted files.
///   - `store_parameters` / `restore_parameters`, `store_optimizer` / `restore_optimizer`:
///     move a `Network`'s parameters and an `Optimizer`'s state in and out, checking that the
///     element type and count match.
///
/// Every problem is a `checkpoint_error` whose message names the file and what is wrong.
/// One writer per directory: `write_checkpoint` removes temporary files it finds there.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "seedrl/core/spec.hpp"
#include "seedrl/detail/crc32c.hpp"
#include "seedrl/net/network.hpp"
#include "seedrl/optim/optimizer.hpp"

namespace seedrl {

/// A checkpoint that cannot be written, read or used; `what()` names the file and the problem.
class checkpoint_error : public std::runtime_error {
 public:
  /// `file` may be empty for a checkpoint that lives only in memory.
  checkpoint_error(std::filesystem::path file, const std::string& problem)
      : std::runtime_error("seedrl: checkpoint " +
                           (file.empty() ? std::string("(in memory)") : "'" + file.string() + "'") +
                           ": " + problem),
        file_(std::move(file)),
        problem_(problem) {}

  /// The file concerned (empty for an in-memory checkpoint).
  [[nodiscard]] const std::filesystem::path& file() const noexcept { return file_; }

  /// What is wrong, without the file name (`what()` has both).
  [[nodiscard]] const std::string& problem() const noexcept { return problem_; }

 private:
  std::filesystem::path file_;
  std::string problem_;
};

/// A typed array in a checkpoint, kept as little-endian bytes so that a checkpoint moves between
/// machines unchanged.
struct checkpoint_tensor {
  dtype type = dtype::float32;  ///< element type
  std::uint64_t count = 0;      ///< number of elements
  std::vector<std::byte> data;  ///< `count * size_of(type)` bytes, little-endian elements

  /// The tensor holding a copy of `values`.
  template <class T>
  [[nodiscard]] static checkpoint_tensor from(std::span<const T> values);

  /// Copies the elements into `out`; throws `std::invalid_argument` unless the element type is
  /// `T` and `out` has exactly `count` elements.
  template <class T>
  void copy_to(std::span<T> out) const;
};

/// A counter: an exact integer (frames, steps) or a double (a running mean, a timer).
using checkpoint_counter = std::variant<std::int64_t, double>;

/// A checkpoint in memory. Tensors and blobs become one section each, named by their key;
/// counters and meta strings become the sections "counters" and "meta". Section names are
/// unique in a file, so a tensor or blob may not be called "counters" or "meta".
struct checkpoint {
  std::int64_t step = 0;  ///< training step (>= 0): names the file and orders checkpoints
  std::map<std::string, checkpoint_tensor, std::less<>> tensors;     ///< e.g. "parameters"
  std::map<std::string, std::vector<std::byte>, std::less<>> blobs;  ///< e.g. "optimizer"
  std::map<std::string, checkpoint_counter, std::less<>> counters;   ///< e.g. "frames"
  std::map<std::string, std::string, std::less<>> meta;              ///< e.g. "network"
  std::filesystem::path source;  ///< the file it was read from, for messages; empty if none

  /// The tensor `name`; throws `checkpoint_error` listing the tensors there are.
  [[nodiscard]] const checkpoint_tensor& tensor(std::string_view name) const;
  /// The blob `name`; throws `checkpoint_error` listing the blobs there are.
  [[nodiscard]] std::span<const std::byte> blob(std::string_view name) const;
  /// The integer counter `name`; throws `checkpoint_error` if it is missing or a double.
  [[nodiscard]] std::int64_t int_counter(std::string_view name) const;
  /// The double counter `name`; throws `checkpoint_error` if it is missing or an integer.
  [[nodiscard]] double double_counter(std::string_view name) const;
  /// The meta string `name`, or nullopt.
  [[nodiscard]] std::optional<std::string> meta_value(std::string_view name) const;
};

/// Receives each file `latest_checkpoint` skips, or that `write_checkpoint` could not clean up,
/// with the reason.
using checkpoint_report =
    std::function<void(const std::filesystem::path& file, const std::string& reason)>;

/// The default report: one line on stderr.
inline void log_checkpoint_problem(const std::filesystem::path& file, const std::string& reason) {
  std::cerr << "seedrl: checkpoint '" << file.string() << "': " << reason << '\n';
}

/// How `write_checkpoint` behaves.
struct checkpoint_write_options {
  /// Checkpoints kept in the directory, the new one included; older ones are deleted once the
  /// new one is durable. 0 keeps every checkpoint.
  std::size_t keep_last = 5;
  /// Told about files that could not be deleted (the new checkpoint is saved regardless).
  checkpoint_report report = log_checkpoint_problem;
};

// ---------------------------------------------------------------------------------------------
// Format constants (docs/checkpoints.md)

/// The first 8 bytes of every checkpoint file.
inline constexpr char checkpoint_magic[8] = {'S', 'E', 'E', 'D', 'R', 'L', 'C', 'K'};
/// The format this build writes and reads.
inline constexpr std::uint32_t checkpoint_format_version = 1;
/// Bytes before the first section: magic, version, section count, file size, step, header CRC.
inline constexpr std::size_t checkpoint_header_size = 36;
/// Bytes of a section before its name: kind, name length, payload length.
inline constexpr std::size_t checkpoint_section_header_size = 16;
/// Longest section, counter or meta name.
inline constexpr std::size_t checkpoint_max_name_size = 255;

/// What a section holds. Numbers are part of the file format: never renumber them.
enum class checkpoint_section_kind : std::uint32_t {
  tensor = 1,    ///< u32 dtype, u64 count, the elements
  blob = 2,      ///< raw bytes (an optimizer's `save_state()`)
  counters = 3,  ///< named int64 and float64 values
  meta = 4,      ///< named strings
};

/// "ckpt-000000000042.seedrl": zero padded so that names sort like steps in a listing.
[[nodiscard]] inline std::string checkpoint_file_name(std::int64_t step) {
  if (step < 0) {
    throw std::invalid_argument("seedrl: checkpoint step must be >= 0, got " +
                                std::to_string(step));
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "ckpt-%012lld.seedrl", static_cast<long long>(step));
  return buf;
}

/// The step in a checkpoint file name made by `checkpoint_file_name`, or nullopt for any other
/// name (temporary files included).
[[nodiscard]] inline std::optional<std::int64_t> parse_checkpoint_file_name(std::string_view name) {
  constexpr std::string_view prefix = "ckpt-", suffix = ".seedrl";
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) ||
      !name.ends_with(suffix)) {
    return std::nullopt;
  }
  const std::string_view digits =
      name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  std::int64_t step = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (ec != std::errc{} || end != digits.data() + digits.size() || digits.front() == '-' ||
      digits.front() == '+') {
    return std::nullopt;
  }
  return step;
}

namespace detail {

/// Temporary files are named "<final name>.tmp-<pid>-<n>"; this part tells them apart.
inline constexpr std::string_view checkpoint_temp_marker = ".seedrl.tmp-";

inline bool is_checkpoint_temp_name(std::string_view name) {
  return name.starts_with("ckpt-") && name.find(checkpoint_temp_marker) != std::string_view::npos;
}

inline void checkpoint_put_u32(std::vector<std::byte>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) {
    out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xFFu));
  }
}

inline void checkpoint_put_u64(std::vector<std::byte>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xFFu));
  }
}

inline void checkpoint_put_bytes(std::vector<std::byte>& out, std::string_view s) {
  for (const char c : s) {
    out.push_back(static_cast<std::byte>(c));
  }
}

inline std::uint32_t checkpoint_get_u32(const std::byte* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v |= std::to_integer<std::uint32_t>(p[i]) << (8 * i);
  }
  return v;
}

inline std::uint64_t checkpoint_get_u64(const std::byte* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v |= std::to_integer<std::uint64_t>(p[i]) << (8 * i);
  }
  return v;
}

/// "0x1234abcd", for CRC messages.
inline std::string checkpoint_hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", static_cast<unsigned>(v));
  return buf;
}

/// A name as read from a possibly damaged file, quoted with unprintable bytes escaped.
inline std::string checkpoint_quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7F || c == '"' || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(u));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

/// Names of a map's keys, for "it has: ..." in messages.
template <class Map>
std::string checkpoint_key_list(const Map& m) {
  if (m.empty()) {
    return "none";
  }
  std::string s;
  for (const auto& [key, value] : m) {
    s += (s.empty() ? "" : ", ") + checkpoint_quote(key);
  }
  return s;
}

/// Why a section, counter or meta name is unusable, or empty if it is fine.
inline std::string checkpoint_name_problem(std::string_view name) {
  if (name.empty()) {
    return "is empty";
  }
  if (name.size() > checkpoint_max_name_size) {
    return "is " + std::to_string(name.size()) + " bytes long (at most " +
           std::to_string(checkpoint_max_name_size) + ")";
  }
  if (name.find('\0') != std::string_view::npos) {
    return "contains a NUL byte";
  }
  return {};
}

inline bool checkpoint_dtype_known(std::uint32_t code) {
  return code >= static_cast<std::uint32_t>(dtype::uint8) &&
         code <= static_cast<std::uint32_t>(dtype::float64);
}

/// The unsigned integer with the bits of T (one of dtype's types).
template <class T>
using checkpoint_bits_t =
    std::conditional_t<sizeof(T) == 1, std::uint8_t,
                       std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>;

/// A bounds-checked cursor over one section's payload; a read past its end throws with the
/// section's name. Reached only after the section's CRC matched, so a failure here means the
/// writer was wrong, not the disk.
class checkpoint_cursor {
 public:
  checkpoint_cursor(std::span<const std::byte> payload, const std::filesystem::path& file,
                    std::string section)
      : payload_(payload), file_(file), section_(std::move(section)) {}

  std::uint32_t u32(const char* what) { return checkpoint_get_u32(take(4, what)); }
  std::uint64_t u64(const char* what) { return checkpoint_get_u64(take(8, what)); }
  std::string_view text(std::uint64_t n, const char* what) {
    return {reinterpret_cast<const char*>(take(n, what)), static_cast<std::size_t>(n)};
  }
  [[nodiscard]] std::size_t remaining() const noexcept { return payload_.size() - pos_; }
  [[noreturn]] void fail(const std::string& problem) const {
    throw checkpoint_error(file_,
                           "section " + checkpoint_quote(section_) + " is malformed: " + problem);
  }

 private:
  const std::byte* take(std::uint64_t n, const char* what) {
    if (n > remaining()) {
      fail(std::string(what) + " at payload byte " + std::to_string(pos_) + " needs " +
           std::to_string(n) + " bytes but only " + std::to_string(remaining()) + " remain");
    }
    const std::byte* p = payload_.data() + pos_;
    pos_ += static_cast<std::size_t>(n);
    return p;
  }

  std::span<const std::byte> payload_;
  const std::filesystem::path& file_;
  std::string section_;
  std::size_t pos_ = 0;
};

/// "open: No such file or directory", from errno.
inline std::string errno_text(const char* call, int err) {
  return std::string(call) + ": " + std::system_category().message(err);
}

/// Writes all of `bytes` to `fd`, through short writes and signals.
inline int write_all(int fd, std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const ::ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return errno;
    }
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
  return 0;
}

/// fsync on a directory makes a rename or unlink in it durable. Some file systems cannot sync a
/// directory (EINVAL); they give no stronger guarantee to ask for, so that is not an error.
inline int fsync_directory(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return errno;
  }
  int err = 0;
  if (::fsync(fd) != 0 && errno != EINVAL) {
    err = errno;
  }
  ::close(fd);
  return err;
}

/// Makes the entries of one directory durable; `fsync_directory` unless a test records the calls.
using directory_sync = std::function<int(const std::filesystem::path&)>;

/// Creates `dir` and whatever ancestors it lacks, as std::filesystem::create_directories does,
/// and makes every directory it created durable: a new directory's entry lives in its parent,
/// so `sync` is called on the parent of each, the first existing ancestor first and then each
/// new directory down to the parent of `dir` (for a/b/c under an existing root: root, a, a/b).
/// In that order a power cut between two syncs leaves the durable directories a chain from the
/// existing one, never a durable directory whose own entry could still be lost. `dir` itself is
/// left to the caller, who syncs it after putting something in it. Returns what went wrong, or
/// an empty string.
[[nodiscard]] inline std::string create_directories_durably(
    const std::filesystem::path& dir, const directory_sync& sync = fsync_directory) {
  std::error_code ec;
  std::filesystem::path target = std::filesystem::absolute(dir, ec);
  if (ec) {
    return "cannot create directory '" + dir.string() + "': " + ec.message();
  }
  if (target.filename().empty() && target.has_relative_path()) {  // "runs/ckpt/"
    target = target.parent_path();
  }
  // The directories this call is to create, deepest first, found before creating any: after
  // create_directories they would be indistinguishable from those that already existed.
  std::vector<std::filesystem::path> missing;
  for (std::filesystem::path p = target; p.has_relative_path(); p = p.parent_path()) {
    if (std::filesystem::exists(p, ec) || ec) {  // an error here resurfaces when creating
      break;
    }
    missing.push_back(p);
  }
  if (!std::filesystem::create_directories(dir, ec) && ec) {
    return "cannot create directory '" + dir.string() + "': " + ec.message();
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    const std::filesystem::path parent = it->parent_path();
    if (const int err = sync(parent); err != 0) {
      return "cannot sync directory '" + parent.string() + "': " + errno_text("fsync", err);
    }
  }
  return {};
}

/// A temporary-file name no other write in this process uses.
inline std::string checkpoint_temp_name(const std::string& final_name) {
  static std::atomic<std::uint64_t> counter{0};
  return final_name + ".tmp-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter.fetch_add(1));
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// checkpoint_tensor and checkpoint members

template <class T>
checkpoint_tensor checkpoint_tensor::from(std::span<const T> values) {
  checkpoint_tensor t;
  t.type = dtype_of<T>();  // a compile error for element types with no dtype
  t.count = values.size();
  if constexpr (std::endian::native == std::endian::little) {
    // The in-memory bytes already are the file's; large tensors skip the loop below.
    t.data.resize(values.size_bytes());
    if (!values.empty()) {
      std::memcpy(t.data.data(), values.data(), values.size_bytes());
    }
    return t;
  }
  t.data.reserve(values.size() * sizeof(T));
  using bits = detail::checkpoint_bits_t<T>;
  for (const T x : values) {
    const auto b = std::bit_cast<bits>(x);
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      t.data.push_back(static_cast<std::byte>((b >> (8 * i)) & 0xFFu));
    }
  }
  return t;
}

template <class T>
void checkpoint_tensor::copy_to(std::span<T> out) const {
  if (type != dtype_of<T>()) {
    throw std::invalid_argument(std::string("seedrl: checkpoint tensor holds ") + to_string(type) +
                                " elements, not " + to_string(dtype_of<T>()));
  }
  if (count != out.size()) {
    throw std::invalid_argument("seedrl: checkpoint tensor holds " + std::to_string(count) +
                                " elements but the destination has " + std::to_string(out.size()));
  }
  if (data.size() != out.size() * sizeof(T)) {
    throw std::invalid_argument("seedrl: checkpoint tensor has " + std::to_string(data.size()) +
                                " data bytes for " + std::to_string(count) + " elements");
  }
  if constexpr (std::endian::native == std::endian::little) {
    if (!out.empty()) {
      std::memcpy(out.data(), data.data(), data.size());
    }
    return;
  }
  using bits = detail::checkpoint_bits_t<T>;
  for (std::size_t k = 0; k < out.size(); ++k) {
    bits b = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      b = static_cast<bits>(b | (std::to_integer<bits>(data[k * sizeof(T) + i]) << (8 * i)));
    }
    out[k] = std::bit_cast<T>(b);
  }
}

inline const checkpoint_tensor& checkpoint::tensor(std::string_view name) const {
  const auto it = tensors.find(name);
  if (it == tensors.end()) {
    throw checkpoint_error(source, "has no tensor " + detail::checkpoint_quote(name) +
                                       " (tensors: " + detail::checkpoint_key_list(tensors) + ")");
  }
  return it->second;
}

inline std::span<const std::byte> checkpoint::blob(std::string_view name) const {
  const auto it = blobs.find(name);
  if (it == blobs.end()) {
    throw checkpoint_error(source, "has no blob " + detail::checkpoint_quote(name) +
                                       " (blobs: " + detail::checkpoint_key_list(blobs) + ")");
  }
  return it->second;
}

inline std::int64_t checkpoint::int_counter(std::string_view name) const {
  const auto it = counters.find(name);
  if (it == counters.end()) {
    throw checkpoint_error(source, "has no counter " + detail::checkpoint_quote(name) +
                                       " (counters: " + detail::checkpoint_key_list(counters) +
                                       ")");
  }
  if (const auto* v = std::get_if<std::int64_t>(&it->second)) {
    return *v;
  }
  throw checkpoint_error(
      source, "counter " + detail::checkpoint_quote(name) + " is a double, not an integer");
}

inline double checkpoint::double_counter(std::string_view name) const {
  const auto it = counters.find(name);
  if (it == counters.end()) {
    throw checkpoint_error(source, "has no counter " + detail::checkpoint_quote(name) +
                                       " (counters: " + detail::checkpoint_key_list(counters) +
                                       ")");
  }
  if (const auto* v = std::get_if<double>(&it->second)) {
    return *v;
  }
  throw checkpoint_error(
      source, "counter " + detail::checkpoint_quote(name) + " is an integer, not a double");
}

inline std::optional<std::string> checkpoint::meta_value(std::string_view name) const {
  const auto it = meta.find(name);
  if (it == meta.end()) {
    return std::nullopt;
  }
  return it->second;
}

// ---------------------------------------------------------------------------------------------
// Serialisation

/// The file image of `c` (docs/checkpoints.md). Throws `checkpoint_error` for a checkpoint that
/// cannot be written: a negative step, a bad or duplicate name, a tensor whose data size does
/// not match its type and count.
[[nodiscard]] inline std::vector<std::byte> serialize_checkpoint(const checkpoint& c) {
  const auto fail = [&c](const std::string& problem) {
    throw checkpoint_error(c.source, "cannot be written: " + problem);
  };
  if (c.step < 0) {
    fail("step is negative (" + std::to_string(c.step) + ")");
  }
  const auto check_name = [&fail](const char* what, std::string_view name) {
    if (const std::string p = detail::checkpoint_name_problem(name); !p.empty()) {
      fail(std::string(what) + " name " + detail::checkpoint_quote(name) + " " + p);
    }
  };
  for (const auto& [name, t] : c.tensors) {
    check_name("tensor", name);
    if (!detail::checkpoint_dtype_known(static_cast<std::uint32_t>(t.type))) {
      fail("tensor " + detail::checkpoint_quote(name) + " has an unknown dtype");
    }
    if (t.count > (std::uint64_t{1} << 60) || t.data.size() != t.count * size_of(t.type)) {
      fail("tensor " + detail::checkpoint_quote(name) + " has " + std::to_string(t.data.size()) +
           " data bytes for " + std::to_string(t.count) + " " + to_string(t.type) + " elements");
    }
  }
  for (const auto& [name, b] : c.blobs) {
    check_name("blob", name);
    if (c.tensors.contains(name)) {
      fail("the name " + detail::checkpoint_quote(name) + " is both a tensor and a blob");
    }
  }
  for (const std::string_view reserved : {"counters", "meta"}) {
    if (c.tensors.contains(reserved) || c.blobs.contains(reserved)) {
      fail("the name " + detail::checkpoint_quote(reserved) +
           " is the counters or meta section; pick another tensor or blob name");
    }
  }
  for (const auto& [key, v] : c.counters) {
    check_name("counter", key);
  }
  for (const auto& [key, v] : c.meta) {
    check_name("meta", key);
    if (v.size() > 0xFFFFFFFFu) {
      fail("meta value " + detail::checkpoint_quote(key) + " is longer than 4 GiB");
    }
  }

  std::vector<std::byte> out;
  std::size_t total = checkpoint_header_size + 4;
  for (const auto& [name, t] : c.tensors) {
    total += checkpoint_section_header_size + name.size() + 12 + t.data.size() + 4;
  }
  for (const auto& [name, b] : c.blobs) {
    total += checkpoint_section_header_size + name.size() + b.size() + 4;
  }
  out.reserve(total + 4096);

  for (const char ch : checkpoint_magic) {
    out.push_back(static_cast<std::byte>(ch));
  }
  detail::checkpoint_put_u32(out, checkpoint_format_version);
  detail::checkpoint_put_u32(out,
                             static_cast<std::uint32_t>(2 + c.tensors.size() + c.blobs.size()));
  detail::checkpoint_put_u64(out, 0);  // file size, patched below
  detail::checkpoint_put_u64(out, static_cast<std::uint64_t>(c.step));
  detail::checkpoint_put_u32(out, 0);  // header CRC, patched below

  // One section: kind, name length, payload length, name, payload, CRC of all of them.
  const auto section = [&out](checkpoint_section_kind kind, std::string_view name,
                              const auto& write_payload) {
    const std::size_t start = out.size();
    detail::checkpoint_put_u32(out, static_cast<std::uint32_t>(kind));
    detail::checkpoint_put_u32(out, static_cast<std::uint32_t>(name.size()));
    detail::checkpoint_put_u64(out, 0);  // payload length, patched below
    detail::checkpoint_put_bytes(out, name);
    const std::size_t payload_start = out.size();
    write_payload();
    const std::uint64_t payload = out.size() - payload_start;
    for (int i = 0; i < 8; ++i) {
      out[start + 8 + static_cast<std::size_t>(i)] =
          static_cast<std::byte>((payload >> (8 * i)) & 0xFFu);
    }
    detail::checkpoint_put_u32(
        out, detail::crc32c(std::span<const std::byte>(out).subspan(start, out.size() - start)));
  };

  section(checkpoint_section_kind::counters, "counters", [&] {
    detail::checkpoint_put_u32(out, static_cast<std::uint32_t>(c.counters.size()));
    for (const auto& [key, v] : c.counters) {
      detail::checkpoint_put_u32(out, static_cast<std::uint32_t>(key.size()));
      detail::checkpoint_put_bytes(out, key);
      if (const auto* i = std::get_if<std::int64_t>(&v)) {
        detail::checkpoint_put_u32(out, 1);
        detail::checkpoint_put_u64(out, static_cast<std::uint64_t>(*i));
      } else {
        detail::checkpoint_put_u32(out, 2);
        detail::checkpoint_put_u64(out, std::bit_cast<std::uint64_t>(std::get<double>(v)));
      }
    }
  });
  section(checkpoint_section_kind::meta, "meta", [&] {
    detail::checkpoint_put_u32(out, static_cast<std::uint32_t>(c.meta.size()));
    for (const auto& [key, v] : c.meta) {
      detail::checkpoint_put_u32(out, static_cast<std::uint32_t>(key.size()));
      detail::checkpoint_put_bytes(out, key);
      detail::checkpoint_put_u32(out, static_cast<std::uint32_t>(v.size()));
      detail::checkpoint_put_bytes(out, v);
    }
  });
  // Named entries, not structured bindings: clang before 16 cannot capture a binding in a lambda.
  for (const auto& entry : c.tensors) {
    const auto& t = entry.second;
    section(checkpoint_section_kind::tensor, entry.first, [&] {
      detail::checkpoint_put_u32(out, static_cast<std::uint32_t>(t.type));
      detail::checkpoint_put_u64(out, t.count);
      out.insert(out.end(), t.data.begin(), t.data.end());
    });
  }
  for (const auto& entry : c.blobs) {
    const auto& b = entry.second;
    section(checkpoint_section_kind::blob, entry.first,
            [&] { out.insert(out.end(), b.begin(), b.end()); });
  }

  const std::uint64_t file_size = out.size() + 4;
  for (int i = 0; i < 8; ++i) {
    out[16 + static_cast<std::size_t>(i)] = static_cast<std::byte>((file_size >> (8 * i)) & 0xFFu);
  }
  const std::uint32_t header_crc = detail::crc32c(std::span<const std::byte>(out).first(32));
  for (int i = 0; i < 4; ++i) {
    out[32 + static_cast<std::size_t>(i)] = static_cast<std::byte>((header_crc >> (8 * i)) & 0xFFu);
  }
  detail::checkpoint_put_u32(out, detail::crc32c(out));
  return out;
}

/// Parses and validates a whole file image: magic, version, sizes, every CRC, every section's
/// contents. Returns only a fully valid checkpoint; anything else throws `checkpoint_error`
/// naming `source` and the first problem found (where, and what).
[[nodiscard]] inline checkpoint parse_checkpoint(std::span<const std::byte> bytes,
                                                 const std::filesystem::path& source = {}) {
  const auto fail = [&source](const std::string& problem) {
    throw checkpoint_error(source, problem);
  };
  const std::size_t size = bytes.size();
  const std::byte* p = bytes.data();
  const std::string size_text = std::to_string(size);

  // Magic and version first: they are the same in every format version, the rest is not.
  const std::size_t magic_seen = std::min(size, sizeof checkpoint_magic);
  if (magic_seen > 0 && std::memcmp(p, checkpoint_magic, magic_seen) != 0) {
    fail("not a seedrl checkpoint (the file does not start with \"SEEDRLCK\")");
  }
  if (size < 12) {
    fail("truncated at byte " + size_text + ": the file ends inside its " +
         std::to_string(checkpoint_header_size) + "-byte header" +
         (size == 0 ? " (the file is empty)" : ""));
  }
  const std::uint32_t version = detail::checkpoint_get_u32(p + 8);
  if (version != checkpoint_format_version) {
    fail("unknown format version " + std::to_string(version) + " (this build reads version " +
         std::to_string(checkpoint_format_version) + ")");
  }
  if (size < checkpoint_header_size) {
    fail("truncated at byte " + size_text + ": the file ends inside its " +
         std::to_string(checkpoint_header_size) + "-byte header");
  }
  const std::uint32_t header_crc = detail::crc32c(bytes.first(32));
  if (header_crc != detail::checkpoint_get_u32(p + 32)) {
    fail("CRC mismatch in the header (stored " +
         detail::checkpoint_hex(detail::checkpoint_get_u32(p + 32)) + ", computed " +
         detail::checkpoint_hex(header_crc) + ")");
  }
  const std::uint32_t section_count = detail::checkpoint_get_u32(p + 12);
  const std::uint64_t declared_size = detail::checkpoint_get_u64(p + 16);
  const auto step = static_cast<std::int64_t>(detail::checkpoint_get_u64(p + 24));
  if (declared_size < checkpoint_header_size + 4) {
    fail("the header declares an impossible file size of " + std::to_string(declared_size) +
         " bytes");
  }
  if (size < declared_size) {
    fail("truncated at byte " + size_text + ": the header says the file has " +
         std::to_string(declared_size) + " bytes");
  }
  if (size > declared_size) {
    fail("has " + std::to_string(size - declared_size) +
         " unexpected bytes after its declared end at byte " + std::to_string(declared_size));
  }
  if (step < 0) {
    fail("the header holds a negative step (" + std::to_string(step) + ")");
  }

  checkpoint c;
  c.step = step;
  c.source = source;
  bool have_counters = false, have_meta = false;
  const std::size_t sections_end = size - 4;
  std::size_t pos = checkpoint_header_size;
  for (std::uint32_t index = 0; index < section_count; ++index) {
    const std::string where =
        "section #" + std::to_string(index) + " at byte " + std::to_string(pos);
    if (sections_end - pos < checkpoint_section_header_size) {
      fail(where + " does not fit: its 16-byte header would run past byte " +
           std::to_string(sections_end) + " where the file's trailing CRC starts (the header " +
           "says there are " + std::to_string(section_count) + " sections)");
    }
    const std::uint32_t kind = detail::checkpoint_get_u32(p + pos);
    const std::uint32_t name_size = detail::checkpoint_get_u32(p + pos + 4);
    const std::uint64_t payload_size = detail::checkpoint_get_u64(p + pos + 8);
    if (name_size == 0 || name_size > checkpoint_max_name_size) {
      fail(where + " has a name length of " + std::to_string(name_size) + " (must be 1 to " +
           std::to_string(checkpoint_max_name_size) + ")");
    }
    const std::size_t room = sections_end - pos - checkpoint_section_header_size;
    if (name_size > room || payload_size > room - name_size ||
        room - name_size - payload_size < 4) {
      fail(where + " claims a " + std::to_string(payload_size) +
           "-byte payload that runs past byte " + std::to_string(sections_end) +
           " where the file's trailing CRC starts");
    }
    const std::size_t name_at = pos + checkpoint_section_header_size;
    const std::size_t payload_at = name_at + name_size;
    const std::size_t crc_at = payload_at + static_cast<std::size_t>(payload_size);
    const std::string name(reinterpret_cast<const char*>(p + name_at), name_size);
    const std::uint32_t crc = detail::crc32c(bytes.subspan(pos, crc_at - pos));
    if (crc != detail::checkpoint_get_u32(p + crc_at)) {
      fail("CRC mismatch in section " + detail::checkpoint_quote(name) + " (" + where + ", bytes " +
           std::to_string(pos) + " to " + std::to_string(crc_at + 4) + "; stored " +
           detail::checkpoint_hex(detail::checkpoint_get_u32(p + crc_at)) + ", computed " +
           detail::checkpoint_hex(crc) + ")");
    }
    // The section's bytes are as written; what follows checks what the writer put there.
    if (const std::string problem = detail::checkpoint_name_problem(name); !problem.empty()) {
      fail(where + ": section name " + detail::checkpoint_quote(name) + " " + problem);
    }
    if (c.tensors.contains(name) || c.blobs.contains(name) ||
        (name == "counters" && have_counters) || (name == "meta" && have_meta)) {
      fail("has two sections named " + detail::checkpoint_quote(name));
    }
    detail::checkpoint_cursor in(bytes.subspan(payload_at, static_cast<std::size_t>(payload_size)),
                                 source, name);
    switch (kind) {
      case static_cast<std::uint32_t>(checkpoint_section_kind::tensor): {
        if (name == "counters" || name == "meta") {
          in.fail("a tensor may not use a reserved section name");
        }
        checkpoint_tensor t;
        const std::uint32_t type = in.u32("dtype");
        if (!detail::checkpoint_dtype_known(type)) {
          in.fail("unknown dtype code " + std::to_string(type));
        }
        t.type = static_cast<dtype>(type);
        t.count = in.u64("element count");
        if (t.count > in.remaining() || t.count * size_of(t.type) != in.remaining()) {
          in.fail(std::to_string(t.count) + " " + to_string(t.type) + " elements do not fill the " +
                  std::to_string(in.remaining()) + " data bytes");
        }
        const std::string_view data = in.text(in.remaining(), "elements");
        t.data.resize(data.size());
        if (!data.empty()) {
          std::memcpy(t.data.data(), data.data(), data.size());
        }
        c.tensors.emplace(name, std::move(t));
        break;
      }
      case static_cast<std::uint32_t>(checkpoint_section_kind::blob): {
        if (name == "counters" || name == "meta") {
          in.fail("a blob may not use a reserved section name");
        }
        const std::string_view data = in.text(in.remaining(), "bytes");
        std::vector<std::byte> blob(data.size());
        if (!data.empty()) {
          std::memcpy(blob.data(), data.data(), data.size());
        }
        c.blobs.emplace(name, std::move(blob));
        break;
      }
      case static_cast<std::uint32_t>(checkpoint_section_kind::counters): {
        if (name != "counters") {
          in.fail("a counters section must be named \"counters\"");
        }
        have_counters = true;
        const std::uint32_t n = in.u32("counter count");
        for (std::uint32_t i = 0; i < n; ++i) {
          const std::string key(in.text(in.u32("counter name length"), "counter name"));
          if (const std::string problem = detail::checkpoint_name_problem(key); !problem.empty()) {
            in.fail("counter name " + detail::checkpoint_quote(key) + " " + problem);
          }
          const std::uint32_t type = in.u32("counter type");
          const std::uint64_t bits = in.u64("counter value");
          checkpoint_counter value;
          if (type == 1) {
            value = static_cast<std::int64_t>(bits);
          } else if (type == 2) {
            value = std::bit_cast<double>(bits);
          } else {
            in.fail("counter " + detail::checkpoint_quote(key) + " has unknown type " +
                    std::to_string(type));
          }
          if (!c.counters.emplace(key, value).second) {
            in.fail("counter " + detail::checkpoint_quote(key) + " appears twice");
          }
        }
        if (in.remaining() != 0) {
          in.fail(std::to_string(in.remaining()) + " bytes left after the last counter");
        }
        break;
      }
      case static_cast<std::uint32_t>(checkpoint_section_kind::meta): {
        if (name != "meta") {
          in.fail("a meta section must be named \"meta\"");
        }
        have_meta = true;
        const std::uint32_t n = in.u32("entry count");
        for (std::uint32_t i = 0; i < n; ++i) {
          const std::string key(in.text(in.u32("key length"), "key"));
          if (const std::string problem = detail::checkpoint_name_problem(key); !problem.empty()) {
            in.fail("meta key " + detail::checkpoint_quote(key) + " " + problem);
          }
          std::string value(in.text(in.u32("value length"), "value"));
          if (!c.meta.emplace(key, std::move(value)).second) {
            in.fail("meta key " + detail::checkpoint_quote(key) + " appears twice");
          }
        }
        if (in.remaining() != 0) {
          in.fail(std::to_string(in.remaining()) + " bytes left after the last entry");
        }
        break;
      }
      default:
        fail(where + " (" + detail::checkpoint_quote(name) + ") has unknown kind " +
             std::to_string(kind) + " (this build knows 1 to 4)");
    }
    pos = crc_at + 4;
  }
  if (pos != sections_end) {
    fail("the header's " + std::to_string(section_count) + " sections end at byte " +
         std::to_string(pos) + " but the file's trailing CRC starts at byte " +
         std::to_string(sections_end));
  }
  const std::uint32_t file_crc = detail::crc32c(bytes.first(sections_end));
  if (file_crc != detail::checkpoint_get_u32(p + sections_end)) {
    fail("CRC mismatch over the whole file (stored " +
         detail::checkpoint_hex(detail::checkpoint_get_u32(p + sections_end)) + ", computed " +
         detail::checkpoint_hex(file_crc) + ")");
  }
  return c;
}

// ---------------------------------------------------------------------------------------------
// Files

/// Reads and validates the checkpoint at `path` (see `parse_checkpoint`). Throws
/// `checkpoint_error` naming the file: cannot be opened or read (with errno's reason),
/// truncated, corrupted, unknown version.
[[nodiscard]] inline checkpoint read_checkpoint(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw checkpoint_error(path, "cannot be read: " + detail::errno_text("open", errno));
  }
  std::vector<std::byte> bytes;
  struct ::stat st {};
  int err = 0;
  if (::fstat(fd, &st) != 0) {
    err = errno;
  } else if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw checkpoint_error(path, "is not a regular file");
  } else {
    bytes.reserve(static_cast<std::size_t>(st.st_size));
    std::byte buf[1 << 16];
    for (;;) {
      const ::ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0) {
        if (errno == EINTR) {
          continue;
        }
        err = errno;
        break;
      }
      if (n == 0) {
        break;
      }
      bytes.insert(bytes.end(), buf, buf + n);
    }
  }
  ::close(fd);
  if (err != 0) {
    throw checkpoint_error(path, "cannot be read: " + detail::errno_text("read", err));
  }
  return parse_checkpoint(bytes, path);
}

namespace detail {

/// A checkpoint-named file in a directory listing.
struct checkpoint_entry {
  std::int64_t step;
  std::filesystem::path path;
};

/// The checkpoint files in `dir`, newest first, and its temporary files. A missing directory
/// has none.
inline std::vector<checkpoint_entry> list_checkpoints(const std::filesystem::path& dir,
                                                      std::vector<std::filesystem::path>* temps) {
  std::vector<checkpoint_entry> found;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    return found;
  }
  std::filesystem::directory_iterator it(dir, ec);
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (const auto step = parse_checkpoint_file_name(name)) {
      found.push_back({*step, it->path()});
    } else if (temps != nullptr && is_checkpoint_temp_name(name)) {
      temps->push_back(it->path());
    }
  }
  if (ec) {
    throw checkpoint_error(dir, "the directory cannot be listed: " + ec.message());
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return a.step != b.step ? a.step > b.step : a.path > b.path;
  });
  return found;
}

/// Where `c` holds a NaN or an infinity (a float tensor's element or a double counter), said
/// in words; empty when it holds none.
inline std::string first_non_finite(const checkpoint& c) {
  const auto describe = [](double v) {
    return std::isnan(v) ? std::string("nan") : (v > 0 ? "inf" : "-inf");
  };
  for (const auto& [name, t] : c.tensors) {
    if (t.type != dtype::float32 && t.type != dtype::float64)
      continue;
    const std::size_t size = size_of(t.type);
    for (std::uint64_t i = 0; i < t.count && (i + 1) * size <= t.data.size(); ++i) {
      double v;
      if (t.type == dtype::float32) {
        float f;
        std::memcpy(&f, t.data.data() + i * size, sizeof f);
        v = f;
      } else {
        std::memcpy(&v, t.data.data() + i * size, sizeof v);
      }
      if (!std::isfinite(v))
        return "tensor " + checkpoint_quote(name) + " element " + std::to_string(i) + " is " +
               describe(v);
    }
  }
  for (const auto& [name, counter] : c.counters) {
    if (const double* v = std::get_if<double>(&counter); v != nullptr && !std::isfinite(*v))
      return "counter " + checkpoint_quote(name) + " is " + describe(*v);
  }
  return {};
}

}  // namespace detail

/// Writes `c` to `dir/ckpt-<step>.seedrl` atomically and durably, and returns that path:
///   1. the whole file goes to a new temporary file in `dir` (same file system, so the rename
///      below is atomic), which is fsync'ed and closed;
///   2. rename() puts it under its final name, replacing any file of the same step;
///   3. `dir` is fsync'ed so that the rename survives a power cut.
/// A crash before 3 leaves the previous checkpoints as they were (and perhaps a temporary file,
/// which readers skip and the next write removes). Only after 3 are checkpoints beyond the
/// newest `options.keep_last` deleted, oldest first; the new one is never among them. Creates
/// `dir` if it is missing. Throws `checkpoint_error` with errno's reason if a step fails; the
/// temporary file is then removed. A checkpoint holding a NaN or an infinity (a float tensor
/// element or a double counter) is refused before anything is written: it could not be
/// restored, and rotation would delete the good ones behind it.
inline std::filesystem::path write_checkpoint(const std::filesystem::path& directory,
                                              const checkpoint& c,
                                              const checkpoint_write_options& options = {}) {
  const std::filesystem::path dir = directory.empty() ? "." : directory;
  const std::filesystem::path final_path = dir / checkpoint_file_name(c.step);
  const auto fail = [&final_path](const std::string& problem) {
    throw checkpoint_error(final_path, "cannot be written: " + problem);
  };
  if (const std::string bad = detail::first_non_finite(c); !bad.empty())
    fail(bad + "; nothing was written and the earlier checkpoints are kept");
  const std::vector<std::byte> bytes = serialize_checkpoint(c);

  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    if (std::filesystem::exists(dir, ec)) {
      fail("'" + dir.string() + "' exists and is not a directory");
    }
    // The new directory's own entry must be durable too, or the file could vanish with it.
    if (const std::string problem = detail::create_directories_durably(dir); !problem.empty()) {
      fail(problem);
    }
  }

  const std::filesystem::path temp_path =
      dir / detail::checkpoint_temp_name(final_path.filename().string());
  const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    fail("cannot create temporary file '" + temp_path.string() +
         "': " + detail::errno_text("open", errno));
  }
  const auto abandon = [&](const std::string& problem) {
    ::unlink(temp_path.c_str());
    fail(problem + " (temporary file '" + temp_path.string() + "' removed)");
  };
  if (const int err = detail::write_all(fd, bytes); err != 0) {
    ::close(fd);
    abandon(detail::errno_text("write", err));
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    abandon(detail::errno_text("fsync", err));
  }
  if (::close(fd) != 0) {  // NFS and friends may report a failed write only here
    abandon(detail::errno_text("close", errno));
  }
  if (::rename(temp_path.c_str(), final_path.c_str()) != 0) {
    abandon(detail::errno_text("rename", errno));
  }
  if (const int err = detail::fsync_directory(dir); err != 0) {
    fail(
        "written, but the directory could not be synced, so the rename may not survive a "
        "power cut: " +
        detail::errno_text("fsync", err));
  }

  // The new checkpoint is durable: now old ones, and temporary files of killed writers, may go.
  // A failure from here on is reported, not thrown: the save itself has succeeded.
  std::vector<std::filesystem::path> temps;
  std::vector<detail::checkpoint_entry> existing;
  try {
    existing = detail::list_checkpoints(dir, &temps);
  } catch (const checkpoint_error& e) {
    if (options.report) {
      options.report(dir, "old checkpoints not cleaned up: " + e.problem());
    }
  }
  const auto remove = [&options](const std::filesystem::path& p) {
    if (::unlink(p.c_str()) != 0 && errno != ENOENT && options.report) {
      options.report(p, "could not be deleted: " + detail::errno_text("unlink", errno));
    }
  };
  for (const auto& t : temps) {
    remove(t);
  }
  if (options.keep_last > 0 && existing.size() > options.keep_last) {
    for (std::size_t i = options.keep_last; i < existing.size(); ++i) {
      if (existing[i].path.filename() != final_path.filename()) {
        remove(existing[i].path);
      }
    }
  }
  return final_path;
}

/// The newest valid checkpoint in `dir`: candidates named `ckpt-<step>.seedrl` are read newest
/// first and the first that passes every check of `read_checkpoint`, and whose header step
/// matches its name, wins. Each temporary file and each rejected candidate is passed to
/// `report` with the reason. Nullopt when `dir` is missing or holds no valid checkpoint.
[[nodiscard]] inline std::optional<checkpoint> read_latest_checkpoint(
    const std::filesystem::path& dir, const checkpoint_report& report = log_checkpoint_problem) {
  std::vector<std::filesystem::path> temps;
  const auto candidates = detail::list_checkpoints(dir, &temps);
  if (report) {
    for (const auto& t : temps) {
      report(t, "skipped: a temporary file left by an interrupted write");
    }
  }
  for (const auto& entry : candidates) {
    try {
      checkpoint c = read_checkpoint(entry.path);
      if (c.step != entry.step) {
        throw checkpoint_error(entry.path, "its header says step " + std::to_string(c.step) +
                                               " but its name says step " +
                                               std::to_string(entry.step));
      }
      return c;
    } catch (const checkpoint_error& e) {
      if (report) {
        report(entry.path, "skipped: " + e.problem());
      }
    }
  }
  return std::nullopt;
}

/// The path of the newest valid checkpoint in `dir`, as `read_latest_checkpoint` chooses it.
[[nodiscard]] inline std::optional<std::filesystem::path> latest_checkpoint(
    const std::filesystem::path& dir, const checkpoint_report& report = log_checkpoint_problem) {
  if (auto c = read_latest_checkpoint(dir, report)) {
    return c->source;
  }
  return std::nullopt;
}

/// Throws `checkpoint_error`, naming `dir`, if it holds files named as checkpoints (valid or
/// not); a missing directory holds none. A new run calls it before saving into `dir`: checkpoints
/// are ranked by step, so beside another run's the new run's saves would be deleted by keep-N
/// retention in favour of the other run's higher steps, and `read_latest_checkpoint` would
/// return the other run. Only a run that resumes from `dir` may save there.
inline void require_no_checkpoints(const std::filesystem::path& dir) {
  const auto found = detail::list_checkpoints(dir, nullptr);
  if (found.empty()) {
    return;
  }
  throw checkpoint_error(
      dir, "already holds " + std::to_string(found.size()) +
               (found.size() == 1 ? " checkpoint" : " checkpoints") +
               " of another run (the newest at step " + std::to_string(found.front().step) +
               "), which this run did not resume from. Checkpoints are ranked by step, so the "
               "runs would mix: the other run's would outlive this run's saves and be the ones "
               "found as newest. To continue that run, resume from this directory (--resume); "
               "to start a new run, choose an empty or new checkpoint directory "
               "(--checkpoint-dir)");
}

// ---------------------------------------------------------------------------------------------
// Networks and optimizers

/// Stores `values` as tensor `name`.
template <class T>
void store_tensor(checkpoint& c, std::string name, std::span<const T> values) {
  c.tensors.insert_or_assign(std::move(name), checkpoint_tensor::from(values));
}

/// Copies tensor `name` into `out`; throws `checkpoint_error` unless it exists with exactly
/// `out.size()` elements of type T. `out` is untouched on error.
template <class T>
void restore_tensor(const checkpoint& c, std::string_view name, std::span<T> out) {
  const checkpoint_tensor& t = c.tensor(name);
  if (t.type != dtype_of<T>() || t.count != out.size()) {
    std::string problem = "tensor " + detail::checkpoint_quote(name) + " holds " +
                          std::to_string(t.count) + " " + to_string(t.type) +
                          " elements but the destination has " + std::to_string(out.size()) + " " +
                          to_string(dtype_of<T>());
    if (const auto network = c.meta_value("network")) {
      problem += "; the checkpoint was saved from network: " + *network;
    }
    throw checkpoint_error(c.source, problem);
  }
  t.copy_to(out);
}

/// Stores `net.parameters()` as tensor `name`.
template <Network N>
void store_parameters(checkpoint& c, N& net, std::string name = "parameters") {
  using S = typename N::scalar_type;
  const std::span<const S> params = net.parameters();
  store_tensor(c, std::move(name), params);
}

/// Loads tensor `name` into `net.parameters()` (what `--init-checkpoint` needs); throws
/// `checkpoint_error` if it is missing or its element type or count differs from the network's,
/// leaving the network unchanged.
template <Network N>
void restore_parameters(const checkpoint& c, N& net, std::string_view name = "parameters") {
  using S = typename N::scalar_type;
  restore_tensor(c, name, std::span<S>(net.parameters()));
}

/// Stores `opt.save_state()` as blob `name`.
template <Optimizer O>
void store_optimizer(checkpoint& c, const O& opt, std::string name = "optimizer") {
  c.blobs.insert_or_assign(std::move(name), opt.save_state());
}

/// Loads blob `name` into `opt` with `load_state` (step count, hence the learning-rate schedule,
/// and moments); throws `checkpoint_error` carrying the optimizer's reason, and the optimizer
/// is then unchanged.
template <Optimizer O>
void restore_optimizer(const checkpoint& c, O& opt, std::string_view name = "optimizer") {
  const std::span<const std::byte> state = c.blob(name);
  try {
    opt.load_state(state);
  } catch (const std::exception& e) {
    throw checkpoint_error(c.source, "blob " + detail::checkpoint_quote(name) +
                                         " cannot be loaded into the optimizer: " + e.what());
  }
}

}  // namespace seedrl
