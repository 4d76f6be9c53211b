// shm FIFO microbenchmark: two processes (fork) joined by connectShm over a FileStore.
// Measures the ping-pong latency of an 8-byte message (half a round trip) and the
// one-directional streaming bandwidth of 64 KiB .. 64 MiB through one FIFO of 8 x 256 KiB
// slots, with the copy into each slot (sender) and out of it (receiver) included, as the
// interpreter does. A single-thread memcpy of the same size is printed for reference. Waiting
// spins 2000 times before each yield; with fewer cores than busy processes, expect noise.
//
// Run: build/bench/bench_shm_fifo [--quick] [--pin] [--slot-bytes 256K]
//   --pin pins rank r to CPU r. Output (numbers vary with the machine and its load):
//   shm FIFO benchmark: 2 processes, 8 slots of 256 KiB
//   8-byte ping-pong: median 0.30 us one way (min 0.24 us) over 50 batches of 2000 round trips
//   size        reps      time/rep      GB/s  memcpy GB/s
//   64 KiB       200       38.2 us      1.72        38.48
//   ...
//   64 MiB         4    37227.3 us      1.80         5.80
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "support/size.h"
#include "transport/file_store.h"
#include "transport/shm/shm_transport.h"

namespace {

using Clock = std::chrono::steady_clock;
using chorus::transport::ConnectionSet;
using chorus::transport::Fifo;
using chorus::transport::RecvSlot;

constexpr int kSlots = 8;

// Spins, then yields so two ranks on busy cores still make progress; every 1024 waits it
// checks that the peer is alive and the wait is not past 30 s, so the benchmark never hangs.
class Backoff {
 public:
  explicit Backoff(const ConnectionSet& connections) : connections_(connections) {}
  void idle() {
    ++spins_;
    if (spins_ > 2000) std::this_thread::yield();
    if ((spins_ & 1023) != 0) return;
    if (const std::string reason = connections_.abortReason(); !reason.empty())
      throw std::runtime_error("the peer failed: " + reason);
    if (Clock::now() > deadline_) throw std::runtime_error("no progress for 30 s");
  }

