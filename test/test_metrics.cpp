// Metrics: CRC-32C against published test vectors, the protobuf encoding of TensorBoard events
// against bytes worked out by hand from the wire-format rules, event files written and read back
// (every corrupted byte caught), and metrics.jsonl parsed back with nlohmann::json.
// test/metrics/read_with_tensorboard.py checks the same files with TensorBoard's own reader.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <unistd.h>

#include "seedrl/detail/crc32c.hpp"
#include "seedrl/metrics/metrics_log.hpp"
#include "seedrl/metrics/tfevents.hpp"
#include "seedrl/metrics/tfevents_reader.hpp"
#include "skip.hpp"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

std::vector<std::byte> bytes_of(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (const int b : v)
    out.push_back(static_cast<std::byte>(b));
  return out;
}

std::span<const std::byte> bytes_of(std::string_view s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

std::vector<std::byte> file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  const std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto b = std::as_bytes(std::span<const char>(c));
  return {b.begin(), b.end()};
}

std::vector<std::string> file_lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

// A fresh empty directory under the system's temp dir, removed at scope exit.
struct temp_dir {
  fs::path path;
  temp_dir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() / ("seedrl-metrics-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(counter.fetch_add(1)));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
};

std::string exception_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no exception";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// CRC-32C and its mask

TEST_CASE("crc32c matches the published check value and RFC 3720 vectors", "[metrics]") {
  using seedrl::detail::crc32c;
  CHECK(crc32c(bytes_of(std::string_view("123456789"))) == 0xE3069283u);
  CHECK(crc32c({}) == 0u);
  // RFC 3720 (iSCSI) appendix B.4: 32 bytes of zeros, of ones, ascending, descending.
  std::vector<std::byte> zeros(32, std::byte{0});
  std::vector<std::byte> ones(32, std::byte{0xFF});
  std::vector<std::byte> up(32);
  std::vector<std::byte> down(32);
  for (int i = 0; i < 32; ++i) {
    up[static_cast<std::size_t>(i)] = static_cast<std::byte>(i);
    down[static_cast<std::size_t>(i)] = static_cast<std::byte>(31 - i);
  }
  CHECK(crc32c(zeros) == 0x8A9136AAu);
  CHECK(crc32c(ones) == 0x62A8AB43u);
  CHECK(crc32c(up) == 0x46DD794Eu);
  CHECK(crc32c(down) == 0x113FDB5Cu);
  // In pieces, continuing from the previous result.
  const auto all = bytes_of(std::string_view("123456789"));
  CHECK(crc32c(all.subspan(4), crc32c(all.first(4))) == 0xE3069283u);
  static_assert(crc32c(std::span<const std::byte>{}) == 0u, "usable at compile time");
}

TEST_CASE("masked crc32c rotates right by 15 and adds TensorFlow's constant", "[metrics]") {
  using seedrl::detail::mask_crc32c;
  using seedrl::detail::unmask_crc32c;
  CHECK(mask_crc32c(0) == 0xA282EAD8u);
  // 0xE3069283 rotated right by 15 is 0x2507C60D; + 0xA282EAD8 = 0xC78AB0E5 (mod 2^32).
  CHECK(mask_crc32c(0xE3069283u) == 0xC78AB0E5u);
  for (const std::uint32_t c : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu, 0x80000000u})
    CHECK(unmask_crc32c(mask_crc32c(c)) == c);
}

// ---------------------------------------------------------------------------------------------
// Protobuf encoding, byte by byte

TEST_CASE("protobuf varints are little-endian base-128 groups", "[metrics]") {
  const auto varint = [](std::uint64_t v) {
    std::vector<std::byte> out;
    seedrl::detail::append_varint(out, v);
    return out;
  };
  CHECK(varint(0) == bytes_of({0x00}));
  CHECK(varint(1) == bytes_of({0x01}));
  CHECK(varint(127) == bytes_of({0x7F}));
  CHECK(varint(128) == bytes_of({0x80, 0x01}));
  CHECK(varint(300) == bytes_of({0xAC, 0x02}));  // the protobuf encoding guide's example
  CHECK(varint(16384) == bytes_of({0x80, 0x80, 0x01}));
  CHECK(varint(std::numeric_limits<std::uint64_t>::max()) ==
        bytes_of({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}));
}

