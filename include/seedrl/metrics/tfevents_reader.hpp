#pragma once
/// \file
/// Reads TensorBoard event files (seedrl/metrics/tfevents.hpp describes the format): checks
/// both checksums of every record and decodes each Event's wall_time, step, file_version and
/// scalar summary values. Fields it does not know (graphs, histograms, tensors, ...) are skipped
/// by wire type, so files written by TensorFlow or PyTorch read too; their non-scalar values are
/// left out. For tests and for users who want their curves without Python.

#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/detail/crc32c.hpp"
#include "seedrl/metrics/tfevents.hpp"

namespace seedrl {

/// One scalar of a summary, as stored (simple_value is a float).
struct tfevents_scalar {
  std::string tag;  ///< the tag
  float value = 0;  ///< simple_value

  friend bool operator==(const tfevents_scalar&, const tfevents_scalar&) = default;
};

/// One decoded Event. The file's first event has `file_version` set and no scalars.
struct tfevents_event {
  double wall_time = 0;                  ///< seconds since the Unix epoch
  std::int64_t step = 0;                 ///< 0 when the event has no step
  std::string file_version;              ///< "brain.Event:2" in the first event, else empty
  std::vector<tfevents_scalar> scalars;  ///< the summary's simple_value entries, in file order
};

/// A record or event that cannot be read: bad checksum, truncated, or not a valid Event. The
/// message names the file, the record number and its byte offset.
class tfevents_format_error : public std::runtime_error {
 public:
  /// `what` is the whole message; `path` and `offset` locate the bad record.
  tfevents_format_error(const std::string& what, std::filesystem::path path, std::uint64_t offset)
      : std::runtime_error(what), path_(std::move(path)), offset_(offset) {}

  /// The file (empty when reading from memory without a name).
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

  /// The byte offset of the record that failed.
  [[nodiscard]] std::uint64_t offset() const noexcept { return offset_; }

 private:
  std::filesystem::path path_;
  std::uint64_t offset_;
};

/// How strict `read_tfevents` is.
struct tfevents_read_options {
  /// A writer that crashed may leave its last record cut short. False: that is an error. True:
  /// the complete records before it are returned, as TensorBoard does. A checksum mismatch is
  /// an error either way.
  bool allow_truncated_tail = false;
};

namespace detail {

/// Reads protobuf wire format from a byte span; throws `std::invalid_argument` on malformed
/// input (the caller adds where in the file it was).
class protobuf_cursor {
 public:
  explicit protobuf_cursor(std::span<const std::byte> bytes) noexcept : bytes_(bytes) {}

  [[nodiscard]] bool done() const noexcept { return pos_ == bytes_.size(); }

  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const auto b = std::to_integer<std::uint64_t>(take(1)[0]);
      v |= (b & 0x7Fu) << shift;
      if ((b & 0x80u) == 0)
        return v;
    }
    throw std::invalid_argument("a varint is longer than 10 bytes");
  }

  std::uint64_t little_endian(std::size_t n) {
    std::uint64_t v = 0;
    const auto b = take(n);
    for (std::size_t i = 0; i < n; ++i)
      v |= std::to_integer<std::uint64_t>(b[i]) << (8 * i);
    return v;
  }

  std::span<const std::byte> length_delimited() {
    const std::uint64_t n = varint();
    if (n > bytes_.size() - pos_)
      throw std::invalid_argument("a length-delimited field runs past the end of its message");
    return take(static_cast<std::size_t>(n));
  }

  /// Skips a field's value of wire type `type`.
  void skip(std::uint64_t type) {
    switch (type) {
      case 0:
        (void)varint();
        break;
      case 1:
        (void)take(8);
        break;
      case 2:
        (void)length_delimited();
        break;
      case 5:
        (void)take(4);
        break;
      default:
        throw std::invalid_argument("unsupported protobuf wire type " + std::to_string(type));
    }
  }

 private:
  std::span<const std::byte> take(std::size_t n) {
    if (n > bytes_.size() - pos_)
      throw std::invalid_argument("a field runs past the end of its message");
    const auto s = bytes_.subspan(pos_, n);
    pos_ += n;
    return s;
  }

  std::span<const std::byte> bytes_;
  std::size_t pos_ = 0;
};

/// Throws unless a field has the wire type its schema says.
inline void expect_wire_type(std::uint64_t got, wire_type want, const char* field) {
  if (got != static_cast<std::uint64_t>(want)) {
    throw std::invalid_argument(std::string(field) + " has wire type " + std::to_string(got) +
                                ", expected " + std::to_string(static_cast<int>(want)));
  }
}

/// Decodes a Summary, appending its simple_value entries to `out`. Other kinds of values
/// (images, histograms, tensors) are skipped.
inline void decode_summary(std::span<const std::byte> bytes, std::vector<tfevents_scalar>& out) {
  protobuf_cursor summary(bytes);
  while (!summary.done()) {
    const std::uint64_t key = summary.varint();
    if (key >> 3 != 1) {
      summary.skip(key & 7u);
      continue;
    }
    expect_wire_type(key & 7u, wire_type::length_delimited, "Summary.value");
    protobuf_cursor value(summary.length_delimited());
    tfevents_scalar s;
    bool is_scalar = false;
    while (!value.done()) {
      const std::uint64_t vkey = value.varint();
      if (vkey >> 3 == 1) {
        expect_wire_type(vkey & 7u, wire_type::length_delimited, "Summary.Value.tag");
        const auto tag = value.length_delimited();
        s.tag.assign(reinterpret_cast<const char*>(tag.data()), tag.size());
      } else if (vkey >> 3 == 2) {
        expect_wire_type(vkey & 7u, wire_type::fixed32, "Summary.Value.simple_value");
        s.value = std::bit_cast<float>(static_cast<std::uint32_t>(value.little_endian(4)));
        is_scalar = true;
      } else {
        value.skip(vkey & 7u);
      }
    }
    if (is_scalar)
      out.push_back(std::move(s));
  }
}

