// ProcessGroupChorus: argument checks on the caller's thread, staging of tensors chorus cannot
// use in place (non-contiguous, int16), and one OrderedExecutor task per call.
#include "torch/process_group.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <fmt/format.h>
#include <pybind11/pybind11.h>

#include "api/comm_config.h"
#include "api/comm_factory.h"
#include "api/group.h"
#include "torch/c10d_store.h"
#include "torch/tagged_p2p.h"
#include "torch/tensor_types.h"
#include "transport/store.h"

namespace chorus::torch_backend {

namespace {

using Ticket = api::OrderedExecutor::Ticket;

// The torch.distributed name of a call, for error messages.
const char* callName(c10d::OpType opType) {
  switch (opType) {
    case c10d::OpType::BROADCAST:
      return "broadcast";
    case c10d::OpType::ALLREDUCE:
      return "all_reduce";
    case c10d::OpType::ALLREDUCE_COALESCED:
      return "all_reduce_coalesced";
    case c10d::OpType::REDUCE:
      return "reduce";
    case c10d::OpType::ALLGATHER:
      return "all_gather";
    case c10d::OpType::_ALLGATHER_BASE:
      return "all_gather_into_tensor";
    case c10d::OpType::GATHER:
      return "gather";
    case c10d::OpType::SCATTER:
      return "scatter";
    case c10d::OpType::REDUCE_SCATTER:
      return "reduce_scatter";
    case c10d::OpType::_REDUCE_SCATTER_BASE:
      return "reduce_scatter_tensor";
    case c10d::OpType::ALLTOALL_BASE:
      return "all_to_all_single";
    case c10d::OpType::ALLTOALL:
      return "all_to_all";
    case c10d::OpType::SEND:
      return "send";
    case c10d::OpType::RECV:
      return "recv";
    case c10d::OpType::BARRIER:
      return "barrier";
    case c10d::OpType::ALLGATHER_INTO_TENSOR_COALESCED:
      return "all_gather_into_tensor_coalesced";
    case c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED:
      return "reduce_scatter_tensor_coalesced";
    case c10d::OpType::COALESCED:
      return "coalesced calls";
    default:
      return "call";
  }
}

// The type of every Work's future value (a list of tensors), made once.
const c10::TypePtr& tensorListType() {
  static const c10::TypePtr type = c10::ListType::create(c10::TensorType::get());
  return type;
}

// A Work whose completion is its executor task's: wait() runs queued calls on the waiting thread
// when nobody else is, and rethrows the call's error.
class ChorusWork : public c10d::Work {
 public:
  ChorusWork(std::shared_ptr<api::OrderedExecutor> executor, int rank, c10d::OpType opType,
             std::vector<at::Tensor> outputs)
      : Work(rank, opType),
        executor_(std::move(executor)),
        outputs_(std::move(outputs)),
        future_(c10::make_intrusive<c10::ivalue::Future>(tensorListType())) {}

  void setTicket(Ticket ticket) { ticket_ = ticket; }

  bool isCompleted() override { return executor_->poll(ticket_); }

  bool wait(std::chrono::milliseconds timeout) override {
    const bool settled =
        executor_->wait(ticket_, timeout == kNoTimeout ? std::nullopt : std::optional(timeout));
    TORCH_CHECK(settled, "chorus: ", callName(opType_), " did not complete within ",
                timeout.count(),
                " ms (the timeout given to wait()); it is still queued or running");
    std::lock_guard lock(mutex_);
    if (exception_) std::rethrow_exception(exception_);
    return true;
  }

  void synchronize() override {}  // CPU only: nothing runs on a device stream

  std::vector<at::Tensor> result() override { return outputs_; }

  // Whoever takes the future waits on it, not on this Work: start the call now.
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    executor_->poll(ticket_);
    return future_;
  }

  // Called by the executor once the call ran; `error` is null on success. A chorus error becomes
  // the RuntimeError that wait() raises: the call, this rank, and chorus's message (which names
  // the failed peer, the collective and its sequence number).
  void settle(std::exception_ptr error) {
    if (error) {
      try {
        std::rethrow_exception(error);
      } catch (const UserError& chorusError) {
        error = std::make_exception_ptr(std::runtime_error(fmt::format(
            "chorus: {} failed on rank {}: {}", callName(opType_), rank_, chorusError.what())));
      } catch (...) {
      }
    }
    finish(error);
    if (error)
      future_->setError(error);
    else
      future_->markCompleted(c10::IValue(outputs_));
  }

