#include "transport/file_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

namespace chorus::transport {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxNameLength = 200;  // file names are limited to 255 bytes
constexpr auto kMinPoll = std::chrono::milliseconds(1);
constexpr auto kMaxPoll = std::chrono::milliseconds(20);
constexpr auto kLockTimeout = std::chrono::milliseconds(30'000);
constexpr std::string_view kHint =
    "check that the directory exists, is writable and is the same for every rank";

std::uint64_t hashFnv1a(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

// Key -> file name: [A-Za-z0-9_-] kept, everything else %XX; too long names are cut and get a
// hash of the whole key. Never starts with '.', which marks temporary and lock files.
std::string encodeKey(std::string_view key) {
  std::string name;
  for (unsigned char c : key) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
        c == '-') {
      name.push_back(static_cast<char>(c));
    } else {
      name += fmt::format("%{:02X}", c);
    }
  }
  if (name.empty()) name.push_back('%');
  if (name.size() > kMaxNameLength) {
    name = fmt::format("{}~{:016x}", name.substr(0, kMaxNameLength - 17), hashFnv1a(key));
  }
  return name;
}

std::string strerrorText(int error) {
  return std::strerror(error);
}

// Reads the whole file at `path`; nullopt if it does not exist.
std::optional<std::vector<std::uint8_t>> readFile(const std::string& backend,
                                                  const std::string& key, const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw CommError(fmt::format("{}: open('{}') for key '{}' failed: {}; {}", backend, path, key,
                                strerrorText(errno), kHint));
  }
  struct stat info {};
  std::vector<std::uint8_t> value;
  if (::fstat(fd, &info) == 0) value.reserve(static_cast<std::size_t>(info.st_size));
  std::uint8_t buffer[65536];
  while (true) {
    ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      int error = errno;
      ::close(fd);
      throw CommError(fmt::format("{}: read('{}') for key '{}' failed: {}; {}", backend, path, key,
                                  strerrorText(error), kHint));
    }
    if (got == 0) break;
    value.insert(value.end(), buffer, buffer + got);
  }
  ::close(fd);
  return value;
}

bool fileExists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

// Sleeps for the current backoff step (never past `deadline`) and doubles it.
void sleepBackoff(std::chrono::milliseconds& step, Clock::time_point deadline) {
  auto now = Clock::now();
  if (now >= deadline) return;
  std::this_thread::sleep_for(std::min<Clock::duration>(step, deadline - now));
  step = std::min(step * 2, kMaxPoll);
}

std::atomic<std::uint64_t> temporaryCounter{0};

// Serializes add() among all threads of this process (any FileStore object, any directory), so
// the flock below is contended only by other processes.
std::mutex& processAddMutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

FileStore::FileStore(std::string directory) : directory_(std::move(directory)) {
  if (directory_.empty()) {
    throw OptionError("FileStore: the directory is empty; pass a directory shared by all ranks");
  }
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  if (error || !std::filesystem::is_directory(directory_)) {
    throw CommError(fmt::format("FileStore: cannot create directory '{}': {}; {}", directory_,
                                error ? error.message() : "not a directory", kHint));
  }
}

void FileStore::set(const std::string& key, const std::vector<std::uint8_t>& value) {
  writeAtomically(key, pathOf(key), value);
}

std::vector<std::uint8_t> FileStore::get(const std::string& key,
                                         std::chrono::milliseconds timeout) {
  auto deadline = deadlineAfter(timeout);
  auto path = pathOf(key);
  auto step = std::chrono::milliseconds(kMinPoll);
  while (true) {
    if (auto value = readFile(backendName(), key, path)) return *value;
    if (Clock::now() >= deadline) {
      throwStoreTimeout(backendName(), fmt::format("get('{}')", key), {key}, timeout);
    }
    sleepBackoff(step, deadline);
  }
}

std::int64_t FileStore::add(const std::string& key, std::int64_t delta) {
  std::lock_guard guard(processAddMutex());
  auto path = pathOf(key);
  auto lockPath = directory_ + "/.lock-" + encodeKey(key);
  int fd = ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw CommError(fmt::format("{}: open('{}') to lock counter '{}' failed: {}; {}", backendName(),
                                lockPath, key, strerrorText(errno), kHint));
  }
  auto deadline = deadlineAfter(kLockTimeout);
  auto step = std::chrono::milliseconds(kMinPoll);
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int error = errno;
    if (error != EWOULDBLOCK && error != EINTR) {
      ::close(fd);
      throw CommError(fmt::format("{}: flock('{}') for counter '{}' failed: {}; {}", backendName(),
                                  lockPath, key, strerrorText(error), kHint));
    }
    if (Clock::now() >= deadline) {
      ::close(fd);
      throw TimeoutError(fmt::format(
          "{}: add('{}') could not lock '{}' within {} ms; another process holds it (a hung "
          "rank?)",
          backendName(), key, lockPath, kLockTimeout.count()));
    }
    sleepBackoff(step, deadline);
  }
  try {
    std::int64_t result = delta;
    if (auto current = readFile(backendName(), key, path)) {
      auto counter = parseCounter(*current);
      if (!counter) throw OptionError(nonCounterMessage(backendName(), key));
      result = *counter + delta;
    }
    writeAtomically(key, path, toBytes(std::to_string(result)));
    ::close(fd);  // releases the flock
    return result;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

bool FileStore::check(const std::vector<std::string>& keys) {
  return findMissing(keys).empty();
}

void FileStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  auto deadline = deadlineAfter(timeout);
  auto step = std::chrono::milliseconds(kMinPoll);
  auto missing = findMissing(keys);
  while (!missing.empty()) {
    if (Clock::now() >= deadline) throwStoreTimeout(backendName(), "wait", missing, timeout);
    sleepBackoff(step, deadline);
    missing = findMissing(missing);
  }
}

std::string FileStore::pathOf(const std::string& key) const {
  return directory_ + "/" + encodeKey(key);
}

void FileStore::writeAtomically(const std::string& key, const std::string& path,
                                const std::vector<std::uint8_t>& value) {
  auto temporary = fmt::format("{}/.tmp-{}-{}", directory_, ::getpid(), temporaryCounter++);
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw CommError(fmt::format("{}: open('{}') to write key '{}' failed: {}; {}", backendName(),
                                temporary, key, strerrorText(errno), kHint));
  }
  std::size_t written = 0;
  while (written < value.size()) {
    ssize_t put = ::write(fd, value.data() + written, value.size() - written);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) {
      int error = errno;
      ::close(fd);
      ::unlink(temporary.c_str());
      throw CommError(fmt::format("{}: write('{}') for key '{}' failed: {}; {}", backendName(),
                                  temporary, key, strerrorText(error), kHint));
    }
    written += static_cast<std::size_t>(put);
  }
  ::close(fd);
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    int error = errno;
    ::unlink(temporary.c_str());
    throw CommError(fmt::format("{}: rename('{}' -> '{}') for key '{}' failed: {}; {}",
                                backendName(), temporary, path, key, strerrorText(error), kHint));
  }
}

std::vector<std::string> FileStore::findMissing(const std::vector<std::string>& keys) const {
  std::vector<std::string> missing;
  for (const auto& key : keys) {
    if (!fileExists(pathOf(key))) missing.push_back(key);
  }
  return missing;
}

std::string FileStore::backendName() const {
  return fmt::format("FileStore {}", directory_);
}

}  // namespace chorus::transport
