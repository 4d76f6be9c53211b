// The simulators' event queue (src/sim/event_queue.h) against std::priority_queue on (time,
// push number): the same events pop in the same order, with many events sharing a time (as in a
// simulation of symmetric ranks), events posted for the current time while it drains, times
// spread over more than the queue's recent buckets, and -0.0 beside 0.0.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <queue>
#include <random>
#include <tuple>
#include <vector>

#include "sim/event_queue.h"

namespace chorus::sim {
namespace {

using QueuedEvent = TimedEvent<std::uint8_t>;

struct ReferenceEvent {
  double time = 0;
  std::uint64_t seq = 0;
  int id = 0;
  bool operator>(const ReferenceEvent& other) const {
    return std::tie(time, seq) > std::tie(other.time, other.seq);
  }
};

// Pushes and pops at random (each pop's time becomes "now"; pushes land at now plus one of
// `distinctDelays` delays, 0 among them) and checks both queues pop the same ids.
void expectSameOrder(std::uint64_t seed, int distinctDelays, int operations) {
  SCOPED_TRACE(testing::Message() << "seed " << seed << ", " << distinctDelays << " delays");
  std::mt19937_64 rng(seed);
  std::vector<double> delays{0.0};
  for (int i = 1; i < distinctDelays; ++i)
    delays.push_back(std::uniform_real_distribution<double>(0, 1e-3)(rng));
  EventQueue<QueuedEvent> queue;
  std::priority_queue<ReferenceEvent, std::vector<ReferenceEvent>, std::greater<>> reference;
  std::uint64_t seq = 0;
  int id = 0;
  double now = 0;
  for (int op = 0; op < operations; ++op) {
    if (!reference.empty() && rng() % 2 == 0) {
      const QueuedEvent got = queue.pop();
      const ReferenceEvent want = reference.top();
      reference.pop();
      ASSERT_EQ(got.id, want.id) << "pop " << op;
      ASSERT_EQ(got.time, want.time);
      now = got.time;
    } else {
      // -0.0 is the same time as 0.0: ties go by push order.
      const double time = now == 0 && rng() % 4 == 0 ? -0.0 : now + delays[rng() % delays.size()];
      queue.push(QueuedEvent{time, 0, id, 0});
      reference.push(ReferenceEvent{time, seq++, id});
      ++id;
    }
    ASSERT_EQ(queue.size(), reference.size());
  }
  while (!reference.empty()) {
    ASSERT_EQ(queue.pop().id, reference.top().id);
    reference.pop();
  }
  EXPECT_TRUE(queue.empty());
}

TEST(EventQueue, PopsInTimeThenPushOrder) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed)
    for (int delays : {1, 2, 5, 50, 100000})
      expectSameOrder(seed, delays, 20000);
}

// A copy goes on independently of the original (a simulation copies itself for a cut call).
TEST(EventQueue, CopiesArePlainValues) {
  EventQueue<QueuedEvent> queue;
  for (int i = 0; i < 6; ++i)
    queue.push(QueuedEvent{static_cast<double>(i % 3), 0, i, 0});
  EventQueue<QueuedEvent> copy = queue;
  EXPECT_EQ(queue.pop().id, 0);
  EXPECT_EQ(queue.pop().id, 3);
  copy.push(QueuedEvent{0.0, 0, 6, 0});
  std::vector<int> ids;
  while (!copy.empty())
    ids.push_back(copy.pop().id);
  EXPECT_EQ(ids, (std::vector<int>{0, 3, 6, 1, 4, 2, 5}));
  EXPECT_EQ(queue.size(), 4u);
}

}  // namespace
}  // namespace chorus::sim