TEST_CASE("protobuf int64 double and float fields have the expected keys and bytes", "[metrics]") {
  std::vector<std::byte> out;
  // Event.step = 10: key (2 << 3 | 0) = 0x10.
  seedrl::detail::append_int64_field(out, 2, 10);
  CHECK(out == bytes_of({0x10, 0x0A}));
  // A negative int64 is its two's complement as a 10-byte varint (not zigzag).
  out.clear();
  seedrl::detail::append_int64_field(out, 2, -1);
  CHECK(out == bytes_of({0x10, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}));
  // Event.wall_time = 1.0: key (1 << 3 | 1) = 0x09, then 0x3FF0000000000000 little-endian.
  out.clear();
  seedrl::detail::append_double_field(out, 1, 1.0);
  CHECK(out == bytes_of({0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF0, 0x3F}));
  // Value.simple_value = 1.0f: key (2 << 3 | 5) = 0x15, then 0x3F800000 little-endian.
  out.clear();
  seedrl::detail::append_float_field(out, 2, 1.0f);
  CHECK(out == bytes_of({0x15, 0x00, 0x00, 0x80, 0x3F}));
  // -2.5f = 0xC0200000.
  out.clear();
  seedrl::detail::append_float_field(out, 2, -2.5f);
  CHECK(out == bytes_of({0x15, 0x00, 0x00, 0x20, 0xC0}));
  // Value.tag = "ab": key (1 << 3 | 2) = 0x0A, length 2, bytes.
  out.clear();
  seedrl::detail::append_bytes_field(out, 1, bytes_of(std::string_view("ab")));
  CHECK(out == bytes_of({0x0A, 0x02, 'a', 'b'}));
  // Field 16 needs a two-byte key: (16 << 3 | 0) = 128.
  out.clear();
  seedrl::detail::append_int64_field(out, 16, 1);
  CHECK(out == bytes_of({0x80, 0x01, 0x01}));
}

TEST_CASE("the file-version event and a scalar event encode as worked out by hand", "[metrics]") {
  // Event{wall_time = 1.5, file_version = "brain.Event:2"}: 1.5 = 0x3FF8000000000000; the
  // version string is field 3, key 0x1A, length 13.
  const auto version = seedrl::detail::encode_file_version_event(1.5);
  CHECK(version ==
        bytes_of({0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF8, 0x3F, 0x1A, 0x0D, 'b',
                  'r',  'a',  'i',  'n',  '.',  'E',  'v',  'e',  'n',  't',  ':',  '2'}));

  // Event{wall_time = 1.5, step = 10, summary = Summary{value = [{tag "a", simple_value 0.5},
  // {tag "bc", simple_value -2}]}}. Value 1: 0A 01 'a' 15 0000003F (8 bytes); value 2:
  // 0A 02 'b' 'c' 15 000000C0 (9 bytes). Summary: 0A 08 <8> 0A 09 <9> = 21 bytes.
  const seedrl::metric_value values[] = {{"a", 0.5}, {"bc", -2.0}};
  const auto event = seedrl::detail::encode_scalar_event(1.5, 10, values);
  CHECK(event ==
        bytes_of({0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF8, 0x3F,        // wall_time
                  0x10, 0x0A,                                                  // step
                  0x2A, 0x15,                                                  // summary, 21 bytes
                  0x0A, 0x08, 0x0A, 0x01, 'a',  0x15, 0x00, 0x00, 0x00, 0x3F,  // value 1
                  0x0A, 0x09, 0x0A, 0x02, 'b',  'c',  0x15, 0x00, 0x00, 0x00, 0xC0}));  // value 2
}

TEST_CASE("a record is length then its masked crc then data then the data's masked crc",
          "[metrics]") {
  using seedrl::detail::crc32c;
  using seedrl::detail::mask_crc32c;
  const auto data = bytes_of(std::string_view("123456789"));
  std::vector<std::byte> rec;
  seedrl::detail::append_record(rec, data);
  REQUIRE(rec.size() == 8 + 4 + 9 + 4);
  const auto length = bytes_of({9, 0, 0, 0, 0, 0, 0, 0});
  CHECK(std::equal(length.begin(), length.end(), rec.begin()));
  const auto le32 = [&](std::size_t at) {
    return std::to_integer<std::uint32_t>(rec[at]) |
           std::to_integer<std::uint32_t>(rec[at + 1]) << 8 |
           std::to_integer<std::uint32_t>(rec[at + 2]) << 16 |
           std::to_integer<std::uint32_t>(rec[at + 3]) << 24;
  };
  CHECK(le32(8) == mask_crc32c(crc32c(length)));
  CHECK(std::equal(data.begin(), data.end(), rec.begin() + 12));
  CHECK(le32(21) == 0xC78AB0E5u);  // mask(crc32c("123456789")), from the test above
}

