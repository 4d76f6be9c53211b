// The communicator's internals (api layer): rank, size, connections, executor, plan provider,
// sequence numbers and failed state, and the collective and point-to-point call paths shared by
// the public class (communicator.cpp), groups (group.cpp) and the C ABI (c_api.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "api/comm_config.h"
#include "chorus/chorus.h"
#include "runtime/executor.h"
#include "runtime/plan_provider.h"
#include "transport/connections.h"
#include "transport/store.h"

namespace chorus::api {

// One collective call as the user made it.
struct CollectiveCall {
  ir::CollectiveKind kind = ir::CollectiveKind::allreduce;
  const void* sendbuf = nullptr;
  void* recvbuf = nullptr;
  std::size_t count = 0;
  DataType type = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  Stream stream = nullptr;  // only for an executor that takesStreams()
};

// What every call of one shape (collective, count, type, op, root, in-place) resolves to: its
// plan, the text describing it and the base of its call tags. Memoized per communicator, so a
// repeated call costs no plan lookup and no formatting.
struct CallShape {
  runtime::Plan plan;
  std::string name;     // "allreduce"
  std::string details;  // "(count 1024 float32 sum, plan allreduce.ring)"
  std::uint64_t tagBase = 0;
  std::uint64_t planKey = 0;  // unique in the process: lets the executor keep plan facts
};

// A checked call with its plan, ready to run. `shape` stays valid until the communicator's next
// prepare() unless `owner` holds it, which a call queued inside a group needs (retain()).
struct PreparedCollective {
  PreparedCollective() = default;
  explicit PreparedCollective(const CollectiveCall& c) : call(c) {}
  CollectiveCall call;  // op and root normalized (sum, 0) where the collective has none
  const CallShape* shape = nullptr;
  std::shared_ptr<const CallShape> owner;
  const runtime::Plan& plan() const { return shape->plan; }
};

// What selects a CallShape: collective, in place, count, type, op, root.
struct ShapeKey {
  int kind = -1;
  bool inPlace = false;
  std::size_t count = 0;
  int type = 0;
  int op = 0;
  int root = 0;
  auto operator<=>(const ShapeKey&) const = default;
};

// One send or receive.
struct P2pCall {
  bool isSend = true;
  const void* sendbuf = nullptr;  // isSend
  void* recvbuf = nullptr;        // !isSend
  std::size_t count = 0;
  DataType type = DataType::float32;
  int peer = 0;
  Stream stream = nullptr;  // only for an executor that takesStreams()
};

// Who caused a communicator's failure, for the C ABI's result codes.
enum class FailureOrigin {
  none,
  local,   // this rank noticed it first and failed the group (mismatch, timeout, abort())
  remote,  // another rank failed or aborted the group first
  system,  // a transport or system call failed here before any rank failed the group
};

// What a communicator runs on: its connections and whatever keeps them alive.
struct TransportHandle {
  std::shared_ptr<void> owner;  // the ThreadGroup or the shm ConnectionSet (shared by ranks)
  transport::ConnectionSet* connections = nullptr;
  std::shared_ptr<transport::Store> store;  // kept for the communicator's lifetime; may be null
};

}  // namespace chorus::api

namespace chorus {

// Thread-safety: one thread at a time issues calls; abort(), asyncError(), sequence() and
// lastPlan() may be called from any thread.
struct Communicator::Impl {
  // `executor` runs this rank's calls over transport.connections.
  Impl(int rank, int size, api::TransportHandle transport,
       std::unique_ptr<runtime::Executor> executor, std::shared_ptr<runtime::PlanProvider> plans,
       api::ResolvedConfig config);
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // The Impl behind `comm`; throws OptionError if it was moved from.
  static Impl& of(const Communicator& comm);
  static Communicator wrap(std::unique_ptr<Impl> impl);

  int rank() const { return rank_; }
  int size() const { return size_; }
  const api::ResolvedConfig& config() const { return config_; }