 private:
  std::shared_ptr<api::OrderedExecutor> executor_;
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  Ticket ticket_ = 0;
};

// The Work of endCoalescing(): completes once every part has, with the first part's error.
class CoalescedWork : public c10d::Work {
 public:
  CoalescedWork(int rank, std::vector<c10::intrusive_ptr<c10d::Work>> parts)
      : Work(rank, c10d::OpType::COALESCED),
        parts_(std::move(parts)),
        future_(c10::make_intrusive<c10::ivalue::Future>(tensorListType())) {
    for (const auto& part : parts_)
      for (const auto& tensor : part->result())
        outputs_.push_back(tensor);
    auto left = std::make_shared<std::atomic<std::size_t>>(parts_.size());
    if (parts_.empty()) future_->markCompleted(c10::IValue(outputs_));
    for (const auto& part : parts_) {
      // getFuture() also starts a call nobody waits for yet.
      part->getFuture()->addCallback([left, parts = parts_, outputs = outputs_,
                                      future = future_](c10::ivalue::Future& /*done*/) {
        if (left->fetch_sub(1) != 1) return;
        for (const auto& p : parts)
          if (p->getFuture()->hasError()) {
            future->setError(p->getFuture()->exception_ptr());
            return;
          }
        future->markCompleted(c10::IValue(outputs));
      });
    }
  }

  bool isCompleted() override {
    return std::all_of(parts_.begin(), parts_.end(),
                       [](const auto& part) { return part->isCompleted(); });
  }
  bool wait(std::chrono::milliseconds timeout) override {
    for (const auto& part : parts_)
      part->wait(timeout);  // rethrows the part's error
    return true;
  }
  void synchronize() override {}
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  std::vector<c10::intrusive_ptr<c10d::Work>> parts_;
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// A communicator of a group (`purpose` keeps the collectives' and point-to-point's apart on
// the store): rank 0 draws a name for the shared-memory segments and publishes
// it through the group's store. Joining ranks count themselves on the store, so a group that is
// destroyed and made again on the same store (same prefix) meets under a fresh namespace.
Communicator connect(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                     std::chrono::milliseconds timeout, std::string_view purpose) {
  TORCH_CHECK(store, "chorus: the process group needs a store; torch.distributed passes one");
  CommConfig config;
  if (std::getenv("CHORUS_TIMEOUT") == nullptr && timeout.count() > 0) config.timeout = timeout;
  const auto resolved = api::resolveConfig(config, api::InitKind::perProcess);
  auto base = std::make_shared<C10dStore>(store);
  const std::int64_t joined = base->add(fmt::format("{}/joined", purpose), 1);
  const std::int64_t generation = (joined - 1) / size;
  auto chorusStore =
      std::make_shared<transport::PrefixStore>(base, fmt::format("{}/{}", purpose, generation));
  std::string name;
  if (rank == 0) {
    std::random_device random;
    const std::uint64_t nonce = (std::uint64_t{random()} << 32) ^ random();
    name = fmt::format("chorus-t{:016x}", nonce);
    chorusStore->set("name", transport::toBytes(name));
  } else {
    name = transport::toString(chorusStore->get("name", resolved.timeout));
  }
  auto plans = api::selectPlans(size, resolved);
  return api::makeProcessCommunicator(chorusStore, name, rank, size, resolved, std::move(plans));
}

const at::Tensor& singleTensor(const std::vector<at::Tensor>& tensors, const char* call) {
  TORCH_CHECK(tensors.size() == 1, "chorus: ", call, " takes exactly one tensor per rank (got ",
              tensors.size(), "); the chorus backend runs one CPU tensor per process");
  checkCpuDense(tensors[0], call, "the tensor");
  return tensors[0];
}

std::size_t bytesOf(const at::Tensor& tensor) {
  return static_cast<std::size_t>(tensor.numel()) * tensor.element_size();
}

// The tensor chorus reads and writes for `user`: `user` itself when it is contiguous and of the
// dtype chorus runs, else a contiguous tensor of `dtype` (default: the user's dtype).
at::Tensor stagingFor(const at::Tensor& user, std::optional<at::ScalarType> dtype = std::nullopt) {
  if (user.is_contiguous() && (!dtype || *dtype == user.scalar_type())) return user;
  return at::empty(user.sizes(), user.options().dtype(dtype.value_or(user.scalar_type())));
}

void copyIn(const at::Tensor& staging, const at::Tensor& user) {
  if (!staging.is_same(user)) staging.copy_(user);
}

void copyOut(const at::Tensor& user, const at::Tensor& staging) {
  if (!staging.is_same(user)) user.copy_(staging);
}

void checkSameKind(const at::Tensor& tensor, const at::Tensor& reference, const char* call,
                   const char* what) {
  checkCpuDense(tensor, call, what);
  TORCH_CHECK(tensor.scalar_type() == reference.scalar_type(), "chorus: ", call, ": ", what,
              " has dtype ", tensor.scalar_type(), " but the input has ", reference.scalar_type(),
              "; every tensor of the call must have the same dtype");
}

void checkList(const std::vector<at::Tensor>& list, const at::Tensor& reference, int size,
               const char* call, const char* what) {
  TORCH_CHECK(static_cast<int>(list.size()) == size, "chorus: ", call, ": the ", what, " list has ",
              list.size(), " tensors; it needs one per rank (", size, ")");
  for (const auto& tensor : list) {
    checkSameKind(tensor, reference, call, what);
    TORCH_CHECK(tensor.numel() == reference.numel(), "chorus: ", call, ": a tensor of the ", what,
                " list has ", tensor.numel(), " elements but the other side has ",
                reference.numel(), "; they must match");
  }
}

// Splits of a dim-0 all-to-all: the given ones, or equal ones when none are given.
std::vector<int64_t> splitsOf(const std::vector<int64_t>& given, const at::Tensor& tensor, int size,
                              const char* side) {
  const int64_t rows = tensor.dim() == 0 ? 1 : tensor.size(0);
  if (given.empty()) {
    TORCH_CHECK(rows % size == 0, "chorus: all_to_all_single: the ", side, " has ", rows,
                " rows, which ", size, " ranks cannot split equally; pass ", side, "_split_sizes");
    return std::vector<int64_t>(size, rows / size);
  }
  TORCH_CHECK(static_cast<int>(given.size()) == size, "chorus: all_to_all_single: ", side,
              "_split_sizes has ", given.size(), " entries; it needs one per rank (", size, ")");
  const int64_t total = std::accumulate(given.begin(), given.end(), int64_t{0});
  TORCH_CHECK(total == rows, "chorus: all_to_all_single: ", side, "_split_sizes add up to ", total,
              " but the ", side, " has ", rows, " rows");
  for (const int64_t split : given)
    TORCH_CHECK(split >= 0, "chorus: all_to_all_single: ", side, "_split_sizes has ", split);
  return given;
}

// One all_gather_into_tensor: checked when made; run() issues it, finish() copies the result
// into a caller's output chorus could not write in place.
struct TensorGather {
  at::Tensor output;
  at::Tensor input;
  at::Tensor staging;

