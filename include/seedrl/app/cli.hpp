#pragma once
/// \file
/// Command-line parsing for seedrl programs: CLI11 with seedrl's exit codes. `--help` prints
/// every flag and exits 0; an unknown flag, a malformed or out-of-range value, or a missing
/// required one prints one line naming the flag and what is wrong, then a hint to `--help`,
/// and exits 2 (CLI11's own codes differ per error kind: 105 for a conversion error, 109 for
/// extra arguments, ...; a script wants one "usage error" code).

#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace seedrl::app {

/// The exit status of a usage error (bad or unknown flag), as in the BSD and GNU tools.
inline constexpr int usage_error_exit = 2;

/// Parses `argv` into `cli`. Returns nullopt when the program should go on; otherwise the exit
/// status to return from main, after printing the help text (status 0) or the error (status 2).
inline std::optional<int> parse_command_line(CLI::App& cli, int argc, const char* const* argv) {
  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", cli.help().c_str());
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::printf("%s", cli.help("", CLI::AppFormatMode::All).c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s\nRun with --help for the list of flags.\n", cli.get_name().c_str(),
                 e.what());
    return usage_error_exit;
  }
  return std::nullopt;
}

/// Validators with messages that say what a value must be: CLI11's Range prints its bounds as
/// 300-digit doubles.
inline const CLI::Validator positive_number(
    [](std::string& v) -> std::string {
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(x > 0))
        return "must be a positive number, got '" + v + "'";
      return {};
    },
    "POSITIVE");
/// See positive_number.
inline const CLI::Validator non_negative_number(
    [](std::string& v) -> std::string {
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(x >= 0))
        return "must be a number >= 0, got '" + v + "'";
      return {};
    },
    "NONNEGATIVE");

/// Validator for `HOST:PORT` (the last colon separates the port, so IPv6 hosts work unbracketed:
/// `::1:5000`).
struct host_port {
  std::string host;
  std::uint16_t port = 0;
};

/// Parses `HOST:PORT`; nullopt when there is no colon or the port is not a number in 0..65535.
inline std::optional<host_port> parse_host_port(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 == text.size())
    return std::nullopt;
  std::uint32_t port = 0;
  for (std::size_t i = colon + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (c < '0' || c > '9' || port > 65535)
      return std::nullopt;
    port = port * 10 + static_cast<std::uint32_t>(c - '0');
  }
  if (port > 65535)
    return std::nullopt;
  return host_port{text.substr(0, colon), static_cast<std::uint16_t>(port)};
}

}  // namespace seedrl::app