// ---------------------------------------------------------------------------------------------
// Writer and reader

TEST_CASE("tfevents round trip: name first event and every scalar read back", "[metrics]") {
  temp_dir dir;
  const double t0 = 1712345678.25;
  fs::path path;
  {
    seedrl::tfevents_writer w(dir.path / "run", t0);
    path = w.path();
    w.write_scalars(0, {{"loss", 0.5}, {"return/mean", 21.0}}, t0 + 1);
    w.write_scalars(-3, {{"neg step", -1e30}}, t0 + 2);
    w.write_scalars(std::numeric_limits<std::int64_t>::max(),
                    {{"nan", std::nan("")},
                     {"inf", std::numeric_limits<double>::infinity()},
                     {"-inf", -std::numeric_limits<double>::infinity()},
                     {"minus zero", -0.0},
                     {"entropie \xC3\xA9 \xE2\x82\xAC", 0.1}},
                    t0 + 3);
    w.write_scalars(7, std::span<const seedrl::metric_value>{}, t0 + 4);  // no values
  }
  CHECK(path.parent_path() == dir.path / "run");
  CHECK(path.filename().string() == "events.out.tfevents.1712345678." + seedrl::detail::hostname());

  const auto events = seedrl::read_tfevents(path);
  REQUIRE(events.size() == 5);
  CHECK(events[0].file_version == "brain.Event:2");
  CHECK(events[0].wall_time == t0);
  CHECK(events[0].scalars.empty());

  CHECK(events[1].wall_time == t0 + 1);
  CHECK(events[1].step == 0);
  CHECK(events[1].file_version.empty());
  REQUIRE(events[1].scalars.size() == 2);
  CHECK(events[1].scalars[0] == seedrl::tfevents_scalar{"loss", 0.5f});
  CHECK(events[1].scalars[1] == seedrl::tfevents_scalar{"return/mean", 21.0f});

  CHECK(events[2].step == -3);
  REQUIRE(events[2].scalars.size() == 1);
  CHECK(events[2].scalars[0].value == -1e30f);

  CHECK(events[3].step == std::numeric_limits<std::int64_t>::max());
  CHECK(events[3].wall_time == t0 + 3);
  REQUIRE(events[3].scalars.size() == 5);
  CHECK(std::isnan(events[3].scalars[0].value));
  CHECK(events[3].scalars[1].value == std::numeric_limits<float>::infinity());
  CHECK(events[3].scalars[2].value == -std::numeric_limits<float>::infinity());
  CHECK(events[3].scalars[3].value == 0.0f);
  CHECK(std::signbit(events[3].scalars[3].value));
  CHECK(events[3].scalars[4] == seedrl::tfevents_scalar{"entropie \xC3\xA9 \xE2\x82\xAC", 0.1f});

  CHECK(events[4].step == 7);
  CHECK(events[4].scalars.empty());
}

TEST_CASE("a second event writer in the same second does not overwrite the first", "[metrics]") {
  temp_dir dir;
  seedrl::tfevents_writer a(dir.path, 1000.0);
  seedrl::tfevents_writer b(dir.path, 1000.9);
  seedrl::tfevents_writer c(dir.path, 1000.0);
  CHECK(a.path().filename().string() == "events.out.tfevents.1000." + seedrl::detail::hostname());
  CHECK(b.path().string() == a.path().string() + ".1");
  CHECK(c.path().string() == a.path().string() + ".2");
  a.write_scalars(1, {{"x", 1.0}});
  b.write_scalars(2, {{"x", 2.0}});
  CHECK(seedrl::read_tfevents(a.path()).at(1).step == 1);
  CHECK(seedrl::read_tfevents(b.path()).at(1).step == 2);
  CHECK(seedrl::read_tfevents(c.path()).size() == 1);
}