  TensorGather(const at::Tensor& out, const at::Tensor& in, int size, const char* call)
      : output(out), input(in) {
    checkCpuDense(input, call, "the input");
    checkSameKind(output, input, call, "the output");
    TORCH_CHECK(output.numel() == size * input.numel(), "chorus: ", call, ": the output has ",
                output.numel(), " elements; it needs ", size, " (ranks) x ", input.numel(),
                " (the input's)");
    staging = stagingFor(output);
  }
  void run(Communicator& comm) const {
    const at::Tensor in = input.contiguous();
    comm.allGather(in.data_ptr(), staging.data_ptr(), bytesOf(in), DataType::uint8);
  }
  void finish() const { copyOut(output, staging); }
};

// One reduce_scatter_tensor, likewise.
struct TensorReduceScatter {
  at::Tensor output;
  at::Tensor input;
  ReductionType reduction;
  at::Tensor outStaging;
  at::Tensor inStaging;

  TensorReduceScatter(const at::Tensor& out, const at::Tensor& in, const c10d::ReduceOp& op,
                      int size, const char* call)
      : output(out), input(in), reduction(reductionTypeOf(out.scalar_type(), op, call)) {
    checkCpuDense(input, call, "the input");
    checkSameKind(output, input, call, "the output");
    TORCH_CHECK(input.numel() == size * output.numel(), "chorus: ", call, ": the input has ",
                input.numel(), " elements; it needs ", size, " (ranks) x ", output.numel(),
                " (the output's)");
    outStaging = stagingFor(output, reduction.stagingDtype);
    inStaging = stagingFor(input, reduction.stagingDtype);
  }
  void run(Communicator& comm) const {
    copyIn(inStaging, input);
    comm.reduceScatter(inStaging.data_ptr(), outStaging.data_ptr(),
                       outStaging.numel() * reduction.elementsPerItem, reduction.type,
                       reduction.op);
  }
  void finish() const { copyOut(output, outStaging); }
};

}  // namespace

ProcessGroupChorus::ProcessGroupChorus(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                       int size, std::chrono::milliseconds timeout)
    : Backend(rank, size),
      comm_(connect(store, rank, size, timeout, "chorus")),
      watchdog_([this](const std::string& message) { abortComm(message); }),
      p2p_(std::make_unique<TaggedP2p>(
          connect(store, rank, size, timeout, "chorus-p2p"),
          [this] { return comm_ ? comm_->asyncError() : std::string(); },
          [this](const std::string& message) { abortComm(message); })),
      executor_(std::make_shared<api::OrderedExecutor>()) {
  init();
}

ProcessGroupChorus::~ProcessGroupChorus() {
  // Queued calls and point-to-point operations may complete futures whose callbacks take the
  // GIL (DDP's hooks written in Python): never wait for them while holding it.
  withoutTheGil([this] {
    executor_->drain();
    p2p_.reset();
  });
}

void ProcessGroupChorus::withoutTheGil(const std::function<void()>& wait) {
  if (Py_IsInitialized() != 0 && PyGILState_Check() != 0) {
    pybind11::gil_scoped_release release;
    wait();
  } else {
    wait();
  }
}

void ProcessGroupChorus::shutdown() {
  withoutTheGil([this] {
    executor_->drain();
    p2p_.reset();  // fails what is still pending, then stops its thread
    watchdog_.stop();
  });
  // Destroying the communicator tells the peers at once that this rank has left (a peer
  // waiting in a collective this rank never made then fails instead of timing out).
  comm_.reset();
}

void ProcessGroupChorus::abortComm(const std::string& reason) {
  if (comm_) comm_->abort(reason);
}

void ProcessGroupChorus::abort() {
  abortComm("torch aborted the process group (ProcessGroup.abort)");
}

Communicator& ProcessGroupChorus::comm() {
  TORCH_CHECK(comm_.has_value(),
              "chorus: the group was shut down (destroy_process_group); "
              "create a new group with init_process_group or new_group");
  return *comm_;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::submit(c10d::OpType opType, Kind kind,
                                                          std::chrono::milliseconds timeout,
                                                          std::vector<at::Tensor> outputs,
                                                          std::function<void()> run,
                                                          std::function<void()> onSuccess) {
  auto work = c10::make_intrusive<ChorusWork>(executor_, rank_, opType, std::move(outputs));
  api::OrderedExecutor::Task task;
  task.kind = kind;
  if (timeout == c10d::kUnsetTimeout) {
    task.run = std::move(run);
  } else {
    // The call's own timeout counts from now, as the caller sees it.
    const auto deadline = CallWatchdog::Clock::now() + timeout;
    task.run = [this, run = std::move(run), deadline, timeout, opType] {
      watchdog_.arm(deadline, fmt::format("{} on rank {}", callName(opType), rank_), timeout);
      const std::unique_ptr<CallWatchdog, void (*)(CallWatchdog*)> disarm(
          &watchdog_, [](CallWatchdog* watchdog) { watchdog->disarm(); });
      run();
    };
  }
  task.settle = [work, onSuccess = std::move(onSuccess)](std::exception_ptr error) {
    if (!error && onSuccess) {
      try {
        onSuccess();
      } catch (...) {
        error = std::current_exception();
      }
    }
    work->settle(error);
  };
  work->setTicket(executor_->submit(std::move(task)));
  if (coalescing_) coalesced_.push_back(work);
  return work;
}

void ProcessGroupChorus::startCoalescing() {
  TORCH_CHECK(!coalescing_,
              "chorus: startCoalescing: the group is coalescing already; end that first");
  coalescing_ = true;
  coalesced_.clear();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::endCoalescing() {
  TORCH_CHECK(coalescing_, "chorus: endCoalescing without startCoalescing");
  coalescing_ = false;
  std::vector<c10::intrusive_ptr<c10d::Work>> parts = std::move(coalesced_);
  coalesced_.clear();
  return c10::make_intrusive<CoalescedWork>(rank_, std::move(parts));
}

void ProcessGroupChorus::checkPeer(int peer, const char* call, const char* argument) const {
  TORCH_CHECK(peer >= 0 && peer < size_, "chorus: ", call, ": ", argument, " is ", peer,
              "; it must be a rank of the group, 0 to ", size_ - 1);
}

PlanInfo ProcessGroupChorus::lastPlan() {
  executor_->drain();
  return comm().lastPlan();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::broadcast(std::vector<at::Tensor>& tensors,
                                                             const c10d::BroadcastOptions& opts) {
  const at::Tensor tensor = singleTensor(tensors, "broadcast");
  checkPeer(static_cast<int>(opts.rootRank), "broadcast", "src");
  TORCH_CHECK(opts.rootTensor == 0, "chorus: broadcast: root tensor ", opts.rootTensor,
              " does not exist; chorus runs one tensor per rank");
  const int root = static_cast<int>(opts.rootRank);
  const at::Tensor staging = stagingFor(tensor);
  return submit(
      c10d::OpType::BROADCAST, Kind::collective, opts.timeout, {tensor},
      [this, tensor, staging, root] {
        if (rank_ == root) copyIn(staging, tensor);
        comm().broadcast(staging.data_ptr(), staging.data_ptr(), bytesOf(staging), DataType::uint8,
                         root);
      },
      [tensor, staging] { copyOut(tensor, staging); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::allreduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::AllreduceOptions& opts) {
  const at::Tensor tensor = singleTensor(tensors, "all_reduce");
  const ReductionType reduction =
      reductionTypeOf(tensor.scalar_type(), opts.reduceOp, "all_reduce");
  const at::Tensor staging = stagingFor(tensor, reduction.stagingDtype);
  return submit(
      c10d::OpType::ALLREDUCE, Kind::collective, opts.timeout, {tensor},
      [this, tensor, staging, reduction] {
        copyIn(staging, tensor);
        comm().allReduce(staging.data_ptr(), staging.data_ptr(),
                         staging.numel() * reduction.elementsPerItem, reduction.type, reduction.op);
      },
      [tensor, staging] { copyOut(tensor, staging); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "chorus: all_reduce_coalesced got no tensors");
  std::vector<at::Tensor> stagings;
  std::vector<ReductionType> reductions;
  for (const auto& tensor : tensors) {
    checkCpuDense(tensor, "all_reduce_coalesced", "a tensor");
    reductions.push_back(
        reductionTypeOf(tensor.scalar_type(), opts.reduceOp, "all_reduce_coalesced"));
    stagings.push_back(stagingFor(tensor, reductions.back().stagingDtype));
  }
  return submit(
      c10d::OpType::ALLREDUCE_COALESCED, Kind::collective, opts.timeout, tensors,
      [this, tensors, stagings, reductions] {
        for (std::size_t i = 0; i < tensors.size(); ++i) {
          copyIn(stagings[i], tensors[i]);
          comm().allReduce(stagings[i].data_ptr(), stagings[i].data_ptr(),
                           stagings[i].numel() * reductions[i].elementsPerItem, reductions[i].type,
                           reductions[i].op);
        }
      },
      [tensors, stagings] {
        for (std::size_t i = 0; i < tensors.size(); ++i)
          copyOut(tensors[i], stagings[i]);
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::reduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::ReduceOptions& opts) {
  const at::Tensor tensor = singleTensor(tensors, "reduce");
  checkPeer(static_cast<int>(opts.rootRank), "reduce", "dst");
  TORCH_CHECK(opts.rootTensor == 0, "chorus: reduce: root tensor ", opts.rootTensor,
              " does not exist; chorus runs one tensor per rank");
  const int root = static_cast<int>(opts.rootRank);
  const ReductionType reduction = reductionTypeOf(tensor.scalar_type(), opts.reduceOp, "reduce");
  const at::Tensor staging = stagingFor(tensor, reduction.stagingDtype);
  return submit(
      c10d::OpType::REDUCE, Kind::collective, opts.timeout, {tensor},
      [this, tensor, staging, reduction, root] {
        copyIn(staging, tensor);
        // Only the root's tensor receives the result; the others' are left unchanged.
        comm().reduce(staging.data_ptr(), rank_ == root ? staging.data_ptr() : nullptr,
                      staging.numel() * reduction.elementsPerItem, reduction.type, reduction.op,
                      root);
      },
      [this, tensor, staging, root] {
        if (rank_ == root) copyOut(tensor, staging);
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::allgather(
    std::vector<std::vector<at::Tensor>>& outputTensors, std::vector<at::Tensor>& inputTensors,
    const c10d::AllgatherOptions& opts) {
  const at::Tensor input = singleTensor(inputTensors, "all_gather");
  TORCH_CHECK(outputTensors.size() == 1, "chorus: all_gather takes one output list per rank (got ",
              outputTensors.size(), ")");
  const std::vector<at::Tensor> outputs = outputTensors[0];
  checkList(outputs, input, size_, "all_gather", "output");
  const int64_t n = input.numel();
  return submit(c10d::OpType::ALLGATHER, Kind::collective, opts.timeout, outputs,
                [this, input, outputs, n] {
                  const at::Tensor flat = at::empty({size_ * n}, input.options());
                  const at::Tensor in = input.contiguous();
                  comm().allGather(in.data_ptr(), flat.data_ptr(), bytesOf(in), DataType::uint8);
                  for (int r = 0; r < size_; ++r)
                    outputs[r].copy_(flat.narrow(0, r * n, n).view(outputs[r].sizes()));
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::_allgather_base(
    at::Tensor& outputBuffer, at::Tensor& inputBuffer, const c10d::AllgatherOptions& opts) {
  const TensorGather part(outputBuffer, inputBuffer, size_, "all_gather_into_tensor");
  return submit(
      c10d::OpType::_ALLGATHER_BASE, Kind::collective, opts.timeout, {part.output},
      [this, part] { part.run(comm()); }, [part] { part.finish(); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  const char* call = "all_gather_into_tensor_coalesced";
  TORCH_CHECK(outputs.size() == inputs.size(), "chorus: ", call, " got ", outputs.size(),
              " outputs and ", inputs.size(), " inputs; it needs one output per input");
  std::vector<TensorGather> parts;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    parts.emplace_back(outputs[i], inputs[i], size_, call);
  return submit(
      c10d::OpType::ALLGATHER_INTO_TENSOR_COALESCED, Kind::collective, opts.timeout, outputs,
      [this, parts] {
        for (const auto& part : parts)
          part.run(comm());
      },
      [parts] {
        for (const auto& part : parts)
          part.finish();
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::gather(
    std::vector<std::vector<at::Tensor>>& outputTensors, std::vector<at::Tensor>& inputTensors,
    const c10d::GatherOptions& opts) {
  const at::Tensor input = singleTensor(inputTensors, "gather");
  checkPeer(static_cast<int>(opts.rootRank), "gather", "dst");
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> outputs;
  if (rank_ == root) {
    TORCH_CHECK(outputTensors.size() == 1, "chorus: gather: the root takes one gather_list");
    outputs = outputTensors[0];
    checkList(outputs, input, size_, "gather", "gather_list");
  } else {
    TORCH_CHECK(outputTensors.empty() || outputTensors[0].empty(),
                "chorus: gather: only the destination rank passes a gather_list");
  }
  return submit(c10d::OpType::GATHER, Kind::collective, opts.timeout, outputs,
                [this, input, outputs, root] {
                  const at::Tensor in = input.contiguous();
                  if (rank_ != root) {
                    comm().send(in.data_ptr(), bytesOf(in), DataType::uint8, root);
                    return;
                  }
                  std::vector<at::Tensor> stagings;
                  api::GroupScope group;
                  for (int r = 0; r < size_; ++r) {
                    stagings.push_back(stagingFor(outputs[r]));
                    if (r != rank_)
                      comm().recv(stagings[r].data_ptr(), bytesOf(stagings[r]), DataType::uint8, r);
                  }
                  group.end();
                  for (int r = 0; r < size_; ++r)
                    outputs[r].copy_(r == rank_ ? in.view(outputs[r].sizes()) : stagings[r]);
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::scatter(
    std::vector<at::Tensor>& outputTensors, std::vector<std::vector<at::Tensor>>& inputTensors,
    const c10d::ScatterOptions& opts) {
  const at::Tensor output = singleTensor(outputTensors, "scatter");
  checkPeer(static_cast<int>(opts.rootRank), "scatter", "src");
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> inputs;
  if (rank_ == root) {
    TORCH_CHECK(inputTensors.size() == 1, "chorus: scatter: the root takes one scatter_list");
    inputs = inputTensors[0];
    checkList(inputs, output, size_, "scatter", "scatter_list");
  } else {
    TORCH_CHECK(inputTensors.empty() || inputTensors[0].empty(),
                "chorus: scatter: only the source rank passes a scatter_list");
  }
  const at::Tensor staging = stagingFor(output);
  return submit(
      c10d::OpType::SCATTER, Kind::collective, opts.timeout, {output},
      [this, inputs, staging, root] {
        if (rank_ != root) {
          comm().recv(staging.data_ptr(), bytesOf(staging), DataType::uint8, root);
          return;
        }
        std::vector<at::Tensor> contiguous;
        api::GroupScope group;
        for (int r = 0; r < size_; ++r) {
          contiguous.push_back(inputs[r].contiguous());
          if (r != rank_)
            comm().send(contiguous[r].data_ptr(), bytesOf(contiguous[r]), DataType::uint8, r);
        }
        group.end();
        staging.copy_(contiguous[rank_].view(staging.sizes()));
      },
      [output, staging] { copyOut(output, staging); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::reduce_scatter(
    std::vector<at::Tensor>& outputTensors, std::vector<std::vector<at::Tensor>>& inputTensors,
    const c10d::ReduceScatterOptions& opts) {
  const at::Tensor output = singleTensor(outputTensors, "reduce_scatter");
  TORCH_CHECK(inputTensors.size() == 1,
              "chorus: reduce_scatter takes one input list per rank (got ", inputTensors.size(),
              ")");
  const std::vector<at::Tensor> inputs = inputTensors[0];
  checkList(inputs, output, size_, "reduce_scatter", "input");
  const ReductionType reduction =
      reductionTypeOf(output.scalar_type(), opts.reduceOp, "reduce_scatter");
  const at::Tensor staging = stagingFor(output, reduction.stagingDtype);
  return submit(
      c10d::OpType::REDUCE_SCATTER, Kind::collective, opts.timeout, {output},
      [this, inputs, staging, reduction] {
        const int64_t n = staging.numel();
        const at::Tensor flat = at::empty({size_ * n}, staging.options());
        for (int r = 0; r < size_; ++r)
          flat.narrow(0, r * n, n).copy_(inputs[r].reshape({n}));
        comm().reduceScatter(flat.data_ptr(), staging.data_ptr(), n * reduction.elementsPerItem,
                             reduction.type, reduction.op);
      },
      [output, staging] { copyOut(output, staging); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::_reduce_scatter_base(
    at::Tensor& outputTensor, at::Tensor& inputTensor, const c10d::ReduceScatterOptions& opts) {
  const TensorReduceScatter part(outputTensor, inputTensor, opts.reduceOp, size_,
                                 "reduce_scatter_tensor");
  return submit(
      c10d::OpType::_REDUCE_SCATTER_BASE, Kind::collective, opts.timeout, {part.output},
      [this, part] { part.run(comm()); }, [part] { part.finish(); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const char* call = "reduce_scatter_tensor_coalesced";
  TORCH_CHECK(outputs.size() == inputs.size(), "chorus: ", call, " got ", outputs.size(),
              " outputs and ", inputs.size(), " inputs; it needs one output per input");
  std::vector<TensorReduceScatter> parts;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    parts.emplace_back(outputs[i], inputs[i], opts.reduceOp, size_, call);
  return submit(
      c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED, Kind::collective, opts.timeout, outputs,
      [this, parts] {
        for (const auto& part : parts)
          part.run(comm());
      },
      [parts] {
        for (const auto& part : parts)
          part.finish();
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::alltoall_base(
    at::Tensor& outputTensor, at::Tensor& inputTensor, std::vector<int64_t>& outputSplitSizes,
    std::vector<int64_t>& inputSplitSizes, const c10d::AllToAllOptions& opts) {
  const char* call = "all_to_all_single";
  checkCpuDense(inputTensor, call, "the input");
  checkSameKind(outputTensor, inputTensor, call, "the output");
  const at::Tensor output = outputTensor;
  const at::Tensor input = inputTensor;
  const at::Tensor staging = stagingFor(output);
  if (outputSplitSizes.empty() && inputSplitSizes.empty()) {
    TORCH_CHECK(input.numel() == output.numel(), "chorus: ", call, ": the input has ",
                input.numel(), " elements and the output ", output.numel(),
                "; with equal splits they must match");
    splitsOf({}, input, size_, "input");
    return submit(
        c10d::OpType::ALLTOALL_BASE, Kind::collective, opts.timeout, {output},
        [this, input, staging] {
          const at::Tensor in = input.contiguous();
          comm().allToAll(in.data_ptr(), staging.data_ptr(), bytesOf(in) / size_, DataType::uint8);
        },
        [output, staging] { copyOut(output, staging); });
  }
  // Uneven splits: one send and one receive per peer, all progressing together.
  const auto inSplits = splitsOf(inputSplitSizes, input, size_, "input");
  const auto outSplits = splitsOf(outputSplitSizes, output, size_, "output");
  const int64_t inRows = input.dim() == 0 ? 1 : input.size(0);
  const int64_t outRows = output.dim() == 0 ? 1 : output.size(0);
  const std::size_t inRowBytes = inRows == 0 ? 0 : bytesOf(input) / inRows;
  const std::size_t outRowBytes = outRows == 0 ? 0 : bytesOf(output) / outRows;
  TORCH_CHECK(inRows == 0 || outRows == 0 || inRowBytes == outRowBytes, "chorus: ", call,
              ": input rows have ", inRowBytes, " bytes and output rows ", outRowBytes,
              "; all_to_all_single splits dim 0, so the other dims must match");
  // Checked here, not in the task, so a rejected call leaves the group usable.
  TORCH_CHECK(inSplits[rank_] * inRowBytes == outSplits[rank_] * outRowBytes, "chorus: ", call,
              ": rank ", rank_, " sends ", inSplits[rank_], " rows to itself but expects ",
              outSplits[rank_]);
  return submit(
      c10d::OpType::ALLTOALL_BASE, Kind::collective, opts.timeout, {output},
      [this, input, staging, inSplits, outSplits, inRowBytes, outRowBytes] {
        const at::Tensor in = input.contiguous();
        auto* inBytes = static_cast<std::uint8_t*>(in.data_ptr());
        auto* outBytes = static_cast<std::uint8_t*>(staging.data_ptr());
        std::size_t inAt = 0;
        std::size_t outAt = 0;
        api::GroupScope group;
        for (int r = 0; r < size_; ++r) {
          const std::size_t sendBytes = inSplits[r] * inRowBytes;
          const std::size_t recvBytes = outSplits[r] * outRowBytes;
          if (r == rank_) {
            std::memcpy(outBytes + outAt, inBytes + inAt, sendBytes);
          } else {
            if (sendBytes > 0) comm().send(inBytes + inAt, sendBytes, DataType::uint8, r);
            if (recvBytes > 0) comm().recv(outBytes + outAt, recvBytes, DataType::uint8, r);
          }
          inAt += sendBytes;
          outAt += recvBytes;
        }
        group.end();
      },
      [output, staging] { copyOut(output, staging); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::alltoall(std::vector<at::Tensor>& outputTensors,
                                                            std::vector<at::Tensor>& inputTensors,
                                                            const c10d::AllToAllOptions& opts) {
  const char* call = "all_to_all";
  TORCH_CHECK(static_cast<int>(inputTensors.size()) == size_ &&
                  static_cast<int>(outputTensors.size()) == size_,
              "chorus: ", call, " takes one input and one output tensor per rank (", size_,
              "); got ", inputTensors.size(), " and ", outputTensors.size());
  for (int r = 0; r < size_; ++r) {
    checkCpuDense(inputTensors[r], call, "an input");
    checkSameKind(outputTensors[r], inputTensors[0], call, "an output");
    checkSameKind(inputTensors[r], inputTensors[0], call, "an input");
  }
  TORCH_CHECK(bytesOf(inputTensors[rank_]) == bytesOf(outputTensors[rank_]), "chorus: ", call,
              ": rank ", rank_, "'s tensors to and from itself differ in size (",
              inputTensors[rank_].numel(), " and ", outputTensors[rank_].numel(), " elements)");
  const std::vector<at::Tensor> outputs = outputTensors;
  const std::vector<at::Tensor> inputs = inputTensors;
  std::vector<at::Tensor> stagings;
  for (const auto& output : outputs)
    stagings.push_back(stagingFor(output));
  return submit(
      c10d::OpType::ALLTOALL, Kind::collective, opts.timeout, outputs,
      [this, inputs, stagings] {
        std::vector<at::Tensor> contiguous;
        for (const auto& input : inputs)
          contiguous.push_back(input.contiguous());
        api::GroupScope group;
        for (int r = 0; r < size_; ++r) {
          if (r == rank_) continue;
          if (bytesOf(contiguous[r]) > 0)
            comm().send(contiguous[r].data_ptr(), bytesOf(contiguous[r]), DataType::uint8, r);
          if (bytesOf(stagings[r]) > 0)
            comm().recv(stagings[r].data_ptr(), bytesOf(stagings[r]), DataType::uint8, r);
        }
        group.end();
        stagings[rank_].copy_(contiguous[rank_].view(stagings[rank_].sizes()));
      },
      [outputs, stagings] {
        for (std::size_t r = 0; r < outputs.size(); ++r)
          copyOut(outputs[r], stagings[r]);
      });
}

TaggedP2p& ProcessGroupChorus::p2p() {
  TORCH_CHECK(p2p_ != nullptr,
              "chorus: the group was shut down (destroy_process_group); "
              "create a new group with init_process_group or new_group");
  return *p2p_;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::send(std::vector<at::Tensor>& tensors,
                                                        int dstRank, int tag) {
  const at::Tensor tensor = singleTensor(tensors, "send");
  checkPeer(dstRank, "send", "dst");
  // Snapshot a non-contiguous tensor now, as torch's other backends do.
  auto work = p2p().send(dstRank, tag, tensor.contiguous(), tensor);
  if (coalescing_) coalesced_.push_back(work);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::recv(std::vector<at::Tensor>& tensors,
                                                        int srcRank, int tag) {
  const at::Tensor tensor = singleTensor(tensors, "recv");
  checkPeer(srcRank, "recv", "src");
  const at::Tensor staging = stagingFor(tensor);
  auto work =
      p2p().recv(srcRank, tag, staging, tensor, [tensor, staging] { copyOut(tensor, staging); });
  if (coalescing_) coalesced_.push_back(work);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::recvAnysource(
    std::vector<at::Tensor>& /*tensors*/, int /*tag*/) {
  TORCH_CHECK(false,
              "chorus: recv without src (from any source) is not supported: chorus matches "
              "messages per source rank and tag, so pass src");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::barrier(const c10d::BarrierOptions& opts) {
  return submit(c10d::OpType::BARRIER, Kind::collective, opts.timeout, {}, [this] {
    comm().allReduce(&barrierByte_, &barrierByte_, 1, DataType::uint8, ReduceOp::max);
  });
}

void ProcessGroupChorus::monitoredBarrier(const c10d::BarrierOptions& opts, bool /*waitAllRanks*/) {
  auto work = barrier(opts);
  const bool bounded = opts.timeout != c10d::kUnsetTimeout;
  TORCH_CHECK(work->wait(bounded ? opts.timeout : kNoTimeout),
              "chorus: monitored_barrier: not every rank arrived within ", opts.timeout.count(),
              " ms");
}

}  // namespace chorus::torch_backend
