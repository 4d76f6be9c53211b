#include "transport/shm/registered_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <list>
#include <map>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "chorus/error.h"
#include "support/size.h"

namespace chorus::transport {

namespace {

std::string errorCodeText(int error) {
  return std::error_code(error, std::generic_category()).message();
}

std::string memfdName(std::uint64_t id) {
  return fmt::format("chorus-mem-{}", id);
}

// This process's allocations by base address.
struct Registry {
  std::shared_mutex mutex;
  std::map<std::uint64_t, RegisteredRange> byBase;
  std::atomic<std::size_t> count{0};
  std::atomic<std::uint64_t> nextId{1};
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: frees may run during exit
  return *r;
}

// Mappings of peers' allocations, least recently used first.
struct PeerCache {
  std::mutex mutex;
  struct Entry {
    int pid;
    RegisteredRange range;
    std::shared_ptr<const PeerMapping> mapping;
  };
  std::list<Entry> entries;
};

PeerCache& peerCache() {
  static PeerCache* c = new PeerCache;
  return *c;
}

}  // namespace

void* allocateRegistered(std::size_t bytes) {
  if (bytes == 0) throw OptionError("chorus::memAlloc: 0 bytes asked for; ask for at least 1 byte");
  Registry& r = registry();
  const std::uint64_t id = r.nextId.fetch_add(1, std::memory_order_relaxed);
  const int fd = ::memfd_create(memfdName(id).c_str(), MFD_CLOEXEC);
  if (fd < 0)
    throw CommError(fmt::format("chorus::memAlloc: memfd_create failed: {}", errorCodeText(errno)));
  auto fail = [&](const char* what) {
    const int error = errno;
    ::close(fd);
    throw CommError(fmt::format("chorus::memAlloc: {} for {} failed: {}", what, formatSize(bytes),
                                errorCodeText(error)));
  };
  // Reserve the pages now, so a full memory fails here and not as SIGBUS on first touch.
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) fail("ftruncate");
  if (const int error = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); error != 0) {
    errno = error;
    fail("reserving the memory (posix_fallocate)");
  }
  void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) fail("mmap");
  const auto base = reinterpret_cast<std::uintptr_t>(data);
  {
    std::unique_lock lock(r.mutex);
    r.byBase.emplace(base, RegisteredRange{fd, id, base, bytes});
    r.count.fetch_add(1, std::memory_order_release);
  }
  return data;
}

void freeRegistered(void* pointer) {
  if (pointer == nullptr) return;
  Registry& r = registry();
  RegisteredRange range;
  {
    std::unique_lock lock(r.mutex);
    const auto it = r.byBase.find(reinterpret_cast<std::uintptr_t>(pointer));
    if (it == r.byBase.end())
      throw OptionError(fmt::format(
          "chorus::memFree: {} is not memory from chorus::memAlloc (or was freed already); "
          "pass exactly the pointer memAlloc returned, once",
          pointer));
    range = it->second;
    r.byBase.erase(it);
    r.count.fetch_sub(1, std::memory_order_release);
  }
  ::munmap(pointer, range.bytes);
  ::close(range.fd);
}

std::optional<RegisteredRange> findRegistered(std::uint64_t address, std::uint64_t bytes) {
  Registry& r = registry();
  if (r.count.load(std::memory_order_acquire) == 0) return std::nullopt;
  std::shared_lock lock(r.mutex);
  auto it = r.byBase.upper_bound(address);
  if (it == r.byBase.begin()) return std::nullopt;
  --it;
  const RegisteredRange& range = it->second;
  if (address + bytes > range.base + range.bytes) return std::nullopt;
  return range;
}

RegisteredBuffer::RegisteredBuffer(RegisteredBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      capacity_(std::exchange(other.capacity_, 0)),
      registered_(other.registered_) {}

RegisteredBuffer& RegisteredBuffer::operator=(RegisteredBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
    registered_ = other.registered_;
  }
  return *this;
}

RegisteredBuffer::~RegisteredBuffer() {
  release();
}

