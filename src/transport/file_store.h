// FileStore: a Store for processes that share a directory (one host, or a shared file system);
// used by the runtime bootstrap and the multi-process tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "transport/store.h"

namespace chorus::transport {

// One file per key in `directory` (created if missing), named after the key with characters
// outside [A-Za-z0-9_-] escaped as %XX. Values are written to a temporary file and renamed, so
// readers see whole values only; get()/wait() poll with a backoff of 1 to 20 ms. add() holds an
// flock on a per-key lock file (given up with TimeoutError after 30 s). Thread-safe; any number
// of FileStore objects and processes may use the same directory. Files are left behind: use a
// fresh directory (or a PrefixStore with a fresh prefix) per run.
class FileStore : public Store {
 public:
  explicit FileStore(std::string directory);

  void set(const std::string& key, const std::vector<std::uint8_t>& value) override;
  std::vector<std::uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;

  const std::string& directory() const { return directory_; }

 private:
  std::string pathOf(const std::string& key) const;
  // Writes `value` to `path` atomically (temporary file + rename).
  void writeAtomically(const std::string& key, const std::string& path,
                       const std::vector<std::uint8_t>& value);
  std::vector<std::string> findMissing(const std::vector<std::string>& keys) const;
  std::string backendName() const;

  std::string directory_;
};

}  // namespace chorus::transport