TEST_CASE("each batch of scalars is on disk when write_scalars returns", "[metrics]") {
  temp_dir dir;
  seedrl::tfevents_writer w(dir.path, 5.0);
  for (int step = 1; step <= 3; ++step) {
    w.write_scalars(step, {{"x", step * 1.0}}, 5.0 + step);
    // Read by path while the writer is still open: nothing is held back in a buffer.
    const auto events = seedrl::read_tfevents(w.path());
    REQUIRE(events.size() == static_cast<std::size_t>(step) + 1);
    CHECK(events.back().scalars.at(0).value == static_cast<float>(step));
  }
}

TEST_CASE("every corrupted byte of an event file is detected with a clear error", "[metrics]") {
  temp_dir dir;
  fs::path path;
  {
    seedrl::tfevents_writer w(dir.path, 100.0);
    path = w.path();
    w.write_scalars(1, {{"loss", 0.25}}, 101.0);
    w.write_scalars(2, {{"loss", 0.125}, {"return", 3.0}}, 102.0);
  }
  const auto good = file_bytes(path);
  REQUIRE(seedrl::parse_tfevents(good).size() == 3);
  std::vector<std::size_t> record_start = {0};
  const seedrl::metric_value first[] = {{"loss", 0.25}};
  for (const auto& e : {seedrl::detail::encode_file_version_event(100.0),
                        seedrl::detail::encode_scalar_event(101.0, 1, first)})
    record_start.push_back(record_start.back() + 16 + e.size());
  REQUIRE(record_start[2] < good.size());

  SECTION("a flipped data byte names the file the record and the data checksum") {
    auto bad = good;
    const std::size_t at = record_start[2] + 12 + 5;  // inside record 2's data
    bad[at] ^= std::byte{0x01};
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(bad.data()), static_cast<std::streamsize>(bad.size()));
    try {
      (void)seedrl::read_tfevents(path);
      FAIL("the corruption was not detected");
    } catch (const seedrl::tfevents_format_error& e) {
      const std::string what = e.what();
      CHECK(what.find(path.string()) != std::string::npos);
      CHECK(what.find("record 2 at byte " + std::to_string(record_start[2])) != std::string::npos);
      CHECK(what.find("data checksum mismatch") != std::string::npos);
      CHECK(what.find("corrupted") != std::string::npos);
      CHECK(e.path() == path);
      CHECK(e.offset() == record_start[2]);
    }
  }

  SECTION("a flipped length byte is caught by the length checksum") {
    auto bad = good;
    bad[record_start[1] + 2] ^= std::byte{0x40};
    const std::string what = exception_message([&] { (void)seedrl::parse_tfevents(bad, "f"); });
    CHECK(what.find("record 1") != std::string::npos);
    CHECK(what.find("length checksum mismatch") != std::string::npos);
  }

  SECTION("any single byte changed anywhere is detected") {
    for (std::size_t at = 0; at < good.size(); ++at) {
      for (const int flip : {0x01, 0x80, 0xFF}) {
        auto bad = good;
        bad[at] ^= static_cast<std::byte>(flip);
        INFO("byte " << at << " xor " << flip);
        CHECK_THROWS_AS(seedrl::parse_tfevents(bad), seedrl::tfevents_format_error);
      }
    }
  }

  SECTION("a truncated tail is an error unless allowed and then the whole records read") {
    for (std::size_t cut = 1; cut < good.size() - record_start[2]; ++cut) {
      const std::span<const std::byte> truncated(good.data(), good.size() - cut);
      INFO("cut " << cut);
      const std::string what =
          exception_message([&] { (void)seedrl::parse_tfevents(truncated, "f"); });
      CHECK(what.find("record 2") != std::string::npos);
      CHECK(what.find("truncated") != std::string::npos);
      const auto events = seedrl::parse_tfevents(truncated, "f", {.allow_truncated_tail = true});
      CHECK(events.size() == 2);
    }
  }
}