/// Decodes one serialised Event; throws `std::invalid_argument` saying what is malformed.
inline tfevents_event decode_event(std::span<const std::byte> bytes) {
  tfevents_event e;
  protobuf_cursor c(bytes);
  while (!c.done()) {
    const std::uint64_t key = c.varint();
    const std::uint64_t type = key & 7u;
    switch (key >> 3) {
      case 0:
        throw std::invalid_argument("field number 0 is not valid protobuf");
      case 1:
        expect_wire_type(type, wire_type::fixed64, "Event.wall_time");
        e.wall_time = std::bit_cast<double>(c.little_endian(8));
        break;
      case 2:
        expect_wire_type(type, wire_type::varint, "Event.step");
        e.step = static_cast<std::int64_t>(c.varint());
        break;
      case 3: {
        expect_wire_type(type, wire_type::length_delimited, "Event.file_version");
        const auto v = c.length_delimited();
        e.file_version.assign(reinterpret_cast<const char*>(v.data()), v.size());
        break;
      }
      case 5:
        // Protobuf merges repeated occurrences of a message field: their values concatenate.
        expect_wire_type(type, wire_type::length_delimited, "Event.summary");
        decode_summary(c.length_delimited(), e.scalars);
        break;
      default:
        c.skip(type);
    }
  }
  return e;
}

}  // namespace detail

/// Splits `bytes` (a whole event file) into records, checks both checksums of each and decodes
/// its Event. Throws `tfevents_format_error` naming `name` (for messages only), the record
/// number and its offset, on a checksum mismatch, a truncated record (unless
/// `options.allow_truncated_tail`) or an undecodable Event.
inline std::vector<tfevents_event> parse_tfevents(std::span<const std::byte> bytes,
                                                  const std::filesystem::path& name = {},
                                                  tfevents_read_options options = {}) {
  std::vector<tfevents_event> events;
  std::size_t pos = 0;
  for (std::size_t record = 0; pos < bytes.size(); ++record) {
    const auto fail = [&](const std::string& why) -> tfevents_format_error {
      return tfevents_format_error("seedrl: TensorBoard event file " +
                                       (name.empty() ? std::string("<memory>") : name.string()) +
                                       ": record " + std::to_string(record) + " at byte " +
                                       std::to_string(pos) + ": " + why,
                                   name, pos);
    };
    const auto truncated = [&](const char* part) -> tfevents_format_error {
      return fail(std::string("truncated in its ") + part +
                  " (a writer that stopped mid-record leaves this; "
                  "tfevents_read_options::allow_truncated_tail reads the records before it)");
    };
    const std::size_t left = bytes.size() - pos;
    if (left < 12) {
      if (options.allow_truncated_tail)
        break;
      throw truncated("header");
    }
    const auto header = bytes.subspan(pos, 8);
    detail::protobuf_cursor h(bytes.subspan(pos, 12));
    const std::uint64_t length = h.little_endian(8);
    const auto stored_length_crc = static_cast<std::uint32_t>(h.little_endian(4));
    const std::uint32_t length_crc = detail::mask_crc32c(detail::crc32c(header));
    if (stored_length_crc != length_crc) {
      char msg[160];
      std::snprintf(msg, sizeof msg,
                    "length checksum mismatch (stored %08x, computed %08x): the file is corrupted",
                    static_cast<unsigned>(stored_length_crc), static_cast<unsigned>(length_crc));
      throw fail(msg);
    }
    if (length > left - 12 || left - 12 - length < 4) {
      if (options.allow_truncated_tail)
        break;
      throw truncated("data");
    }
    const auto data = bytes.subspan(pos + 12, static_cast<std::size_t>(length));
    detail::protobuf_cursor t(bytes.subspan(pos + 12 + data.size(), 4));
    const auto stored_data_crc = static_cast<std::uint32_t>(t.little_endian(4));
    const std::uint32_t data_crc = detail::mask_crc32c(detail::crc32c(data));
    if (stored_data_crc != data_crc) {
      char msg[160];
      std::snprintf(msg, sizeof msg,
                    "data checksum mismatch (stored %08x, computed %08x): the file is corrupted",
                    static_cast<unsigned>(stored_data_crc), static_cast<unsigned>(data_crc));
      throw fail(msg);
    }
    try {
      events.push_back(detail::decode_event(data));
    } catch (const std::invalid_argument& e) {
      throw fail(std::string("not a valid Event: ") + e.what());
    }
    pos += 12 + data.size() + 4;
  }
  return events;
}

/// Reads and checks a whole event file; see `parse_tfevents`. Throws
/// `std::filesystem::filesystem_error` naming the path when it cannot be read.
inline std::vector<tfevents_event> read_tfevents(const std::filesystem::path& path,
                                                 tfevents_read_options options = {}) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    detail::throw_io_error("cannot open TensorBoard event file", path, errno);
  const std::vector<char> chars((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  if (in.bad())
    detail::throw_io_error("cannot read TensorBoard event file", path, errno);
  return parse_tfevents(std::as_bytes(std::span<const char>(chars)), path, options);
}

}  // namespace seedrl
