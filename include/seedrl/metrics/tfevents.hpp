#pragma once
/// \file
/// Writes TensorBoard event files natively: no TensorFlow, no protobuf library. An event file is
/// a sequence of records
///   u64 length (little-endian) | u32 masked crc32c(length bytes) | data | u32 masked crc32c(data)
/// with masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8, and each record's data is one
/// serialised `tensorflow.Event`. The first event carries `file_version = "brain.Event:2"`; each
/// later one carries `wall_time`, `step` and a `Summary` of scalars (`simple_value`), which is
/// what TensorBoard's scalar dashboard reads. Only the fields used here are encoded:
///   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5;
///   } Summary { repeated Value value = 1; } Value   { string tag = 1; float simple_value = 2; }
/// The encoders sit in `seedrl::detail` so that tests can check them byte by byte;
/// seedrl/metrics/tfevents_reader.hpp reads the files back.

#include <array>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#if __has_include(<unistd.h>)
#include <unistd.h>
#endif

#include "seedrl/detail/crc32c.hpp"

namespace seedrl {

/// One named scalar, as a training program reports it: `{"loss", 0.25}`. The tag is not owned;
/// it only has to outlive the call it is passed to.
struct metric_value {
  std::string_view tag;  ///< TensorBoard's tag; '/' groups tags into sections ("loss/policy")
  double value;          ///< stored as float in event files (TensorBoard's simple_value)
};

namespace detail {

/// The version string TensorBoard expects in an event file's first event.
inline constexpr std::string_view tfevents_file_version = "brain.Event:2";

/// TensorFlow's checksum mask: a CRC of data that itself contains CRCs is weak, so records
/// store the CRC rotated and offset.
constexpr std::uint32_t mask_crc32c(std::uint32_t crc) noexcept {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

/// The inverse of `mask_crc32c`.
constexpr std::uint32_t unmask_crc32c(std::uint32_t masked) noexcept {
  const std::uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

/// Protobuf wire types (the low three bits of a field key).
enum class wire_type : std::uint8_t { varint = 0, fixed64 = 1, length_delimited = 2, fixed32 = 5 };

/// Appends `v` as a base-128 varint, low group first.
inline void append_varint(std::vector<std::byte>& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<std::byte>((v & 0x7Fu) | 0x80u));
    v >>= 7;
  }
  out.push_back(static_cast<std::byte>(v));
}

/// Appends a field key: (field number << 3) | wire type.
inline void append_key(std::vector<std::byte>& out, std::uint32_t field, wire_type type) {
  append_varint(out, (std::uint64_t{field} << 3) | static_cast<std::uint64_t>(type));
}

/// Appends `v` little-endian in `n` bytes (protobuf's fixed32/fixed64 and the record header).
inline void append_little_endian(std::vector<std::byte>& out, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i)
    out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xFFu));
}

/// Appends an int64 field. Negative values take ten bytes: protobuf's int64 (unlike sint64)
/// encodes the two's-complement bits, not a zigzag form.
inline void append_int64_field(std::vector<std::byte>& out, std::uint32_t field, std::int64_t v) {
  append_key(out, field, wire_type::varint);
  append_varint(out, static_cast<std::uint64_t>(v));
}

/// Appends a double field (fixed64, IEEE-754 bits little-endian).
inline void append_double_field(std::vector<std::byte>& out, std::uint32_t field, double v) {
  append_key(out, field, wire_type::fixed64);
  append_little_endian(out, std::bit_cast<std::uint64_t>(v), 8);
}

/// Appends a float field (fixed32, IEEE-754 bits little-endian).
inline void append_float_field(std::vector<std::byte>& out, std::uint32_t field, float v) {
  append_key(out, field, wire_type::fixed32);
  append_little_endian(out, std::bit_cast<std::uint32_t>(v), 4);
}

/// Appends a string, bytes or embedded-message field: key, length, bytes.
inline void append_bytes_field(std::vector<std::byte>& out, std::uint32_t field,
                               std::span<const std::byte> bytes) {
  append_key(out, field, wire_type::length_delimited);
  append_varint(out, bytes.size());
  out.insert(out.end(), bytes.begin(), bytes.end());
}

