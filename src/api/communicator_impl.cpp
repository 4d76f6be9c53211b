#include "api/communicator_impl.h"

#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "api/call_tag.h"
#include "api/group.h"
#include "ir/algorithm.h"
#include "ir/step_endpoints.h"
#include "runtime/datatype.h"
#include "support/error.h"
#include "support/log.h"

namespace chorus {

namespace {

using api::CollectiveCall;
using api::PreparedCollective;
using ir::CollectiveKind;

constexpr int kMaxPeersNamed = 8;
constexpr std::size_t kMaxCallShapes = 256;

bool rooted(CollectiveKind kind) {
  return kind == CollectiveKind::broadcast || kind == CollectiveKind::reduce;
}

// Blocks of `count` elements in the nccl-tests "size" buffer (see runtime::PlanRequest).
std::size_t sizeBlocks(CollectiveKind kind, int nranks) {
  switch (kind) {
    case CollectiveKind::allgather:
    case CollectiveKind::reducescatter:
    case CollectiveKind::alltoall:
      return static_cast<std::size_t>(nranks);
    default:
      return 1;
  }
}

const std::uint8_t* bytesOf(const void* p) {
  return static_cast<const std::uint8_t*>(p);
}

// NCCL's in-place conventions (chorus.h): AllGather's input is this rank's block of the output,
// ReduceScatter's output is this rank's block of the input; otherwise the buffers coincide.
bool isInPlace(const CollectiveCall& c, int rank) {
  if (c.sendbuf == nullptr || c.recvbuf == nullptr) return false;
  const std::size_t block =
      c.count * runtime::dataTypeSize(c.type) * static_cast<std::size_t>(rank);
  switch (c.kind) {
    case CollectiveKind::allgather:
      return bytesOf(c.sendbuf) == bytesOf(c.recvbuf) + block;
    case CollectiveKind::reducescatter:
      return bytesOf(c.recvbuf) == bytesOf(c.sendbuf) + block;
    default:
      return c.sendbuf == c.recvbuf;
  }
}

// "allreduce #12 (count 1024 float32 sum, plan allreduce.ring)": the call as peers see it.
std::string describeCall(const PreparedCollective& p, std::uint64_t sequence) {
  char text[transport::kMaxCallTextBytes];
  return std::string(text, transport::formatNumberedCall(text, sizeof text, p.shape->name, sequence,
                                                         p.shape->details));
}

std::string describeShape(const CollectiveCall& c, bool inPlace, const runtime::Plan& plan) {
  std::string text = fmt::format("(count {} {}", c.count, runtime::dataTypeName(c.type));
  if (ir::collectiveReduces(c.kind)) text += fmt::format(" {}", runtime::reduceOpName(c.op));
  if (rooted(c.kind)) text += fmt::format(" root {}", c.root);
  if (inPlace) text += " in place";
  return text + fmt::format(", plan {})", plan.name);
}

std::uint64_t tagBaseOf(const CollectiveCall& c, const runtime::Plan& plan) {
  return api::CallTag()
      .add("collective")
      .add(static_cast<std::uint64_t>(c.kind))
      .add(c.count)
      .add(static_cast<std::uint64_t>(c.type))
      .add(static_cast<std::uint64_t>(c.op))
      .add(static_cast<std::uint64_t>(c.root))
      .add(plan.name)
      .add(plan.algorithm->inPlace ? 1 : 0)
      .value();
}

std::uint64_t tagOf(const PreparedCollective& p, std::uint64_t sequence) {
  return api::CallTag::numbered(p.shape->tagBase, sequence);
}

}  // namespace

Communicator::Impl::Impl(int rank, int size, api::TransportHandle transport,
                         std::unique_ptr<runtime::Executor> executor,
                         std::shared_ptr<runtime::PlanProvider> plans, api::ResolvedConfig config)
    : rank_(rank),
      size_(size),
      transport_(std::move(transport)),
      executor_(std::move(executor)),
      plans_(std::move(plans)),
      config_(std::move(config)),
      traceCalls_(logEnabled(LogLevel::trace)),
      sendSequence_(static_cast<std::size_t>(size), 0),
      recvSequence_(static_cast<std::size_t>(size), 0) {
  CHORUS_INTERNAL_ASSERT(transport_.connections != nullptr, "communicator without connections");
  CHORUS_INTERNAL_ASSERT(executor_ != nullptr, "communicator without an executor");
  CHORUS_INTERNAL_ASSERT(plans_ != nullptr, "communicator without a plan provider");
  if (logEnabled(LogLevel::info))
    logLine(
        LogLevel::info,
        fmt::format(
            "communicator rank {} of {} created: transport {}, FIFOs of {} slots x {} "
            "bytes, timeout {} ms{}{}{}",
            rank_, size_, config_.transport->name, config_.fifo.slots, config_.fifo.slotBytes,
            config_.timeout.count(), config_.algo.empty() ? "" : ", CHORUS_ALGO " + config_.algo,
            config_.algoDir.empty() ? "" : ", CHORUS_ALGO_DIR " + config_.algoDir,
            config_.tuningFile.empty() ? "" : ", CHORUS_TUNING_FILE " + config_.tuningFile));
}

Communicator::Impl::~Impl() {
  api::forgetQueuedCalls(this);
}

Communicator::Impl& Communicator::Impl::of(const Communicator& comm) {
  if (!comm.impl_)
    throw OptionError(
        "this Communicator was moved from, so it no longer names a rank; use the object it was "
        "moved to");
  return *comm.impl_;
}

Communicator Communicator::Impl::wrap(std::unique_ptr<Impl> impl) {
  return Communicator(std::move(impl));
}

api::PreparedCollective Communicator::Impl::prepare(const api::CollectiveCall& call) {
  // A shape used lately was checked when it was made, so a repeated call only checks its
  // buffers and the communicator's health: this runs on every call.
  if (static_cast<std::size_t>(call.type) >= runtime::kDataTypeCount)
    throw OptionError(fmt::format("rank {}: {}: datatype value {} is not a chorus::DataType", rank_,
                                  ir::collectiveName(call.kind), static_cast<int>(call.type)));
  PreparedCollective p({call.kind, call.sendbuf, call.recvbuf, call.count, call.type,
                        ir::collectiveReduces(call.kind) ? call.op : ReduceOp::sum,
                        rooted(call.kind) ? call.root : 0, call.stream});
  const bool inPlace = isInPlace(call, rank_);
  const api::ShapeKey key{
      static_cast<int>(call.kind), inPlace,    call.count, static_cast<int>(call.type),
      static_cast<int>(p.call.op), p.call.root};
  for (const auto& [recentKey, recentShape] : recentShapes_)
    if (recentShape && recentKey == key) {
      p.shape = recentShape.get();
      break;
    }
  if (p.shape == nullptr) checkShape(call);
  checkBuffers(p.call);
  checkStream(call.stream, ir::collectiveName(call.kind));
  requireHealthy(call.kind, false);
  if (p.shape != nullptr) return p;

  std::shared_ptr<const api::CallShape> shape;
  if (auto found = shapes_.find(key); found != shapes_.end()) {
    shape = found->second;
  } else {
    shape = makeShape(p.call, inPlace);
    if (shapes_.size() >= kMaxCallShapes) shapes_.clear();
    shapes_.emplace(key, shape);
  }
  p.shape = shape.get();
  recentShapes_[nextRecentShape_] = {key, std::move(shape)};
  nextRecentShape_ = (nextRecentShape_ + 1) % kRecentShapes;
  return p;
}

void Communicator::Impl::checkShape(const api::CollectiveCall& call) const {
  const std::string_view name = ir::collectiveName(call.kind);
  if (ir::collectiveReduces(call.kind) &&
      static_cast<std::size_t>(call.op) >= runtime::allReduceOps().size())
    throw OptionError(fmt::format(
        "rank {}: {}: reduction operator value {} is not a chorus::ReduceOp (sum, prod, min, max, "
        "avg)",
        rank_, name, static_cast<int>(call.op)));
  if (rooted(call.kind) && (call.root < 0 || call.root >= size_))
    throw OptionError(fmt::format("rank {}: {}: root {} is not a rank of this {}-rank communicator",
                                  rank_, name, call.root, size_));
  const std::size_t elemSize = runtime::dataTypeSize(call.type);
  const std::size_t blocks = sizeBlocks(call.kind, size_);
  if (call.count > std::numeric_limits<std::size_t>::max() / 2 / elemSize / blocks)
    throw OptionError(fmt::format(
        "rank {}: {}: count {} of {} is too large: the buffer of {} x {} elements overflows the "
        "address space",
        rank_, name, call.count, runtime::dataTypeName(call.type), blocks, call.count));
}

void Communicator::Impl::checkBuffers(const api::CollectiveCall& call) const {
  if (call.count == 0) return;
  const bool needSend = call.kind != CollectiveKind::broadcast || rank_ == call.root;
  const bool needRecv = call.kind != CollectiveKind::reduce || rank_ == call.root;
  if (needSend && call.sendbuf == nullptr)
    throw OptionError(
        fmt::format("rank {}: {}: sendbuf is null but count is {}; pass the input "
                    "buffer",
                    rank_, ir::collectiveName(call.kind), call.count));
  if (needRecv && call.recvbuf == nullptr)
    throw OptionError(
        fmt::format("rank {}: {}: recvbuf is null but count is {}; pass the output buffer", rank_,
                    ir::collectiveName(call.kind), call.count));
}

std::shared_ptr<const api::CallShape> Communicator::Impl::makeShape(const api::CollectiveCall& call,
                                                                    bool inPlace) {
  const std::string_view name = ir::collectiveName(call.kind);
  runtime::PlanRequest request;
  request.collective = call.kind;
  request.nranks = size_;
  request.root = call.root;
  request.inPlace = inPlace;
  request.count = call.count;
  request.bytes = call.count * runtime::dataTypeSize(call.type) * sizeBlocks(call.kind, size_);
  request.type = call.type;
  auto shape = std::make_shared<api::CallShape>();
  shape->plan = plans_->select(request);
  CHORUS_INTERNAL_ASSERT(shape->plan.algorithm != nullptr, "plan provider returned no algorithm");
  const ir::Algorithm& a = *shape->plan.algorithm;
  if (a.nranks != size_ || a.collective != call.kind || (rooted(call.kind) && a.root != call.root))
    throw OptionError(fmt::format(
        "rank {}: {}: the selected plan '{}' ({}) is a {} for {} ranks{}, not a {} for {} "
        "ranks{}; fix the plan file or the CHORUS_ALGO override",
        rank_, name, shape->plan.name, shape->plan.source, ir::collectiveName(a.collective),
        a.nranks, rooted(a.collective) ? fmt::format(" with root {}", a.root) : std::string(), name,
        size_, rooted(call.kind) ? fmt::format(" with root {}", call.root) : std::string()));
  // Plan files are verified when loaded (selection/plan_files.cpp); a provider may hand over
  // plans nobody verified, and the interpreter runs two-sided steps only.
  try {
    ir::requireStepEndpoints(a, "run");
  } catch (const PlanError& error) {
    throw PlanError(
        fmt::format("rank {}: {}: {} ({})", rank_, name, error.what(), shape->plan.source));
  }
  shape->name = std::string(name);
  shape->details = describeShape(call, inPlace, shape->plan);
  shape->tagBase = tagBaseOf(call, shape->plan);
  static std::atomic<std::uint64_t> planKeys{0};
  shape->planKey = ++planKeys;
  return shape;
}

void Communicator::Impl::retain(api::PreparedCollective& prepared) const {
  for (const auto& recent : recentShapes_)
    if (recent.second.get() == prepared.shape) {
      prepared.owner = recent.second;
      return;
    }
  CHORUS_INTERNAL_ASSERT(false, "retain() of a call prepared before the latest prepare()");
}

void Communicator::Impl::run(const api::PreparedCollective& prepared) {
  requireHealthy(prepared.call.kind, true);
  // One thread issues calls, so a load and a store (no locked add) take the number; other
  // threads only read it (sequence()).
  const std::uint64_t sequence = sequence_.load(std::memory_order_relaxed);
  sequence_.store(sequence + 1, std::memory_order_relaxed);
  if (lastPlanKey_.load(std::memory_order_relaxed) != prepared.shape->planKey) {
    std::lock_guard lock(stateMutex_);
    lastPlan_ = {prepared.plan().name, prepared.plan().source};
    lastPlanKey_.store(prepared.shape->planKey, std::memory_order_relaxed);
  }
  try {
    execute(prepared, sequence);
  } catch (const TimeoutError& e) {
    // Name the peers that are not running this call: usually the one that never came.
    std::string message = e.what();
    const std::string mine = describeCall(prepared, sequence);
    int named = 0;
    for (int peer = 0; peer < size_ && named < kMaxPeersNamed; ++peer) {
      if (peer == rank_) continue;
      const std::string theirs = connections().peerCall(peer);
      if (theirs == mine) continue;
      message += fmt::format("{} rank {} is running {}", named++ == 0 ? ". Meanwhile" : ";", peer,
                             theirs.empty() ? "nothing yet" : theirs);
    }
    TimeoutError error(message);
    recordFailure(error);
    throw error;
  } catch (const CommError& e) {
    // Peers' messages name their call; add this rank's so both sides of a mismatch show.
    CommError error(
        fmt::format("{}. This rank was running {}", e.what(), describeCall(prepared, sequence)));
    recordFailure(error);
    throw error;
  } catch (const std::exception& e) {
    recordFailure(e);
    throw;
  }
}

void Communicator::Impl::execute(const api::PreparedCollective& p, std::uint64_t sequence) {
  const CollectiveCall& c = p.call;
  connections().publishNumberedCall(p.shape->planKey, p.shape->name, sequence, p.shape->details);
  if (traceCalls_)
    logLine(LogLevel::trace,
            fmt::format("rank {}: {} from {}", rank_, describeCall(p, sequence), p.plan().source));

  runtime::CollectiveArgs args{c.sendbuf, c.recvbuf, c.count, c.type, c.op};
  const std::size_t elemSize = runtime::dataTypeSize(c.type);
  const ir::Algorithm& a = *p.plan().algorithm;
  // NCCL ignores the non-root input of Broadcast and output of Reduce; a plan may still use
  // them as staging space, so null ones get a private buffer.
  if (args.input == nullptr && c.count > 0)
    args.input = spareBuffer(runtime::inputElements(a, rank_, c.count) * elemSize);
  else if (args.output == nullptr && c.count > 0)
    args.output = spareBuffer(runtime::outputElements(a, rank_, c.count) * elemSize);

  runtime::CallOptions options;
  options.timeout = config_.timeout;
  options.label = p.shape->name.c_str();  // "allreduce #12" in messages
  options.labelSequence = sequence;
  options.hasLabelSequence = true;
  options.callTag = tagOf(p, sequence);
  options.planKey = p.shape->planKey;
  options.stream = c.stream;
  executor_->run(a, args, options);
}

void Communicator::Impl::failStream(std::string_view call) const {
  throw OptionError(fmt::format(
      "rank {}: {}: a stream was passed, but executor '{}' runs calls on host memory and "
      "finishes each before returning; pass a null stream, or create the communicator with "
      "executor 'cuda' (CHORUS_EXECUTOR=cuda) for device buffers on a stream",
      rank_, call, executor_->name()));
}

void* Communicator::Impl::spareBuffer(std::size_t bytes) {
  return executor_->spare(bytes);
}

void Communicator::Impl::requireHealthy(std::string_view call, bool askGroup) {
  if (failed_.load(std::memory_order_acquire)) {
    std::string failure;
    {
      std::lock_guard lock(stateMutex_);
      failure = failure_;
    }
    throw CommError(fmt::format(
        "rank {}: {}: communicator failed earlier ({}); destroy it and create a new one", rank_,
        call, failure));
  }
  if (!askGroup || !connections().aborted()) return;
  const std::string reason = connections().abortReason();
  if (reason.empty()) return;
  setFailure(reason, api::FailureOrigin::remote);
  throw CommError(
      fmt::format("rank {}: {}: communicator failed: {}; destroy it and create a new one", rank_,
                  call, reason));
}

std::string Communicator::Impl::recordFailure(const std::exception& error) {
  const std::string message = error.what();
  const std::string groupReason = connections().abortReason();
  api::FailureOrigin origin = api::FailureOrigin::remote;
  if (groupReason.empty()) {
    origin = api::FailureOrigin::system;
    connections().abort(message);
  } else if (message.starts_with(groupReason)) {
    origin = api::FailureOrigin::local;
  }
  setFailure(message, origin);
  return message;
}

void Communicator::Impl::setFailure(const std::string& message, api::FailureOrigin origin) {
  std::lock_guard lock(stateMutex_);
  if (!failure_.empty()) return;
  failure_ = message;
  origin_ = origin;
  failed_.store(true, std::memory_order_release);
}

void Communicator::Impl::abort(std::string_view reason) {
  const std::string message = fmt::format("rank {} aborted the communicator: {}", rank_, reason);
  connections().abort(message);
  setFailure(message, api::FailureOrigin::local);
}

std::string Communicator::Impl::asyncError() const {
  {
    std::lock_guard lock(stateMutex_);
    if (!failure_.empty()) return failure_;
  }
  return transport_.connections->abortReason();
}

bool Communicator::Impl::failed() const {
  return !asyncError().empty();
}

bool Communicator::Impl::failureReported() const {
  std::lock_guard lock(stateMutex_);
  return !failure_.empty();
}

api::FailureOrigin Communicator::Impl::failureOrigin() const {
  {
    std::lock_guard lock(stateMutex_);
    if (origin_ != api::FailureOrigin::none) return origin_;
  }
  // A call queued on a stream that failed here, noticed by the executor after it returned.
  if (!executor_->asyncError().empty()) return api::FailureOrigin::local;
  return transport_.connections->abortReason().empty() ? api::FailureOrigin::none
                                                       : api::FailureOrigin::remote;
}

PlanInfo Communicator::Impl::lastPlan() const {
  std::lock_guard lock(stateMutex_);
  return lastPlan_;
}

}  // namespace chorus
