#pragma once
/// \file
/// A replay's contents beside a learner's checkpoints (R2D2 with `--checkpoint-replay`):
/// `ckpt-<step>.replay` next to `ckpt-<step>.seedrl`, in the format of
/// `sequence_replay::save`, written as a checkpoint is (a temporary file, fsync, rename, the
/// directory fsync'ed) so that a crash leaves the previous file whole. Only the newest is kept:
/// a resume continues from the newest checkpoint, and a replay is large (docs/r2d2.md).

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>

#include "seedrl/io/checkpoint.hpp"

namespace seedrl::replay {

/// The replay file that goes with `checkpoint_file` (ckpt-<step>.seedrl -> ckpt-<step>.replay).
inline std::filesystem::path replay_file_beside(const std::filesystem::path& checkpoint_file) {
  std::filesystem::path p = checkpoint_file;
  p.replace_extension(".replay");
  return p;
}

/// Writes `replay` (anything with `std::size_t save(std::ostream&)`, e.g. sequence_replay or
/// unroll_replay) to `path` durably and returns the sequences written. Creates the directory
/// if it is missing. Throws std::runtime_error naming the file and what failed; the temporary
/// file is then removed and an earlier file of that name is left as it was.
template <class Replay>
std::size_t write_replay_file(const std::filesystem::path& path, Replay& replay) {
  const auto fail = [&path](const std::string& what) {
    throw std::runtime_error("seedrl: replay file '" + path.string() +
                             "' cannot be written: " + what);
  };
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    if (const std::string problem = detail::create_directories_durably(dir); !problem.empty())
      fail(problem);
  }
  const std::filesystem::path temp = dir / detail::checkpoint_temp_name(path.filename().string());
  std::size_t written = 0;
  try {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw std::runtime_error("cannot create temporary file '" + temp.string() + "'");
    written = replay.save(out);
    out.close();
    if (!out)
      throw std::runtime_error("closing '" + temp.string() + "' failed (disk full?)");
    const int fd = ::open(temp.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) {
      const int err = errno;
      if (fd >= 0)
        ::close(fd);
      throw std::runtime_error(detail::errno_text("fsync", err));
    }
    ::close(fd);
    if (::rename(temp.c_str(), path.c_str()) != 0)
      throw std::runtime_error(detail::errno_text("rename", errno));
  } catch (const std::exception& e) {
    ::unlink(temp.c_str());
    fail(std::string(e.what()) + " (temporary file removed)");
  }
  if (const int err = detail::fsync_directory(dir); err != 0)
    fail("written, but the directory could not be synced: " + detail::errno_text("fsync", err));
  return written;
}

/// Deletes the replay files in `dir` other than `keep` (and temporary ones of killed writers),
/// telling `report` about each that could not be deleted.
inline void remove_other_replay_files(const std::filesystem::path& dir,
                                      const std::filesystem::path& keep,
                                      const checkpoint_report& report) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool replay = name.starts_with("ckpt-") &&
                        (name.ends_with(".replay") || name.find(".replay.tmp-") != name.npos);
    if (!replay || it->path().filename() == keep.filename())
      continue;
    if (::unlink(it->path().c_str()) != 0 && errno != ENOENT && report)
      report(it->path(), "could not be deleted: " + detail::errno_text("unlink", errno));
  }
}

/// Restores `replay` (anything with `std::size_t load(std::istream&)`) from `path` and returns
/// the sequences restored. Throws std::runtime_error naming the file: it cannot be opened, or
/// load's reasons (another shape, a truncated or corrupt file).
template <class Replay>
std::size_t read_replay_file(const std::filesystem::path& path, Replay& replay) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("seedrl: replay file '" + path.string() + "' cannot be opened");
  try {
    return replay.load(in);
  } catch (const std::exception& e) {
    throw std::runtime_error("seedrl: replay file '" + path.string() + "': " + e.what());
  }
}

}  // namespace seedrl::replay
