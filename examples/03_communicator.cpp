// Lesson 3: the communicator API. Four ranks as threads of this process (initAll), one
// AllReduce and one ring of send/recv issued from a single thread inside groupStart()/groupEnd(),
// results checked, and which plan ran.
//
// Run:      build/examples/example_03_communicator
// Expected: "allreduce over 4 ranks: every element is 10 (1+2+3+4): ok", the plan that ran
//           (e.g. "plan allreduce.allpairs (built-in default: < 256 KiB)"), then
//           "ring send/recv: every rank holds its left neighbour's rank: ok". Exits 0.
//
//    AllReduce (sum):   r0:[1 1 ..]  r1:[2 2 ..]  r2:[3 3 ..]  r3:[4 4 ..]
//                                   \      |       |      /
//                       every rank:      [10 10 10 ...]
//    ring send/recv:    r0 --> r1 --> r2 --> r3 --> r0   (each sends its rank to the next)
#include <cstdio>
#include <vector>

#include "chorus/chorus.h"

int main() {
  constexpr int kRanks = 4;
  constexpr std::size_t kCount = 1000;
  std::vector<chorus::Communicator> comms = chorus::Communicator::initAll(kRanks);

  // Each rank contributes rank+1 in every element; the sum is 1+2+3+4 = 10 everywhere.
  std::vector<std::vector<float>> data(kRanks);
  for (int r = 0; r < kRanks; ++r)
    data[r].assign(kCount, static_cast<float>(r + 1));
  // One thread drives all ranks, so the calls must be grouped: groupEnd() runs them together.
  chorus::groupStart();
  for (int r = 0; r < kRanks; ++r)
    comms[r].allReduce(data[r].data(), data[r].data(), kCount, chorus::DataType::float32,
                       chorus::ReduceOp::sum);
  chorus::groupEnd();
  bool ok = true;
  for (const auto& rank : data)
    for (float x : rank)
      ok = ok && x == 10.0f;
  std::printf("allreduce over %d ranks: every element is 10 (1+2+3+4): %s\n", kRanks,
              ok ? "ok" : "WRONG");
  const chorus::PlanInfo plan = comms[0].lastPlan();
  std::printf("plan %s (%s)\n", plan.algorithm.c_str(), plan.source.c_str());

  // A ring of point-to-point messages: inside a group the order of send and recv is free.
  std::vector<int> sent(kRanks), received(kRanks, -1);
  chorus::groupStart();
  for (int r = 0; r < kRanks; ++r) {
    sent[r] = r;
    comms[r].recv(&received[r], 1, chorus::DataType::int32, (r + kRanks - 1) % kRanks);
    comms[r].send(&sent[r], 1, chorus::DataType::int32, (r + 1) % kRanks);
  }
  chorus::groupEnd();
  bool ringOk = true;
  for (int r = 0; r < kRanks; ++r)
    ringOk = ringOk && received[r] == (r + kRanks - 1) % kRanks;
  std::printf("ring send/recv: every rank holds its left neighbour's rank: %s\n",
              ringOk ? "ok" : "WRONG");
  return ok && ringOk ? 0 : 1;
}
