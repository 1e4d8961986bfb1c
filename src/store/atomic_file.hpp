// Whole-file reads and atomic, private writes (temp file 0600, fsync, rename, fsync of the folder),
// and an advisory lock so the engine and the CLI never interleave read-modify-write cycles.
#pragma once
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

namespace leuria::store {

// nullopt when the file doesn't exist; throws std::runtime_error on other failures.
std::optional<std::string> read_file(const std::filesystem::path& path);

// Replaces `path` with `content` atomically and durably: <path>.tmp (0600) written and fsynced,
// renamed over `path`, then the folder fsynced. Throws std::runtime_error naming the step and the
// system's reason (errno text) on any failure, with `path` unchanged, or NotDurable when only the
// last step failed. The caller holds <path>.lock, so the temp name can be fixed.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

// What write_file_atomic throws when the new content is in place but the folder could not be
// synced: a power cut could still undo it, so it must not be acknowledged.
struct NotDurable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The temp file write_file_atomic uses for `path`.
std::filesystem::path temp_path(const std::filesystem::path& path);

// Removes temp files a killed writer left next to `path`. Call with <path>.lock held.
void remove_stale_temps(const std::filesystem::path& path);

// Holds an exclusive flock on `path` (created 0600) for its lifetime.
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace leuria::store
