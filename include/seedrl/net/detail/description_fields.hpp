#pragma once
/// \file
/// The reading side of the agents' one-line descriptions ("kind key=value key=value ..."),
/// which checkpoints store: the field loop and the value readers both agent configs' parsers
/// use (mlp_lstm_agent_config.hpp, pixel_lstm_agent_config.hpp). Locale-independent
/// (std::from_chars). No Eigen: nvcc compiles it.

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace seedrl::detail {

/// Reads a non-negative integer; false if malformed.
inline bool parse_non_negative(std::string_view v, std::int64_t& out) {
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc() && end == v.data() + v.size() && out >= 0;
}

/// Reads a comma-separated list of non-negative integers; false if malformed.
inline bool parse_int_list(std::string_view v, std::vector<std::ptrdiff_t>& out) {
  out.clear();
  for (std::size_t p = 0; p <= v.size();) {
    const std::size_t comma = std::min(v.find(',', p), v.size());
    std::int64_t x = 0;
    if (!parse_non_negative(v.substr(p, comma - p), x))
      return false;
    out.push_back(static_cast<std::ptrdiff_t>(x));
    p = comma + 1;
  }
  return true;
}

/// Reads a double (as std::to_chars or std::to_string wrote it); false if malformed.
inline bool parse_double(std::string_view v, double& out) {
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc() && end == v.data() + v.size();
}

/// Reads "none" (no value) or a double; false if malformed.
inline bool parse_optional_double(std::string_view v, std::optional<double>& out) {
  if (v == "none") {
    out.reset();
    return true;
  }
  double x = 0.0;
  if (!parse_double(v, x))
    return false;
  out = x;
  return true;
}

/// Calls field(key, value) for each "key=value" of `text` after its leading `kind` (the first
/// word), in order; throws fail(why) (an exception object) when the text does not start with
/// `kind`, a field has no '=' or a key appears twice. Returns the number of fields.
template <class Fail, class Field>
std::size_t for_each_description_field(std::string_view text, std::string_view kind,
                                       const Fail& fail, Field&& field) {
  if (text.substr(0, kind.size()) != kind ||
      (text.size() > kind.size() && text[kind.size()] != ' '))
    throw fail("it does not start with " + std::string(kind));
  std::vector<std::string_view> seen;
  std::size_t at = kind.size();
  while (at < text.size()) {
    if (text[at] == ' ') {
      ++at;
      continue;
    }
    const std::size_t end = std::min(text.find(' ', at), text.size());
    const std::string_view f = text.substr(at, end - at);
    at = end;
    const std::size_t eq = f.find('=');
    if (eq == std::string_view::npos)
      throw fail("field \"" + std::string(f) + "\" has no '='");
    const std::string_view key = f.substr(0, eq), value = f.substr(eq + 1);
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      throw fail("field \"" + std::string(key) + "\" appears twice");
    seen.push_back(key);
    field(key, value);
  }
  return seen.size();
}

}  // namespace seedrl::detail