TEST_CASE("the reader skips fields and values it does not know", "[metrics]") {
  using namespace seedrl::detail;
  // An Event as TensorFlow might write it: an unknown varint field, a graph_def (field 4) as
  // bytes, a fixed32 field, a Summary with a tensor-valued Value (no simple_value) between two
  // scalars, and a simple_value of 0 (a oneof member, so present even though it is zero).
  std::vector<std::byte> tensor_value;
  append_bytes_field(tensor_value, 1, as_bytes("histogram"));
  append_bytes_field(tensor_value, 8, as_bytes("opaque tensor"));
  std::vector<std::byte> zero_value;
  append_bytes_field(zero_value, 1, as_bytes("zero"));
  append_float_field(zero_value, 2, 0.0f);
  append_int64_field(zero_value, 7, 42);  // node_name's field number, wrong type: skipped
  std::vector<std::byte> summary;
  append_bytes_field(summary, 1, zero_value);
  append_bytes_field(summary, 1, tensor_value);
  std::vector<std::byte> event;
  append_int64_field(event, 99, 5);
  append_bytes_field(event, 4, as_bytes("graph"));
  append_double_field(event, 1, 3.0);
  append_key(event, 12, wire_type::fixed32);
  append_little_endian(event, 0xDEADBEEF, 4);
  append_bytes_field(event, 5, summary);
  append_int64_field(event, 2, 9);
  const seedrl::metric_value more[] = {{"later", 4.0}};
  const auto second = encode_scalar_event(3.0, 9, more);
  // A second summary field in the same Event merges: its values are appended.
  event.insert(event.end(), second.begin() + 11, second.end());
  std::vector<std::byte> file;
  append_record(file, event);

  const auto events = seedrl::parse_tfevents(file);
  REQUIRE(events.size() == 1);
  CHECK(events[0].wall_time == 3.0);
  CHECK(events[0].step == 9);
  REQUIRE(events[0].scalars.size() == 2);
  CHECK(events[0].scalars[0] == seedrl::tfevents_scalar{"zero", 0.0f});
  CHECK(events[0].scalars[1] == seedrl::tfevents_scalar{"later", 4.0f});
}

TEST_CASE("a record whose checksums match but whose event is not protobuf is refused",
          "[metrics]") {
  using namespace seedrl::detail;
  for (const auto& junk : {bytes_of({0x22, 0x05, 'a'}),               // length past the end
                           bytes_of({0x09, 0x00, 0x00}),              // double cut short
                           bytes_of({0x4B, 0x00}),                    // group wire type
                           bytes_of({0x00}),                          // field number 0
                           bytes_of({0x11, 0, 0, 0, 0, 0, 0, 0, 0}),  // step as fixed64
                           bytes_of({0x10, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                     0xFF, 0x01})}) {  // 11-byte varint
    std::vector<std::byte> file;
    append_record(file, junk);
    const std::string what = exception_message([&] { (void)seedrl::parse_tfevents(file, "f"); });
    INFO(what);
    CHECK(what.find("record 0 at byte 0: not a valid Event") != std::string::npos);
  }
}

TEST_CASE("tags must be non-empty UTF-8", "[metrics]") {
  using seedrl::detail::is_valid_utf8;
  CHECK(is_valid_utf8(""));
  CHECK(is_valid_utf8("loss/policy"));
  CHECK(is_valid_utf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));  // e-acute, euro, emoji
  CHECK(is_valid_utf8("\xF4\x8F\xBF\xBF"));                      // U+10FFFF
  CHECK_FALSE(is_valid_utf8("\xC3"));                            // cut short
  CHECK_FALSE(is_valid_utf8("\x80"));                            // lone continuation
  CHECK_FALSE(is_valid_utf8("\xC0\xAF"));                        // overlong '/'
  CHECK_FALSE(is_valid_utf8("\xE0\x80\xAF"));                    // overlong, three bytes
  CHECK_FALSE(is_valid_utf8("\xED\xA0\x80"));                    // surrogate U+D800
  CHECK_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));                // past U+10FFFF
  CHECK_FALSE(is_valid_utf8("\xFF"));

  temp_dir dir;
  seedrl::tfevents_writer w(dir.path, 1.0);
  CHECK_THROWS_AS(w.write_scalars(1, {{"", 1.0}}), std::invalid_argument);
  CHECK_THROWS_WITH(w.write_scalars(1, {{"ok", 1.0}, {"bad\xFF", 1.0}}),
                    Catch::Contains("not valid UTF-8"));
  CHECK(seedrl::read_tfevents(w.path()).size() == 1);  // nothing was written
}

