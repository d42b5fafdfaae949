#pragma once
/// \file
/// The shared secret of the authenticated actor link, loaded from an environment variable or a
/// file and never from the command line: argv is visible to every user through ps and
/// /proc/PID/cmdline, and ends up in shell history and job specs. See docs/security.md.
///
/// POSIX only (open/fstat), like seedrl's socket transports.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "seedrl/security/sha256.hpp"

namespace seedrl::security {

/// The environment variable seedrl's programs read the secret from unless told otherwise.
inline constexpr const char* default_secret_env = "SEEDRL_AUTH_SECRET";

/// Why a secret could not be loaded; the message names the variable or path and the fix.
class secret_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A validated shared secret: between min_size and max_size bytes, held in memory that is
/// wiped when the object dies. Move-only, so that the key is not copied around by accident;
/// it has no operator<< and its text never appears in an error message.
class shared_secret {
 public:
  /// Fewest bytes accepted. Proofs are HMACs over public nonces, so whoever records a
  /// handshake can test guesses offline; 16 bytes of randomness put that out of reach, a short
  /// password does not. Generate one with `head -c 32 /dev/urandom | base64`.
  static constexpr std::size_t min_size = 16;
  /// Most bytes accepted: bounds what a mistaken path (a log file, a device) makes us read.
  static constexpr std::size_t max_size = 4096;

  /// Reads the secret from environment variable `name` (e.g. default_secret_env). One trailing
  /// "\n" is removed, as for files, so that `SEEDRL_AUTH_SECRET="$(cat f)"` and the file f
  /// give the same secret. Throws secret_error when the variable is unset, empty, shorter than
  /// min_size or longer than max_size bytes.
  static shared_secret from_env(const std::string& name) {
    const char* value = std::getenv(name.c_str());
    const std::string origin = "environment variable " + name;
    if (value == nullptr) {
      throw secret_error("seedrl: " + origin +
                         " is not set; put the shared secret in it (or use a secret file)");
    }
    const std::string_view text(value);
    return checked(detail::text_bytes(strip_newline(text)), origin);
  }

  /// Reads the secret from the file at `path`. One trailing "\n" is removed (editors and
  /// `echo` add one); any other whitespace is part of the secret. Throws secret_error when the
  /// file cannot be opened, is not a regular file, is readable or writable by group or others
  /// (mode & 077, checked on the opened file so that it cannot be swapped after the check), or
  /// holds an empty, too short or too long secret.
  static shared_secret from_file(const std::filesystem::path& path) {
    const std::string origin = "secret file " + path.string();
    // O_NONBLOCK: opening a FIFO by mistake must fail the regular-file check below, not hang.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      throw secret_error("seedrl: cannot open " + origin + ": " + std::strerror(errno));
    }
    const file_closer closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      throw secret_error("seedrl: cannot stat " + origin + ": " + std::strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) {
      throw secret_error("seedrl: " + origin + " is not a regular file");
    }
    if ((st.st_mode & 077) != 0) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      throw secret_error("seedrl: " + origin + " is accessible by group or others (mode " + mode +
                         "); run `chmod 600 " + path.string() +
                         "` so that only its owner can read it");
    }
    std::byte chunk[512];
    std::vector<std::byte> data;
    // Reserved once so that growth never leaves an unwiped copy of the secret behind; reading
    // stops past max_size, so a too long file is told apart from a full one.
    data.reserve(max_size + sizeof chunk);
    while (data.size() <= max_size) {
      const ::ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0) {
        const int err = errno;
        detail::secure_zero(data);
        detail::secure_zero(std::span(chunk));
        throw secret_error("seedrl: cannot read " + origin + ": " + std::strerror(err));
      }
      if (n == 0)
        break;
      data.insert(data.end(), chunk, chunk + n);
    }
    detail::secure_zero(std::span(chunk));
    std::span<const std::byte> bytes(data);
    if (!bytes.empty() && bytes.back() == std::byte{'\n'})
      bytes = bytes.first(bytes.size() - 1);
    try {
      shared_secret s = checked(bytes, origin);
      detail::secure_zero(data);
      return s;
    } catch (...) {
      detail::secure_zero(data);
      throw;
    }
  }

  /// Wraps bytes the caller already holds (from a vault client, a test); `origin` names where
  /// they came from, for messages. Applies the size checks, removes no newline.
  static shared_secret from_bytes(std::span<const std::byte> bytes, std::string origin) {
    return checked(bytes, origin);
  }

  shared_secret(shared_secret&& other) noexcept
      : bytes_(std::exchange(other.bytes_, {})), origin_(std::move(other.origin_)) {}
  shared_secret& operator=(shared_secret&& other) noexcept {
    if (this != &other) {
      detail::secure_zero(bytes_);
      bytes_ = std::exchange(other.bytes_, {});
      origin_ = std::move(other.origin_);
    }
    return *this;
  }
  shared_secret(const shared_secret&) = delete;
  shared_secret& operator=(const shared_secret&) = delete;
  ~shared_secret() { detail::secure_zero(bytes_); }

  /// The key bytes, for hmac_sha256.
  std::span<const std::byte> bytes() const noexcept { return bytes_; }
  /// Number of key bytes.
  std::size_t size() const noexcept { return bytes_.size(); }
  /// Where the secret came from ("environment variable X", "secret file /p"), for logs; never
  /// the secret itself.
  const std::string& origin() const noexcept { return origin_; }

 private:
  shared_secret(std::span<const std::byte> bytes, std::string origin)
      : bytes_(bytes.begin(), bytes.end()), origin_(std::move(origin)) {}

  static std::string_view strip_newline(std::string_view text) noexcept {
    if (!text.empty() && text.back() == '\n')
      text.remove_suffix(1);
    return text;
  }

  static shared_secret checked(std::span<const std::byte> bytes, const std::string& origin) {
    if (bytes.empty()) {
      throw secret_error("seedrl: the shared secret in " + origin +
                         " is empty; generate one with `head -c 32 /dev/urandom | base64`");
    }
    if (bytes.size() < min_size) {
      throw secret_error("seedrl: the shared secret in " + origin + " is " +
                         std::to_string(bytes.size()) + " bytes; use at least " +
                         std::to_string(min_size) +
                         " random bytes, e.g. from `head -c 32 /dev/urandom | base64`");
    }
    if (bytes.size() > max_size) {
      throw secret_error("seedrl: the shared secret in " + origin + " is longer than " +
                         std::to_string(max_size) + " bytes; is this the right file or variable?");
    }
    return shared_secret(bytes, origin);
  }

  struct file_closer {
    int fd;
    ~file_closer() { ::close(fd); }
  };

  std::vector<std::byte> bytes_;
  std::string origin_;
};

}  // namespace seedrl::security
