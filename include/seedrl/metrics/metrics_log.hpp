#pragma once
/// \file
/// The one object a training program logs its scalars to. Each `log(step, {{"tag", value}, ...})`
/// call appends
///   - one line to `<logdir>/metrics.jsonl`: a JSON object with "step", "wall_time" and one
///     member per tag, e.g. {"step":1000,"wall_time":1712345678.25,"loss":0.5,"return":21};
///     numbers are written in the shortest form that reads back to the same double, and NaN and
///     infinities (which JSON cannot hold) as null;
///   - one Event to a TensorBoard event file in `<logdir>` (seedrl/metrics/tfevents.hpp).
/// Both are flushed before `log` returns. docs/metrics.md describes the files, the tags the
/// examples use, and how to view them with TensorBoard or tools/plot_metrics.py.

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include "seedrl/metrics/tfevents.hpp"

namespace seedrl {

namespace detail {

/// Appends `s` as a JSON string literal. `s` must be valid UTF-8 (tags are checked); bytes
/// from 0x80 up pass through, control characters become escapes.
inline void append_json_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out.push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(hex[c >> 4]);
          out.push_back(hex[c & 0xFu]);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
}

/// Appends `v` as a JSON number in its shortest round-trip form, or null when not finite.
inline void append_json_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

}  // namespace detail

/// Writes scalars to `metrics.jsonl` and a TensorBoard event file in one log directory.
/// `log` may be called from several threads: each call's line and event are written whole.
class metrics_log {
 public:
  /// Creates `logdir` (and parents) if missing, opens `<logdir>/metrics.jsonl` for appending
  /// (a resumed run adds to it; start a new run in a new directory) and starts a new event file
  /// there. Throws `std::filesystem::filesystem_error` naming the path when either cannot be
  /// created.
  explicit metrics_log(const std::filesystem::path& logdir)
      : logdir_(logdir), events_(logdir), jsonl_path_(logdir / "metrics.jsonl") {
    errno = 0;
    jsonl_.reset(std::fopen(jsonl_path_.string().c_str(), "ab"));
    if (jsonl_ == nullptr)
      detail::throw_io_error("cannot open metrics file for appending", jsonl_path_, errno);
  }

  /// Logs `values` at `step` (frames, updates: whatever the x axis should be), stamped
  /// `wall_time` (seconds since the Unix epoch). Throws `std::invalid_argument`, logging
  /// nothing, for an empty or non-UTF-8 tag, a tag used twice in one call, or the reserved
  /// tags "step" and "wall_time" (they would clash with the JSON line's own members); throws
  /// `std::filesystem::filesystem_error` naming the file when writing fails.
  void log(std::int64_t step, std::span<const metric_value> values, double wall_time) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      detail::check_metric_tag(values[i].tag);
      if (values[i].tag == "step" || values[i].tag == "wall_time") {
        throw std::invalid_argument("seedrl: metric tag \"" + std::string(values[i].tag) +
                                    "\" is reserved for the metrics.jsonl line's own member");
      }
      for (std::size_t j = 0; j < i; ++j) {
        if (values[j].tag == values[i].tag) {
          throw std::invalid_argument("seedrl: metric tag \"" + std::string(values[i].tag) +
                                      "\" appears twice in one log call");
        }
      }
    }
    std::string line = "{\"step\":" + std::to_string(step) + ",\"wall_time\":";
    detail::append_json_number(line, wall_time);
    for (const metric_value& v : values) {
      line.push_back(',');
      detail::append_json_string(line, v.tag);
      line.push_back(':');
      detail::append_json_number(line, v.value);
    }
    line += "}\n";

    const std::lock_guard<std::mutex> lock(mutex_);
    errno = 0;
    if (std::fwrite(line.data(), 1, line.size(), jsonl_.get()) != line.size() ||
        std::fflush(jsonl_.get()) != 0) {
      detail::throw_io_error("cannot write metrics file", jsonl_path_, errno);
    }
    events_.write_scalars(step, values, wall_time);
  }

  /// As above, stamped with the current time.
  void log(std::int64_t step, std::span<const metric_value> values) {
    log(step, values, detail::unix_time_now());
  }

  /// As above, for a braced list: `log.log(frames, {{"loss", loss}, {"return", mean_return}})`.
  void log(std::int64_t step, std::initializer_list<metric_value> values) {
    log(step, std::span<const metric_value>(values.begin(), values.size()));
  }

  /// A braced list stamped `wall_time`.
  void log(std::int64_t step, std::initializer_list<metric_value> values, double wall_time) {
    log(step, std::span<const metric_value>(values.begin(), values.size()), wall_time);
  }

  /// The log directory.
  [[nodiscard]] const std::filesystem::path& logdir() const noexcept { return logdir_; }

  /// `<logdir>/metrics.jsonl`.
  [[nodiscard]] const std::filesystem::path& jsonl_path() const noexcept { return jsonl_path_; }

  /// The TensorBoard event file this log writes.
  [[nodiscard]] const std::filesystem::path& events_path() const noexcept { return events_.path(); }

 private:
  struct file_closer {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };

  std::filesystem::path logdir_;
  tfevents_writer events_;  ///< created first: it makes the directory
  std::filesystem::path jsonl_path_;
  std::unique_ptr<std::FILE, file_closer> jsonl_;
  std::mutex mutex_;
};

}  // namespace seedrl