TEST_CASE("event file I/O errors name the path", "[metrics]") {
  temp_dir dir;
  std::ofstream(dir.path / "a_file") << "not a directory";
  const fs::path logdir = dir.path / "a_file" / "logs";
  try {
    seedrl::tfevents_writer w(logdir);
    FAIL("created an event file under a regular file");
  } catch (const fs::filesystem_error& e) {
    CHECK(e.path1() == logdir);
    CHECK(std::string(e.what()).find("a_file") != std::string::npos);
  }
  const fs::path missing = dir.path / "no_such_file";
  try {
    (void)seedrl::read_tfevents(missing);
    FAIL("read a missing file");
  } catch (const fs::filesystem_error& e) {
    CHECK(e.path1() == missing);
    CHECK(std::string(e.what()).find("cannot open TensorBoard event file") != std::string::npos);
  }
  CHECK_THROWS_AS(seedrl::metrics_log(logdir), fs::filesystem_error);
}

TEST_CASE("a failed metrics write throws naming the file and the reason", "[metrics]") {
  // Linux's always-full device stands in for a full disk.
  if (!fs::exists("/dev/full"))
    SEEDRL_SKIP_TEST("no /dev/full to stand in for a full disk");
  temp_dir dir;
  fs::create_symlink("/dev/full", dir.path / "metrics.jsonl");
  seedrl::metrics_log log(dir.path);
  try {
    log.log(1, {{"x", 1.0}});
    FAIL("writing to a full device did not throw");
  } catch (const fs::filesystem_error& e) {
    CHECK(e.path1() == dir.path / "metrics.jsonl");
    CHECK(e.code() == std::errc::no_space_on_device);
    CHECK(std::string(e.what()).find("cannot write metrics file") != std::string::npos);
  }
}

// ---------------------------------------------------------------------------------------------
// metrics_log: JSONL and the event file together

TEST_CASE("json numbers are shortest round-trip and non-finite values are null", "[metrics]") {
  const auto num = [](double v) {
    std::string s;
    seedrl::detail::append_json_number(s, v);
    return s;
  };
  CHECK(num(0.1) == "0.1");
  CHECK(num(21.0) == "21");
  CHECK(num(-0.0) == "-0");
  CHECK(num(1e300) == "1e+300");
  CHECK(num(std::nan("")) == "null");
  CHECK(num(std::numeric_limits<double>::infinity()) == "null");
  CHECK(num(-std::numeric_limits<double>::infinity()) == "null");
  for (const double v : {0.1, 1.0 / 3.0, 1712345678.123456, 5e-324, 1.7976931348623157e308})
    CHECK(json::parse(num(v)).get<double>() == v);
}

