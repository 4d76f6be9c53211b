#include "device/host_group.h"

#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "device/kernel_plan.h"
#include "support/error.h"
#include "transport/in_memory_store.h"

namespace chorus::device {

namespace {

// Runs `body(r)` for every rank on a thread of its own; rethrows the error of rank
// `firstFailed` (its root cause) if it threw, else the first error.
template <class Body>
void onEveryRank(int n, Body body, const std::function<int()>& firstFailed) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  for (std::thread& t : threads)
    t.join();
  const int first = firstFailed();
  if (first >= 0 && first < n && errors[static_cast<std::size_t>(first)])
    std::rethrow_exception(errors[static_cast<std::size_t>(first)]);
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

struct HostKernelGroup::State {
  ir::Algorithm algorithm;
  std::vector<std::unique_ptr<HostKernelRank>> ranks;
  bool failed = false;
};

HostKernelGroup::HostKernelGroup(const ir::Algorithm& algorithm, const HostGroupOptions& options)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.algorithm = algorithm;
  const int n = algorithm.nranks;
  // Plan errors first, from this thread: a rank that failed while making its mailbox would
  // leave the others waiting for it until the set-up timeout.
  wireGroup(algorithm);
  for (int r = 0; r < n; ++r)
    flattenRank(algorithm, r);
  s.ranks.resize(static_cast<std::size_t>(n));
  // Each rank waits for its peers' mailboxes, so they are made at once.
  transport::InMemoryStore store;
  onEveryRank(
      n,
      [&](int r) {
        s.ranks[static_cast<std::size_t>(r)] = std::make_unique<HostKernelRank>(
            algorithm, r, store, "group", MailboxSharing::threads, options);
      },
      [] { return -1; });
}

HostKernelGroup::~HostKernelGroup() = default;

void HostKernelGroup::run(const std::vector<runtime::CollectiveArgs>& args,
                          std::chrono::milliseconds timeout) {
  State& s = *state_;
  const int n = static_cast<int>(s.ranks.size());
  if (static_cast<int>(args.size()) != n)
    throw OptionError(fmt::format("'{}' runs on {} ranks but {} ranks' buffers were given",
                                  s.algorithm.name, n, args.size()));
  if (s.failed)
    throw CommError(
        fmt::format("'{}' on the device interpreter (host build): an earlier call "
                    "failed; make a new group",
                    s.algorithm.name));
  // The root cause is the error of a rank whose own wait failed, not of one that stopped for it.
  try {
    onEveryRank(
        n,
        [&](int r) {
          s.ranks[static_cast<std::size_t>(r)]->run(args[static_cast<std::size_t>(r)], timeout);
        },
        [&] {
          for (int r = 0; r < n; ++r) {
            const KernelError e = s.ranks[static_cast<std::size_t>(r)]->lastError();
            if (e != KernelError::none && e != KernelError::aborted) return r;
          }
          return -1;
        });
  } catch (...) {
    s.failed = true;
    throw;
  }
}

runtime::RunReport runKernelsOnHost(const ir::Algorithm& algorithm,
                                    const runtime::RunOptions& options,
                                    const HostGroupOptions& group) {
  const int n = algorithm.nranks;
  if (!options.givenInputs.empty() && static_cast<int>(options.givenInputs.size()) != n)
    throw OptionError(fmt::format("'{}' runs on {} ranks but {} input buffers were given",
                                  algorithm.name, n, options.givenInputs.size()));
  HostKernelGroup kernels(algorithm, group);
  std::vector<std::unique_ptr<runtime::RankBuffers>> buffers;
  for (int r = 0; r < n; ++r)
    buffers.push_back(std::make_unique<runtime::RankBuffers>(algorithm, r, options));
  runtime::RunReport report;
  for (int iteration = 0; iteration < std::max(1, options.iterations); ++iteration) {
    std::vector<runtime::CollectiveArgs> args;
    for (auto& b : buffers) {
      b->reset();
      args.push_back({b->input(), b->output(), options.count, options.type, options.op});
    }
    const auto start = std::chrono::steady_clock::now();
    kernels.run(args, options.timeout);
    report.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  for (int r = 0; r < n; ++r) {
    runtime::checkRankOutput(algorithm, r, options, buffers[static_cast<std::size_t>(r)]->output(),
                             &report);
    runtime::checkRankInput(algorithm, r, options, buffers[static_cast<std::size_t>(r)]->input(),
                            &report);
  }
  return report;
}

}  // namespace chorus::device
