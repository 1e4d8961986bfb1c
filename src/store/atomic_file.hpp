// Whole-file reads and atomic, private writes (temp file 0600, fsync, rename, fsync of the folder),
// and an advisory lock so the engine and the CLI never interleave read-modify-write cycles.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace leuria::store {

// nullopt when the file doesn't exist; throws std::runtime_error on other failures.
std::optional<std::string> read_file(const std::filesystem::path& path);

// Replaces `path` with `content` atomically; the file is 0600. Throws std::runtime_error on failure.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

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
