#pragma once
/// \file
/// `triple_buffer_index`: which of three buffers a single writer writes, which one holds the
/// newest complete set, and which one a single reader reads, so that the writer never waits
/// for the reader and the reader never sees a half-written set. The writer fills
/// `write_index()` and calls `publish()`, which makes it the newest and hands the writer the
/// previous newest (never the one being read); the reader's `acquire()` takes the newest when it
/// is newer than what it holds and gives its old one back. Only indices move, under a mutex
/// held for a few instructions; the buffers themselves live wherever the caller keeps them
/// (device memory for cuda::device_parameter_channel, which publishes the GPU trainer's
/// parameters to the GPU inference engine without a host round trip).

#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>

namespace seedrl {

/// See the file comment.
class triple_buffer_index {
 public:
  /// What acquire() hands the reader: the buffer to read and the version it holds.
  struct acquired {
    int index = 0;
    std::uint64_t version = 0;
  };

  /// The buffer the writer fills next (it owns it until publish()).
  int write_index() const {
    std::lock_guard lock(mutex_);
    return write_;
  }

  /// The written buffer becomes the newest set (version + 1); the writer gets the previous
  /// newest to fill next. Returns the new version.
  std::uint64_t publish() {
    std::lock_guard lock(mutex_);
    std::swap(write_, latest_);
    ++version_;
    latest_version_ = version_;
    fresh_ = true;
    return version_;
  }

  /// The newest set when it is newer than the one the reader holds: the reader owns that
  /// buffer until its next successful acquire(); nullopt when nothing new was published.
  std::optional<acquired> acquire() {
    std::lock_guard lock(mutex_);
    if (!fresh_)
      return std::nullopt;
    std::swap(read_, latest_);
    fresh_ = false;
    read_version_ = latest_version_;
    return acquired{read_, read_version_};
  }

  /// Sets published so far.
  std::uint64_t version() const {
    std::lock_guard lock(mutex_);
    return version_;
  }

 private:
  mutable std::mutex mutex_;
  int write_ = 0, latest_ = 1, read_ = 2;
  bool fresh_ = false;  // latest_ holds a set the reader has not taken
  std::uint64_t version_ = 0, latest_version_ = 0, read_version_ = 0;
};

}  // namespace seedrl
