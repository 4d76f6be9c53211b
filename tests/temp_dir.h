// Scratch files for tests: a directory of its own per TempDir (removed with everything in it when
// the TempDir goes), and tempPath() for a single file named after the process.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace chorus::testing_support {

// `<tmp>/<pid>_<name>`: unique per test process, so parallel test runs do not collide.
inline std::filesystem::path tempPath(const std::string& name) {
  return std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "_" + name);
}

// A fresh, empty directory under the system's temporary directory (mkdtemp: unique even across
// processes and repeated constructions). Throws std::runtime_error when it cannot be made.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "chorus-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("TempDir: mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string path() const { return path_.string(); }
  // The path of `name` inside the directory (not created).
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // Writes `text` to `name` inside the directory and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::filesystem::path file = path_ / name;
    std::ofstream(file) << text;
    return file.string();
  }
  // Copies the file `source` into the directory under its own name and returns the copy's path.
  std::string copy(const std::string& source) const {
    const std::filesystem::path file = path_ / std::filesystem::path(source).filename();
    std::filesystem::copy_file(source, file);
    return file.string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace chorus::testing_support