 private:
  const ConnectionSet& connections_;
  long spins_ = 0;
  Clock::time_point deadline_ = Clock::now() + std::chrono::seconds(30);
};

std::uint8_t* sendSlot(const ConnectionSet& c, Fifo& fifo) {
  Backoff backoff(c);
  std::uint8_t* slot;
  while ((slot = fifo.trySendSlot()) == nullptr)
    backoff.idle();
  return slot;
}

RecvSlot recvSlot(const ConnectionSet& c, Fifo& fifo) {
  Backoff backoff(c);
  RecvSlot slot;
  while (!fifo.tryRecvSlot(&slot))
    backoff.idle();
  return slot;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Rank 0 drives and prints; rank 1 echoes and drains.
void runRank(ConnectionSet& c, bool quick, std::size_t slotBytes) {
  const int rank = c.rank();
  const int peer = 1 - rank;
  Fifo& out = c.sendFifo(peer, 0);
  Fifo& in = c.recvFifo(peer, 0);
  Fifo& bulkOut = c.sendFifo(peer, 1);
  Fifo& bulkIn = c.recvFifo(peer, 1);

  // ---- latency -------------------------------------------------------------------------------
  const int batches = quick ? 10 : 50;
  const int roundTrips = 2000;
  std::vector<double> oneWay;
  for (int batch = -1; batch < batches; ++batch) {  // batch -1 warms up
    const auto start = Clock::now();
    for (int i = 0; i < roundTrips; ++i) {
      if (rank == 0) {
        std::uint64_t value = static_cast<std::uint64_t>(i);
        std::memcpy(sendSlot(c, out), &value, 8);
        out.commitSend(8, 1);
        recvSlot(c, in);
        in.releaseRecv();
      } else {
        const RecvSlot got = recvSlot(c, in);
        std::uint64_t value;
        std::memcpy(&value, got.data, 8);
        in.releaseRecv();
        std::memcpy(sendSlot(c, out), &value, 8);
        out.commitSend(8, 1);
      }
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (batch >= 0) oneWay.push_back(seconds / roundTrips / 2 * 1e6);
  }
  if (rank == 0)
    fmt::print(
        "8-byte ping-pong: median {:.2f} us one way (min {:.2f} us) over {} batches of {} "
        "round trips\n",
        median(oneWay), *std::min_element(oneWay.begin(), oneWay.end()), batches, roundTrips);

  // ---- bandwidth -----------------------------------------------------------------------------
  if (rank == 0)
    fmt::print("{:<10}{:>6}{:>14}{:>10}{:>13}\n", "size", "reps", "time/rep", "GB/s",
               "memcpy GB/s");
  const std::size_t maxBytes = quick ? (4u << 20) : (64u << 20);
  std::vector<std::uint8_t> buffer(maxBytes, static_cast<std::uint8_t>(rank + 1));
  std::vector<std::uint8_t> reference(maxBytes, 7);
  for (std::size_t bytes = 64 << 10; bytes <= maxBytes; bytes *= 4) {
    const int reps = static_cast<int>(std::clamp<std::size_t>((256u << 20) / bytes, 3, 200));
    std::vector<double> times;
    for (int rep = -1; rep < reps; ++rep) {
      const auto start = Clock::now();
      if (rank == 0) {
        for (std::size_t at = 0; at < bytes; at += slotBytes) {
          const std::size_t n = std::min(slotBytes, bytes - at);
          std::memcpy(sendSlot(c, bulkOut), buffer.data() + at, n);
          bulkOut.commitSend(n, 2);
        }
        recvSlot(c, in);  // the receiver's acknowledgement: everything arrived
        in.releaseRecv();
      } else {
        for (std::size_t at = 0; at < bytes;) {
          const RecvSlot got = recvSlot(c, bulkIn);
          std::memcpy(buffer.data() + at, got.data, got.bytes);
          at += got.bytes;
          bulkIn.releaseRecv();
        }
        sendSlot(c, out);
        out.commitSend(0, 3);
      }
      if (rep >= 0) times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    if (rank != 0) continue;
    std::vector<double> copies;
    for (int rep = 0; rep < std::min(reps, 20); ++rep) {
      const auto start = Clock::now();
      std::memcpy(reference.data(), buffer.data(), bytes);
      copies.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    const double t = median(times);
    fmt::print("{:<10}{:>6}{:>11.1f} us{:>10.2f}{:>13.2f}\n", chorus::formatSize(bytes), reps,
               t * 1e6, static_cast<double>(bytes) / t / 1e9,
               static_cast<double>(bytes) / median(copies) / 1e9);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, pin = false;
  std::size_t slotBytes = 256 << 10;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--pin") {
      pin = true;
    } else if (arg == "--slot-bytes" && i + 1 < argc) {
      try {
        slotBytes = chorus::parseSize(argv[++i]);
      } catch (const std::exception& e) {
        fmt::print(stderr, "{}\n", e.what());
        return 2;
      }
    } else {
      fmt::print(stderr, "usage: {} [--quick] [--pin] [--slot-bytes SIZE]\n", argv[0]);
      return 2;
    }
  }
  char pattern[] = "/tmp/chorus-shm-bench-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string directory = pattern;
  chorus::transport::ShmOptions options;
  options.fifo = {kSlots, slotBytes};
  options.namePrefix = fmt::format("chorus-bench-{}-{:08x}", ::getpid(), std::random_device()());
  options.timeout = std::chrono::seconds(30);
  fmt::print("shm FIFO benchmark: 2 processes, {} slots of {}\n", kSlots,
             chorus::formatSize(slotBytes));
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) {
    std::perror("fork");
    return 1;
  }
  const int rank = child == 0 ? 1 : 0;
  if (pin) {
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(rank, &cpus);
    ::sched_setaffinity(0, sizeof(cpus), &cpus);
  }
  int code = 0;
  try {
    chorus::transport::FileStore store(directory);
    auto connections = chorus::transport::connectShm(store, rank, 2, options);
    runRank(*connections, quick, slotBytes);
  } catch (const std::exception& e) {
    fmt::print(stderr, "rank {}: {}\n", rank, e.what());
    code = 1;
  }
  if (child == 0) ::_exit(code);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::filesystem::remove_all(directory);
  return code != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ? 1 : 0;
}
