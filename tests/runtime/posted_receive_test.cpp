// When the interpreter posts a receive's destination (Fifo::postRecv): before its first poll of
// the FIFO, so a message already waiting in the transport (tcp: in the socket) lands in the
// user's buffer, not in a slot and then a copy. Checked over thread FIFOs wrapped to take posts
// the way tcp's do: the first tryRecvSlot() that sees a message "reads" it, into its post if
// one was made by then.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "compile_for_test.h"
#include "forwarding_connections.h"
#include "runtime/interpreter.h"
#include "runtime/run_check.h"
#include "transport/remote_message.h"
#include "transport/thread/thread_group.h"

namespace chorus {
namespace {

using namespace std::chrono_literals;

// A receive FIFO over `inner` that honours posts as tcp's does (fifo.h: postRecv): a message
// the receiver first sees after a matching post was made for it is copied into the posted
// region and returned `delivered`; one seen before lands in its slot.
class PostingFifo final : public transport::Fifo {
 public:
  explicit PostingFifo(transport::Fifo& inner) : inner_(inner) {}

  std::uint8_t* trySendSlot() override { return inner_.trySendSlot(); }
  void commitSend(std::size_t bytes, std::uint64_t tag) override { inner_.commitSend(bytes, tag); }
  std::size_t slotBytes() const override { return inner_.slotBytes(); }
  int slotCount() const override { return inner_.slotCount(); }

  bool tryRecvSlot(transport::RecvSlot* slot) override {
    if (!inner_.tryRecvSlot(slot)) return false;
    if (!seen_) {  // the transport reads this message now
      seen_ = true;
      const auto post = posts_.find(received_);
      delivered_ = post != posts_.end() && post->second.tag == slot->tag &&
                   post->second.region.bytes() == slot->bytes;
      if (delivered_) transport::copyIntoRegion(post->second.region, 0, slot->data, slot->bytes);
      ++(delivered_ ? deliveredCount : slottedCount);
    }
    if (delivered_) {
      slot->delivered = true;
      slot->data = nullptr;
    }
    return true;
  }
  void releaseRecv() override {
    posts_.erase(received_++);
    seen_ = false;
    delivered_ = false;
    inner_.releaseRecv();
  }

  bool acceptsPost(std::size_t bytes) const override { return bytes <= slotBytes(); }
  bool postRecv(const transport::RemoteRegion& region, std::uint64_t tag,
                std::size_t ahead) override {
    const std::uint64_t sequence = received_ + ahead;
    if (sequence == received_ && seen_) return true;  // already read: the post comes too late
    posts_[sequence] = {region, tag};
    return true;
  }
  void unpost() override { posts_.clear(); }

  int deliveredCount = 0;
  int slottedCount = 0;

 private:
  struct Post {
    transport::RemoteRegion region;
    std::uint64_t tag = 0;
  };
  transport::Fifo& inner_;
  std::map<std::uint64_t, Post> posts_;  // by message sequence
  std::uint64_t received_ = 0;           // messages released so far
  bool seen_ = false;                    // the next message was read already
  bool delivered_ = false;               // ... into its post
};

// A thread rank whose receive FIFOs take posts (PostingFifo).
class PostingRank final : public testing_support::ForwardingConnections {
 public:
  using ForwardingConnections::ForwardingConnections;
  transport::Fifo& recvFifo(int peer, int channel) override {
    auto& fifo = recv_[{peer, channel}];
    if (!fifo) fifo = std::make_unique<PostingFifo>(ForwardingConnections::recvFifo(peer, channel));
    return *fifo;
  }

  int delivered() const { return total(&PostingFifo::deliveredCount); }
  int slotted() const { return total(&PostingFifo::slottedCount); }

 private:
  int total(int PostingFifo::*count) const {
    int n = 0;
    for (const auto& [key, fifo] : recv_)
      n += (*fifo).*count;
    return n;
  }

  std::map<std::pair<int, int>, std::unique_ptr<PostingFifo>> recv_;
};

// Rank 1 starts its call only once rank 0 has sent everything it can, so every message rank 1
// receives is waiting before rank 1 reaches its receive step. Each still lands in rank 1's
// output (delivered), out of place (where later tiles are posted ahead too) and in place (one
// tile at a time), and the output is exact.
TEST(PostedReceives, AMessageAlreadyWaitingLandsInItsDestination) {
  const auto a = testing_support::compileForTest("allgather.direct", 2);
  runtime::RunOptions options;
  options.count = (64 << 10) / 4;  // float32: a 64 KiB block per rank
  const std::size_t blockBytes = options.count * 4;
  for (const bool inPlace : {false, true}) {
    SCOPED_TRACE(inPlace ? "in place" : "out of place");
    transport::FifoOptions fifo;
    fifo.slotBytes = 16 << 10;  // a block is 4 tiles, within the 8 slots
    transport::ThreadGroup group(2, fifo);
    PostingRank rank1(group.rank(1));
    runtime::RunReport report;
    std::optional<std::string> failures[2];
    auto run = [&](int rank, transport::ConnectionSet& connections) {
      try {
        runtime::RankBuffers buffers(a, rank, options);
        buffers.reset();
        auto* output = static_cast<std::uint8_t*>(buffers.output());
        const void* input = buffers.input();
        if (inPlace) {  // the rank's block of the output is its input
          std::memcpy(output + rank * blockBytes, input, blockBytes);
          input = output + rank * blockBytes;
        }
        if (rank == 1) std::this_thread::sleep_for(100ms);
        const auto id = runtime::identifyCall(a, options, 0);
        runtime::ExecOptions exec;
        exec.timeout = 30s;
        exec.callTag = id.tag;
        exec.collectiveLabel = id.description.c_str();
        runtime::executeRank(a, rank, {input, output, options.count}, connections, exec);
        if (rank == 1) runtime::checkRankOutput(a, rank, options, output, &report);
      } catch (const std::exception& e) {
        failures[rank] = e.what();
      }
    };
    std::thread sender([&] { run(0, group.rank(0)); });
    run(1, rank1);
    sender.join();
    for (const auto& failure : failures)
      ASSERT_FALSE(failure) << *failure;
    EXPECT_EQ(report.wrongElements, 0u) << report.firstWrong;
    EXPECT_EQ(report.checkedElements, 2 * options.count);
    EXPECT_EQ(rank1.delivered(), 4) << "messages that landed in the output";
    EXPECT_EQ(rank1.slotted(), 0) << "messages read into a slot before their post";
  }
}

}  // namespace
}  // namespace chorus