  // Checks the arguments (OptionError) and that the communicator is healthy (CommError), then
  // selects the plan. Touches no peer, so a failure here leaves the communicator usable.
  api::PreparedCollective prepare(const api::CollectiveCall& call);
  // Selects the plan of a shape prepare() has not seen and builds its texts and tag base.
  std::shared_ptr<const api::CallShape> makeShape(const api::CollectiveCall& call, bool inPlace);
  // OptionError for an operator, root or count no call may have.
  void checkShape(const api::CollectiveCall& call) const;
  // OptionError for a null buffer the call needs.
  void checkBuffers(const api::CollectiveCall& call) const;
  // OptionError for a stream when the executor takes none; `call` names the call.
  void checkStream(Stream stream, std::string_view call) const {
    if (stream != nullptr && !executor_->takesStreams()) failStream(call);
  }
  // Makes `prepared` own its shape, so it may run after later prepare() calls (groups).
  void retain(api::PreparedCollective& prepared) const;
  // Runs a prepared call: takes the next sequence number, publishes the call and executes the
  // plan. Any failure fails the communicator and its group, then is rethrown.
  void run(const api::PreparedCollective& prepared);

  // Checks one send/recv's arguments (OptionError) without touching peers.
  void checkP2p(const api::P2pCall& call) const;
  // Runs sends and receives together until all are done (see p2p.cpp). Failures as run().
  void runP2p(std::span<const api::P2pCall> calls);

  // Throws CommError if this communicator has failed or (with `askGroup`, which costs a look at
  // the transport) its group has; `call` ("allreduce", "send") names what was about to run.
  void requireHealthy(std::string_view call, bool askGroup = true);
  // The same for a collective, named only when it fails (this runs twice per call).
  void requireHealthy(ir::CollectiveKind kind, bool askGroup) {
    if (!failed_.load(std::memory_order_acquire) && (!askGroup || !connections().aborted())) return;
    requireHealthy(ir::collectiveName(kind), askGroup);
  }
  void abort(std::string_view reason);
  std::string asyncError() const;
  // True if this communicator or its group has failed.
  bool failed() const;
  // True once a call of this rank has failed or reported the group's failure (abort() too).
  bool failureReported() const;
  api::FailureOrigin failureOrigin() const;
  std::uint64_t sequence() const { return sequence_.load(std::memory_order_relaxed); }
  PlanInfo lastPlan() const;

  // Fails the communicator and its group with `error`'s message (first failure wins) and
  // records who caused it. Returns the message.
  std::string recordFailure(const std::exception& error);

  transport::ConnectionSet& connections() { return *transport_.connections; }

 private:
  void execute(const api::PreparedCollective& prepared, std::uint64_t sequence);
  [[noreturn]] void failStream(std::string_view call) const;
  // The executor's stand-in for a buffer NCCL ignores (non-root sides).
  void* spareBuffer(std::size_t bytes);
  // Records the first failure (later ones are ignored).
  void setFailure(const std::string& message, api::FailureOrigin origin);

  const int rank_;
  const int size_;
  api::TransportHandle transport_;
  std::unique_ptr<runtime::Executor> executor_;  // destroyed before the connections it uses
  std::shared_ptr<runtime::PlanProvider> plans_;
  const api::ResolvedConfig config_;
  const bool traceCalls_;  // logEnabled(LogLevel::trace), read once
  // prepare()'s memo of call shapes (bounded; cleared when full), used by the calling thread
  // only (one thread at a time issues calls). The few shapes used last come first, without a
  // map lookup: the small-call path (docs/performance.md).
  std::map<api::ShapeKey, std::shared_ptr<const api::CallShape>> shapes_;
  static constexpr std::size_t kRecentShapes = 4;
  std::pair<api::ShapeKey, std::shared_ptr<const api::CallShape>> recentShapes_[kRecentShapes];
  std::size_t nextRecentShape_ = 0;

  std::atomic<std::uint64_t> sequence_{0};
  std::vector<std::uint64_t> sendSequence_;  // per peer: messages sent to it so far
  std::vector<std::uint64_t> recvSequence_;  // per peer: messages received from it so far

  // Set (after failure_) once the communicator has failed: calls check it without the lock.
  std::atomic<bool> failed_{false};
  // The CallShape::planKey lastPlan_ describes, to skip the lock while calls repeat a shape.
  std::atomic<std::uint64_t> lastPlanKey_{0};

  mutable std::mutex stateMutex_;  // guards the members below
  std::string failure_;
  api::FailureOrigin origin_ = api::FailureOrigin::none;
  PlanInfo lastPlan_;
};

}  // namespace chorus