TEST_CASE("json strings escape quotes backslashes and control characters", "[metrics]") {
  const auto str = [](std::string_view v) {
    std::string s;
    seedrl::detail::append_json_string(s, v);
    return s;
  };
  CHECK(str("loss") == "\"loss\"");
  CHECK(str("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(str("\n\t\r\b\f") == "\"\\n\\t\\r\\b\\f\"");
  CHECK(str(std::string_view("\x01\x1F\0", 3)) == "\"\\u0001\\u001f\\u0000\"");
  CHECK(str("\xC3\xA9/\x7F") == "\"\xC3\xA9/\x7F\"");
  for (const std::string_view v :
       {std::string_view("plain"), std::string_view("q\"uo\\te\n\x02"),
        std::string_view("\xE2\x82\xAC \xF0\x9F\x98\x80"), std::string_view("nul\0in", 6)})
    CHECK(json::parse(str(v)).get<std::string>() == v);
}

TEST_CASE("metrics_log writes matching jsonl lines and events", "[metrics]") {
  temp_dir dir;
  const fs::path logdir = dir.path / "nested" / "run1";
  const std::string odd_tag = "odd \"tag\" \\ with\nnewline \xC3\xA9";
  {
    seedrl::metrics_log log(logdir);
    CHECK(log.logdir() == logdir);
    CHECK(log.jsonl_path() == logdir / "metrics.jsonl");
    CHECK(log.events_path().parent_path() == logdir);
    const seedrl::metric_value values[] = {{"loss", 0.1}, {odd_tag, 1.0 / 3.0}};
    log.log(100, values, 1712345678.5);
    log.log(200, {{"loss", std::nan("")}, {"return", std::numeric_limits<double>::infinity()}},
            1712345679.5);
    log.log(300, {{"frames", 1e12}});  // stamped now
  }

  const auto lines = file_lines(logdir / "metrics.jsonl");
  REQUIRE(lines.size() == 3);
  const json first = json::parse(lines[0]);
  CHECK(first.size() == 4);
  CHECK(first.at("step").get<std::int64_t>() == 100);
  CHECK(first.at("wall_time").get<double>() == 1712345678.5);
  CHECK(first.at("loss").get<double>() == 0.1);
  CHECK(first.at(odd_tag).get<double>() == 1.0 / 3.0);
  CHECK(lines[0].rfind("{\"step\":100,\"wall_time\":1712345678.5,\"loss\":0.1,", 0) == 0);
  const json second = json::parse(lines[1]);
  CHECK(second.at("step").get<std::int64_t>() == 200);
  CHECK(second.at("loss").is_null());
  CHECK(second.at("return").is_null());
  const json third = json::parse(lines[2]);
  CHECK(third.at("frames").get<double>() == 1e12);
  CHECK(third.at("wall_time").get<double>() > 1.6e9);  // a real clock reading

  fs::path events_file;
  for (const auto& entry : fs::directory_iterator(logdir)) {
    if (entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0)
      events_file = entry.path();
  }
  REQUIRE(!events_file.empty());
  const auto events = seedrl::read_tfevents(events_file);
  REQUIRE(events.size() == 4);
  CHECK(events[1].step == 100);
  CHECK(events[1].wall_time == 1712345678.5);
  REQUIRE(events[1].scalars.size() == 2);
  CHECK(events[1].scalars[1] == seedrl::tfevents_scalar{odd_tag, static_cast<float>(1.0 / 3.0)});
  CHECK(std::isnan(events[2].scalars.at(0).value));
  CHECK(events[2].scalars.at(1).value == std::numeric_limits<float>::infinity());
  CHECK(events[3].wall_time == third.at("wall_time").get<double>());
}

TEST_CASE("metrics_log refuses reserved duplicate and invalid tags and writes nothing",
          "[metrics]") {
  temp_dir dir;
  seedrl::metrics_log log(dir.path);
  CHECK_THROWS_WITH(log.log(1, {{"step", 1.0}}), Catch::Contains("reserved"));
  CHECK_THROWS_WITH(log.log(1, {{"wall_time", 1.0}}), Catch::Contains("reserved"));
  CHECK_THROWS_WITH(log.log(1, {{"a", 1.0}, {"b", 2.0}, {"a", 3.0}}),
                    Catch::Contains("\"a\" appears twice"));
  CHECK_THROWS_AS(log.log(1, {{"", 1.0}}), std::invalid_argument);
  CHECK_THROWS_AS(log.log(1, {{"\xC3", 1.0}}), std::invalid_argument);
  CHECK(file_lines(log.jsonl_path()).empty());
  CHECK(seedrl::read_tfevents(log.events_path()).size() == 1);
}

TEST_CASE("metrics_log appends to an existing metrics.jsonl", "[metrics]") {
  temp_dir dir;
  { seedrl::metrics_log(dir.path).log(1, {{"x", 1.0}}); }
  { seedrl::metrics_log(dir.path).log(2, {{"x", 2.0}}); }
  const auto lines = file_lines(dir.path / "metrics.jsonl");
  REQUIRE(lines.size() == 2);
  CHECK(json::parse(lines[0]).at("step") == 1);
  CHECK(json::parse(lines[1]).at("step") == 2);
}

TEST_CASE("metrics_log from several threads writes whole lines and events", "[metrics]") {
  temp_dir dir;
  constexpr int threads = 4;
  constexpr int per_thread = 50;
  {
    seedrl::metrics_log log(dir.path);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&log, t] {
        const std::string tag = "thread" + std::to_string(t);
        for (int i = 0; i < per_thread; ++i)
          log.log(t * 1000 + i, {{tag, i * 0.5}, {"common", 1.0}});
      });
    }
    for (auto& th : pool)
      th.join();
    const auto events = seedrl::read_tfevents(log.events_path());
    CHECK(events.size() == std::size_t{threads * per_thread + 1});
  }
  const auto lines = file_lines(dir.path / "metrics.jsonl");
  REQUIRE(lines.size() == std::size_t{threads * per_thread});
  std::vector<int> seen(threads, 0);
  for (const auto& line : lines) {
    const json j = json::parse(line);
    const int t = static_cast<int>(j.at("step").get<std::int64_t>() / 1000);
    const int i = static_cast<int>(j.at("step").get<std::int64_t>() % 1000);
    CHECK(j.at("thread" + std::to_string(t)).get<double>() == i * 0.5);
    ++seen[static_cast<std::size_t>(t)];
  }
  for (const int n : seen)
    CHECK(n == per_thread);
}
