#pragma once
/// \file
/// Actors written in Python: `python -m seedrl_actor --env ID` (python/seedrl_actor) steps any
/// gymnasium environment (ALE games among them) and talks to a C++ learner. `python_actor`
/// builds that command for local mode's actor processes and asks it for the environment's
/// specs (`--print-spec`), so that the learner's network matches what the actors will send.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "seedrl/app/processes.hpp"
#include "seedrl/core/spec.hpp"

namespace seedrl::app {

/// What `--print-spec` says about an environment.
struct python_env_spec {
  observation_spec observations;
  action_spec actions;
};

/// Reads `--print-spec`'s JSON line, e.g. {"env": "ALE/Pong-v5", "observation": {"dtype":
/// "uint8", "shape": [84, 84]}, "actions": 6}, or for a Box action space {..., "action":
/// {"kind": "continuous", "shape": [6], "low": [-1.0, ...], "high": [1.0, ...]}} (one pair per
/// element, row-major; -Infinity and Infinity for unbounded sides); nullopt when a field is
/// missing or unsupported.
inline std::optional<python_env_spec> parse_python_env_spec(std::string_view json) {
  const auto after = [&](std::string_view key) -> std::optional<std::size_t> {
    const auto at = json.find(key);
    if (at == std::string_view::npos)
      return std::nullopt;
    auto p = at + key.size();
    while (p < json.size() && (json[p] == ' ' || json[p] == ':'))
      ++p;
    return p;
  };
  const auto integer = [&](std::size_t& p) -> std::optional<std::int64_t> {
    std::int64_t v = 0;
    const std::size_t start = p;
    for (; p < json.size() && json[p] >= '0' && json[p] <= '9'; ++p)
      v = v * 10 + (json[p] - '0');
    if (p == start)
      return std::nullopt;
    return v;
  };
  // A JSON array at p ('[' ... ']') of what `element` reads; false when malformed.
  const auto array = [&](std::size_t p, auto&& element) {
    if (p >= json.size() || json[p] != '[')
      return false;
    for (++p;;) {
      while (p < json.size() && (json[p] == ' ' || json[p] == ','))
        ++p;
      if (p < json.size() && json[p] == ']')
        return true;
      if (p >= json.size() || !element(p))
        return false;
    }
  };
  // A number (strtod's syntax, which takes -Infinity and Infinity) at p, advancing p.
  const auto number = [&](std::size_t& p, std::vector<double>& out) {
    const std::string rest(json.substr(p, std::min<std::size_t>(32, json.size() - p)));
    char* end = nullptr;
    const double v = std::strtod(rest.c_str(), &end);
    if (end == rest.c_str() || std::isnan(v))
      return false;
    p += static_cast<std::size_t>(end - rest.c_str());
    out.push_back(v);
    return true;
  };
  python_env_spec s;
  auto p = after("\"actions\"");
  if (p) {
    const auto n = integer(*p);
    if (!n || *n < 1 || *n > INT32_MAX)
      return std::nullopt;
    s.actions = action_spec::discrete(static_cast<std::int32_t>(*n));
  } else {
    // A Box: its own "shape", "low" and "high", all after "action".
    const auto at = json.find("\"action\"");
    if (at == std::string_view::npos || json.find("\"continuous\"", at) == std::string_view::npos)
      return std::nullopt;
    const auto key = [&](std::string_view k) {
      const auto q = json.find(k, at);
      auto r = q == std::string_view::npos ? json.size() : q + k.size();
      while (r < json.size() && (json[r] == ' ' || json[r] == ':'))
        ++r;
      return r;
    };
    tensor_shape shape;
    std::vector<double> lows, highs;
    const bool ok = array(key("\"shape\""),
                          [&](std::size_t& q) {
                            const auto d = integer(q);
                            if (!d || *d < 1 || shape.rank() == tensor_shape::max_rank)
                              return false;
                            shape.push_back(*d);
                            return true;
                          }) &&
                    array(key("\"low\""), [&](std::size_t& q) { return number(q, lows); }) &&
                    array(key("\"high\""), [&](std::size_t& q) { return number(q, highs); });
    if (!ok || shape.rank() == 0)
      return std::nullopt;
    try {
      s.actions = action_spec::continuous(shape, lows, highs);
    } catch (const std::invalid_argument&) {  // counts that differ from the shape, low >= high
      return std::nullopt;
    }
  }
  p = after("\"dtype\"");
  if (!p || *p >= json.size() || json[*p] != '"')
    return std::nullopt;
  const auto end = json.find('"', *p + 1);
  if (end == std::string_view::npos)
    return std::nullopt;
  const auto name = json.substr(*p + 1, end - *p - 1);
  bool known = false;
  for (const dtype t : {dtype::uint8, dtype::int32, dtype::float32, dtype::float64}) {
    if (name == to_string(t)) {
      s.observations.type = t;
      known = true;
    }
  }
  if (!known)
    return std::nullopt;
  p = after("\"shape\"");
  if (!p || *p >= json.size() || json[*p] != '[')
    return std::nullopt;
  for (++*p;;) {
    while (*p < json.size() && (json[*p] == ' ' || json[*p] == ','))
      ++*p;
    if (*p < json.size() && json[*p] == ']')
      break;
    const auto d = integer(*p);
    if (!d || *d < 1 || s.observations.shape.rank() == tensor_shape::max_rank)
      return std::nullopt;
    s.observations.shape.push_back(*d);
  }
  return s;
}

/// See the file comment.
struct python_actor {
  /// The interpreter: $SEEDRL_PYTHON when set, else python3.
  std::string python = [] {
    const char* p = std::getenv("SEEDRL_PYTHON");
    return std::string(p && *p ? p : "python3");
  }();
  std::string env_id;                ///< a gymnasium id, e.g. ALE/Pong-v5 or CartPole-v1
  std::vector<std::string> options;  ///< more seedrl_actor flags, e.g. {"--sticky-actions", "0.25"}

  /// Puts `dir` (a python/ folder holding seedrl_actor, e.g. this source tree's) first on
  /// PYTHONPATH for the commands started from now on; does nothing when it holds no package.
  static void use_package_from(const std::string& dir) {
    if (dir.empty() || !std::filesystem::exists(dir + "/seedrl_actor"))
      return;
    const char* old = std::getenv("PYTHONPATH");
    ::setenv("PYTHONPATH", (old && *old ? dir + ":" + old : dir).c_str(), 1);
  }

  /// `python -m seedrl_actor --env ID OPTIONS...`.
  std::vector<std::string> args() const {
    std::vector<std::string> a{python, "-m", "seedrl_actor", "--env", env_id};
    a.insert(a.end(), options.begin(), options.end());
    return a;
  }

  /// The argv of a local-mode actor process (for `environment_info::actor_command`).
  std::vector<std::string> command(const std::string& address, std::size_t envs,
                                   std::uint64_t seed) const {
    auto a = args();
    a.insert(a.end(), {"--learner", address, "--envs", std::to_string(envs), "--seed",
                       std::to_string(seed)});
    return a;
  }

  /// The environment's specs, asked of the Python actor; nullopt when it cannot say (the
  /// package or the environment is missing: its own message is on stderr).
  std::optional<python_env_spec> spec() const {
    auto a = args();
    a.emplace_back("--print-spec");
    const auto out = capture(a);
    return out ? parse_python_env_spec(*out) : std::nullopt;
  }
};

}  // namespace seedrl::app