/// The bytes of `s`, for `append_bytes_field`.
inline std::span<const std::byte> as_bytes(std::string_view s) noexcept {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

/// Whether `s` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
/// Tags must be: proto3 string fields and JSON both require it, and TensorBoard's Python
/// protobuf refuses to decode an event whose tag is not.
constexpr bool is_valid_utf8(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
      ++i;
      continue;
    }
    int extra = 0;
    std::uint32_t cp = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      extra = 1;
      cp = b0 & 0x1Fu;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      extra = 2;
      cp = b0 & 0x0Fu;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      extra = 3;
      cp = b0 & 0x07u;
    } else {
      return false;  // a continuation byte first, an overlong lead (C0, C1) or F5..FF
    }
    if (s.size() - i <= static_cast<std::size_t>(extra))
      return false;
    for (int k = 1; k <= extra; ++k) {
      const auto b = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
      if ((b & 0xC0u) != 0x80u)
        return false;
      cp = (cp << 6) | (b & 0x3Fu);
    }
    if ((extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += static_cast<std::size_t>(extra) + 1;
  }
  return true;
}

/// Throws `std::invalid_argument` unless `tag` is a usable tag: not empty, valid UTF-8.
inline void check_metric_tag(std::string_view tag) {
  if (tag.empty())
    throw std::invalid_argument("seedrl: a metric tag must not be empty");
  if (!is_valid_utf8(tag)) {
    throw std::invalid_argument("seedrl: metric tag \"" + std::string(tag) +
                                "\" is not valid UTF-8; TensorBoard and JSON need UTF-8 tags");
  }
}

/// The serialised Event that opens every event file.
inline std::vector<std::byte> encode_file_version_event(double wall_time) {
  std::vector<std::byte> out;
  append_double_field(out, 1, wall_time);
  append_bytes_field(out, 3, as_bytes(tfevents_file_version));
  return out;
}

/// The serialised Event holding `values` at `step`, one Summary.Value per entry, each value
/// rounded to float (simple_value's type).
inline std::vector<std::byte> encode_scalar_event(double wall_time, std::int64_t step,
                                                  std::span<const metric_value> values) {
  std::vector<std::byte> summary;
  std::vector<std::byte> value;
  for (const metric_value& v : values) {
    value.clear();
    append_bytes_field(value, 1, as_bytes(v.tag));
    append_float_field(value, 2, static_cast<float>(v.value));
    append_bytes_field(summary, 1, value);
  }
  std::vector<std::byte> out;
  append_double_field(out, 1, wall_time);
  append_int64_field(out, 2, step);
  append_bytes_field(out, 5, summary);
  return out;
}

/// Appends one record framing `data` (see the file comment).
inline void append_record(std::vector<std::byte>& out, std::span<const std::byte> data) {
  const std::size_t header_start = out.size();
  append_little_endian(out, data.size(), 8);
  const std::uint32_t length_crc = crc32c(std::span<const std::byte>(out).subspan(header_start, 8));
  append_little_endian(out, mask_crc32c(length_crc), 4);
  out.insert(out.end(), data.begin(), data.end());
  append_little_endian(out, mask_crc32c(crc32c(data)), 4);
}

/// This machine's host name, as TensorFlow puts it in event file names; "localhost" when it
/// cannot be had.
inline std::string hostname() {
#if __has_include(<unistd.h>)
  std::array<char, 256> buf{};
  if (::gethostname(buf.data(), buf.size() - 1) == 0 && buf[0] != '\0')
    return std::string(buf.data());
#endif
  return "localhost";
}

/// Seconds since the Unix epoch, as Event.wall_time holds it.
inline double unix_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// An I/O failure on `path`, with the errno-style `error` (0: none known).
[[noreturn]] inline void throw_io_error(const std::string& what, const std::filesystem::path& path,
                                        int error) {
  throw std::filesystem::filesystem_error("seedrl: " + what, path,
                                          error != 0
                                              ? std::error_code(error, std::generic_category())
                                              : std::make_error_code(std::errc::io_error));
}

}  // namespace detail