void RegisteredBuffer::release() {
  if (data_ == nullptr) return;
  if (registered_)
    freeRegistered(data_);
  else
    std::free(data_);
  data_ = nullptr;
  capacity_ = 0;
}

std::uint8_t* RegisteredBuffer::reserve(std::size_t bytes) {
  if (bytes <= capacity_) return data_;  // nullptr for 0 bytes before the first growth
  release();
  // Powers of two from 64 KiB, so a growing workload makes few allocations.
  std::size_t capacity = std::size_t{64} << 10;
  while (capacity < bytes)
    capacity *= 2;
  try {
    data_ = static_cast<std::uint8_t*>(allocateRegistered(capacity));
    registered_ = true;
  } catch (const CommError&) {  // e.g. out of descriptors: plain memory still works
    data_ = static_cast<std::uint8_t*>(std::aligned_alloc(4096, capacity));
    if (data_ == nullptr) throw std::bad_alloc();
    registered_ = false;
  }
  capacity_ = capacity;
  return data_;
}

PeerMapping::~PeerMapping() {
  ::munmap(const_cast<std::uint8_t*>(data_), bytes_);
}

namespace {

// Opens and maps `pid`'s allocation, or nullptr (see mapPeerAllocation).
// Whether `pid`'s descriptor range.fd still is allocation range.id: its link reads
// "/memfd:chorus-mem-<id> (deleted)".
bool stillAllocated(int pid, const RegisteredRange& range) {
  const std::string path = fmt::format("/proc/{}/fd/{}", pid, range.fd);
  char link[256];
  const ssize_t length = ::readlink(path.c_str(), link, sizeof link - 1);
  if (length <= 0) return false;
  const std::string expected = "/memfd:" + memfdName(range.id) + " ";
  return std::string_view(link, static_cast<std::size_t>(length)).substr(0, expected.size()) ==
         expected;
}

std::shared_ptr<const PeerMapping> openPeerAllocation(int pid, const RegisteredRange& range) {
  if (!stillAllocated(pid, range)) return nullptr;
  const std::string path = fmt::format("/proc/{}/fd/{}", pid, range.fd);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat info {};
  void* data = MAP_FAILED;
  if (::fstat(fd, &info) == 0 && static_cast<std::uint64_t>(info.st_size) == range.bytes)
    data = ::mmap(nullptr, range.bytes, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (data == MAP_FAILED) return nullptr;
  return std::make_shared<const PeerMapping>(static_cast<const std::uint8_t*>(data),
                                             static_cast<std::size_t>(range.bytes));
}

}  // namespace

std::shared_ptr<const PeerMapping> mapPeerAllocation(int pid, const RegisteredRange& range) {
  PeerCache& cache = peerCache();
  std::lock_guard lock(cache.mutex);
  for (auto it = cache.entries.begin(); it != cache.entries.end(); ++it)
    if (it->pid == pid && it->range.id == range.id) {
      cache.entries.splice(cache.entries.end(), cache.entries, it);  // most recently used
      return it->mapping;
    }
  // A new allocation: first drop the mappings of allocations their owners have freed (or
  // whose owners exited), which would otherwise keep that memory alive.
  std::erase_if(cache.entries, [](const PeerCache::Entry& entry) {
    return entry.mapping != nullptr && !stillAllocated(entry.pid, entry.range);
  });
  // A failure is cached too: it would fail again, and costs syscalls on every message.
  auto mapping = openPeerAllocation(pid, range);
  if (cache.entries.size() == kMappedPeerAllocations) cache.entries.pop_front();
  cache.entries.push_back({pid, range, mapping});
  return mapping;
}

}  // namespace chorus::transport

namespace chorus::transport {

namespace {
std::atomic<std::uint64_t> mappedReadCount{0};
}

void countMappedRead() {
  mappedReadCount.fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t mappedReads() {
  return mappedReadCount.load(std::memory_order_relaxed);
}

}  // namespace chorus::transport
