// OrderedExecutor: order, errors, deferred point-to-point runs grouped together, waits that run
// tasks inline, timeouts, drain; and two thread ranks whose large isend/irecv cannot deadlock.
#include "api/ordered_executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "api/group.h"
#include "chorus/chorus.h"

namespace chorus::api {
namespace {

using namespace std::chrono_literals;
using Kind = OrderedExecutor::Kind;

// Records the order tasks ran and settled in, and whether each ran inside a group.
struct Journal {
  std::mutex mutex;
  std::vector<int> ran;
  std::vector<int> settled;
  std::vector<bool> inGroup;
  std::vector<std::string> errors;

  OrderedExecutor::Task task(int id, Kind kind, std::function<void()> body = {}) {
    OrderedExecutor::Task task;
    task.kind = kind;
    task.run = [this, id, body] {
      {
        std::lock_guard lock(mutex);
        ran.push_back(id);
        inGroup.push_back(groupActive());
      }
      if (body) body();
    };
    task.settle = [this, id](std::exception_ptr error) {
      std::lock_guard lock(mutex);
      settled.push_back(id);
      if (!error) return;
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        errors.push_back(e.what());
      }
    };
    return task;
  }
  std::vector<int> ranSoFar() {
    std::lock_guard lock(mutex);
    return ran;
  }
};

TEST(OrderedExecutor, CollectivesRunOnceEachInSubmissionOrder) {
  Journal journal;
  {
    OrderedExecutor executor;
    OrderedExecutor::Ticket last = 0;
    for (int i = 0; i < 50; ++i)
      last = executor.submit(journal.task(i, Kind::collective));
    EXPECT_TRUE(executor.wait(last));
  }
  std::vector<int> expected(50);
  for (int i = 0; i < 50; ++i)
    expected[i] = i;
  EXPECT_EQ(journal.ran, expected);
  EXPECT_EQ(journal.settled, expected);
}

TEST(OrderedExecutor, ATaskErrorReachesOnlyItsOwnSettle) {
  Journal journal;
  OrderedExecutor executor;
  executor.submit(
      journal.task(0, Kind::collective, [] { throw std::runtime_error("peer 1 died"); }));
  const auto ticket = executor.submit(journal.task(1, Kind::collective));
  ASSERT_TRUE(executor.wait(ticket));
  ASSERT_EQ(journal.errors.size(), 1u);
  EXPECT_EQ(journal.errors[0], "peer 1 died");
  EXPECT_EQ(journal.settled, (std::vector<int>{0, 1}));
}

TEST(OrderedExecutor, PointToPointWaitsUntilNeededThenRunsAsOneGroup) {
  Journal journal;
  OrderedExecutor executor;
  const auto send = executor.submit(journal.task(0, Kind::pointToPoint));
  executor.submit(journal.task(1, Kind::pointToPoint));
  std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(journal.ranSoFar().empty()) << "a point-to-point task ran before anyone needed it";
  // Waiting on the first releases the whole run of consecutive point-to-point tasks.
  ASSERT_TRUE(executor.wait(send));
  executor.drain();
  EXPECT_EQ(journal.ran, (std::vector<int>{0, 1}));
  EXPECT_EQ(journal.inGroup, (std::vector<bool>{true, true}));
}

TEST(OrderedExecutor, ACollectiveReleasesThePointToPointTasksBeforeIt) {
  Journal journal;
  OrderedExecutor executor;
  executor.submit(journal.task(0, Kind::pointToPoint));
  const auto collective = executor.submit(journal.task(1, Kind::collective));
  // The worker runs both without anyone waiting.
  for (int i = 0; i < 500 && journal.ranSoFar().size() < 2; ++i)
    std::this_thread::sleep_for(5ms);
  EXPECT_EQ(journal.ranSoFar(), (std::vector<int>{0, 1}));
  EXPECT_TRUE(executor.poll(collective));
  EXPECT_EQ(journal.inGroup, (std::vector<bool>{true, false}));
}

TEST(OrderedExecutor, PollReleasesDeferredTasks) {
  Journal journal;
  OrderedExecutor executor;
  const auto recv = executor.submit(journal.task(0, Kind::pointToPoint));
  bool settled = executor.poll(recv);
  for (int i = 0; i < 500 && !settled; ++i) {
    std::this_thread::sleep_for(5ms);
    settled = executor.poll(recv);
  }
  EXPECT_TRUE(settled);
}

TEST(OrderedExecutor, WaitWithATimeoutReturnsFalseWhileTheTaskIsBlocked) {
  Journal journal;
  std::promise<void> unblock;
  std::shared_future<void> unblocked = unblock.get_future().share();
  OrderedExecutor executor;
  const auto blocked =
      executor.submit(journal.task(0, Kind::collective, [unblocked] { unblocked.wait(); }));
  const auto next = executor.submit(journal.task(1, Kind::collective));
  EXPECT_FALSE(executor.wait(next, 20ms));
  EXPECT_FALSE(executor.poll(blocked));
  unblock.set_value();
  EXPECT_TRUE(executor.wait(next, 10s));
  EXPECT_EQ(journal.settled, (std::vector<int>{0, 1}));
}

TEST(OrderedExecutor, DestructionRunsEveryQueuedTaskDeferredOnesIncluded) {
  Journal journal;
  {
    OrderedExecutor executor;
    executor.submit(journal.task(0, Kind::collective));
    executor.submit(journal.task(1, Kind::pointToPoint));
    executor.submit(journal.task(2, Kind::pointToPoint));
  }
  EXPECT_EQ(journal.settled, (std::vector<int>{0, 1, 2}));
}

TEST(OrderedExecutor, ManyThreadsWaitingOnInterleavedTicketsAllSettleInOrder) {
  Journal journal;
  OrderedExecutor executor;
  std::vector<OrderedExecutor::Ticket> tickets;
  for (int i = 0; i < 200; ++i)
    tickets.push_back(
        executor.submit(journal.task(i, i % 3 == 0 ? Kind::pointToPoint : Kind::collective)));
  std::vector<std::thread> waiters;
  for (int t = 0; t < 4; ++t)
    waiters.emplace_back([&, t] {
      for (std::size_t i = t; i < tickets.size(); i += 4)
        EXPECT_TRUE(executor.wait(tickets[i]));
    });
  for (auto& waiter : waiters)
    waiter.join();
  std::vector<int> expected(200);
  for (int i = 0; i < 200; ++i)
    expected[i] = i;
  EXPECT_EQ(journal.settled, expected);
}

// Both ranks queue a send larger than every FIFO between them, then the matching receive, and
// only then wait: without grouping, both sends would block for ever.
TEST(OrderedExecutor, LargeIsendIrecvPairsOnTwoRanksDoNotDeadlock) {
  CommConfig config;
  config.timeout = std::chrono::seconds(60);
  auto comms = Communicator::initAll(2, config);
  constexpr std::size_t kCount = std::size_t{4} << 20;  // 16 MiB of int32, past 8 x 256 KiB FIFOs
  std::vector<std::vector<std::int32_t>> sendBufs(2), recvBufs(2);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    sendBufs[rank].assign(kCount, rank + 1);
    recvBufs[rank].assign(kCount, 0);
    ranks.emplace_back([&, rank] {
      OrderedExecutor executor;
      Communicator& comm = comms[rank];
      const int peer = 1 - rank;
      std::vector<std::exception_ptr> errors(2);
      OrderedExecutor::Task send;
      send.kind = Kind::pointToPoint;
      send.run = [&] { comm.send(sendBufs[rank].data(), kCount, DataType::int32, peer); };
      send.settle = [&](std::exception_ptr error) { errors[0] = error; };
      OrderedExecutor::Task recv;
      recv.kind = Kind::pointToPoint;
      recv.run = [&] { comm.recv(recvBufs[rank].data(), kCount, DataType::int32, peer); };
      recv.settle = [&](std::exception_ptr error) { errors[1] = error; };
      const auto sendTicket = executor.submit(std::move(send));
      const auto recvTicket = executor.submit(std::move(recv));
      EXPECT_TRUE(executor.wait(sendTicket));
      EXPECT_TRUE(executor.wait(recvTicket));
      EXPECT_FALSE(errors[0]);
      EXPECT_FALSE(errors[1]);
    });
  }
  for (auto& rank : ranks)
    rank.join();
  EXPECT_EQ(recvBufs[0], std::vector<std::int32_t>(kCount, 2));
  EXPECT_EQ(recvBufs[1], std::vector<std::int32_t>(kCount, 1));
}

}  // namespace
}  // namespace chorus::api