/// Writes one TensorBoard event file in a log directory. Each `write_scalars` call is one Event
/// and is flushed to the operating system before it returns, so a crashed process loses at most
/// the batch it was writing (TensorBoard reads up to a truncated last record and stops there).
/// Not synchronised: use one writer per thread, or `seedrl::metrics_log`, which locks.
class tfevents_writer {
 public:
  /// Creates `logdir` (and parents) if missing and a new file
  /// `events.out.tfevents.<unix seconds>.<hostname>` in it, which TensorBoard finds by the
  /// "tfevents" in its name. An existing file is never overwritten: a second writer in the same
  /// directory within the same second gets a ".1", ".2", ... suffix. `wall_time` (seconds since
  /// the Unix epoch) stamps the name and the first event; tests pass a fixed one. Throws
  /// `std::filesystem::filesystem_error` naming the path when the file cannot be created.
  explicit tfevents_writer(const std::filesystem::path& logdir,
                           double wall_time = detail::unix_time_now()) {
    std::error_code ec;
    std::filesystem::create_directories(logdir, ec);
    if (ec) {
      throw std::filesystem::filesystem_error("seedrl: cannot create the log directory", logdir,
                                              ec);
    }
    const std::string base = "events.out.tfevents." +
                             std::to_string(static_cast<std::int64_t>(wall_time)) + "." +
                             detail::hostname();
    for (int n = 0;; ++n) {
      path_ = logdir / (n == 0 ? base : base + "." + std::to_string(n));
      errno = 0;
      // "x": fail rather than truncate if the name exists (C11 exclusive mode, in std::fopen
      // since C++17).
      file_.reset(std::fopen(path_.string().c_str(), "wbx"));
      if (file_ != nullptr)
        break;
      if (errno != EEXIST || n == 1000)
        detail::throw_io_error("cannot create TensorBoard event file", path_, errno);
    }
    write_event(detail::encode_file_version_event(wall_time));
  }

  /// Appends one event with `values` at `step`, stamped `wall_time`, and flushes it. Throws
  /// `std::invalid_argument` (writing nothing) for an empty or non-UTF-8 tag, and
  /// `std::filesystem::filesystem_error` naming the file when writing fails (disk full, ...).
  /// Values are rounded to float; NaN and infinities are kept as they are.
  void write_scalars(std::int64_t step, std::span<const metric_value> values, double wall_time) {
    for (const metric_value& v : values)
      detail::check_metric_tag(v.tag);
    write_event(detail::encode_scalar_event(wall_time, step, values));
  }

  /// As above, stamped with the current time.
  void write_scalars(std::int64_t step, std::span<const metric_value> values) {
    write_scalars(step, values, detail::unix_time_now());
  }

  /// As above, for a braced list: `w.write_scalars(10, {{"loss", 0.5}, {"return", 21.0}})`.
  void write_scalars(std::int64_t step, std::initializer_list<metric_value> values) {
    write_scalars(step, std::span<const metric_value>(values.begin(), values.size()));
  }

  /// A braced list stamped `wall_time`.
  void write_scalars(std::int64_t step, std::initializer_list<metric_value> values,
                     double wall_time) {
    write_scalars(step, std::span<const metric_value>(values.begin(), values.size()), wall_time);
  }

  /// The event file being written.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  struct file_closer {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };

  void write_event(std::span<const std::byte> event) {
    if (failed_) {
      // After a partial write the file ends in a broken record; anything appended after it
      // would be unreadable, so refuse instead of pretending to log.
      detail::throw_io_error("an earlier write to this TensorBoard event file failed", path_, 0);
    }
    record_.clear();
    detail::append_record(record_, event);
    errno = 0;
    if (std::fwrite(record_.data(), 1, record_.size(), file_.get()) != record_.size() ||
        std::fflush(file_.get()) != 0) {
      failed_ = true;
      detail::throw_io_error("cannot write TensorBoard event file", path_, errno);
    }
  }

  std::filesystem::path path_;
  std::unique_ptr<std::FILE, file_closer> file_;
  std::vector<std::byte> record_;  ///< reused framing buffer
  bool failed_ = false;
};

}  // namespace seedrl
