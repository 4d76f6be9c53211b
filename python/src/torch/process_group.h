// ProcessGroupChorus: the torch.distributed backend "chorus" (a c10d::Backend of PyTorch 2.x over
// one chorus::Communicator). Every call is checked on the calling thread, then queued on an
// OrderedExecutor and returns a Work that completes in call order (docs/torch.md).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "api/ordered_executor.h"
#include "chorus/chorus.h"
#include "torch/call_watchdog.h"
#include "torch/tagged_p2p.h"

namespace chorus::torch_backend {

class ProcessGroupChorus : public c10d::Backend {
 public:
  // Collective over the `size` members of the group: connects through `store` (the prefix store
  // torch.distributed made for this group). `timeout` bounds every wait unless CHORUS_TIMEOUT is
  // set. Throws chorus errors (OptionError for bad CHORUS_* variables, TimeoutError, CommError).
  ProcessGroupChorus(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                     std::chrono::milliseconds timeout);
  // Runs every queued call first (a dead peer makes them fail fast), then frees the communicator.
  ~ProcessGroupChorus() override;
  // destroy_process_group(): runs every queued call, then frees the communicator, so the peers
  // learn at once that this rank has left. Later calls raise.
  void shutdown() override;
  // ProcessGroup.abort(): fails the group's running and later calls, on every rank.
  void abort() override;

  const std::string getBackendName() const override { return "chorus"; }

  // torch's _coalescing_manager and batch_isend_irecv: the calls made between the two run as
  // usual; endCoalescing() returns one Work that completes when all of them have.
  bool supportsCoalescing() const override { return true; }
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputTensors,
                                           std::vector<at::Tensor>& inputTensors,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& outputBuffer, at::Tensor& inputBuffer,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputTensors,
                                        std::vector<at::Tensor>& inputTensors,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputTensors,
                                         std::vector<std::vector<at::Tensor>>& inputTensors,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputTensors,
                                                std::vector<std::vector<at::Tensor>>& inputTensors,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& outputTensor, at::Tensor& inputTensor,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& outputTensor, at::Tensor& inputTensor,
                                               std::vector<int64_t>& outputSplitSizes,
                                               std::vector<int64_t>& inputSplitSizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputTensors,
                                          std::vector<at::Tensor>& inputTensors,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  // Every rank of the group calls it: a barrier bounded by opts.timeout.
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) override;

  // The plan of the most recent collective (which algorithm, chosen how). Waits for every call
  // queued so far.
  PlanInfo lastPlan();

 private:
  using Kind = api::OrderedExecutor::Kind;
  // Queues `run` (which issues the chorus calls) and returns its Work; `onSuccess` runs after it
  // on the same thread (copies staged results back). `outputs` are the Work's result().
  // `timeout` (the call's opts.timeout, or kUnsetTimeout) arms the watchdog while it runs.
  c10::intrusive_ptr<c10d::Work> submit(c10d::OpType opType, Kind kind,
                                        std::chrono::milliseconds timeout,
                                        std::vector<at::Tensor> outputs, std::function<void()> run,
                                        std::function<void()> onSuccess = {});
  void checkPeer(int peer, const char* call, const char* argument) const;

  // The communicator; empty after shutdown().
  Communicator& comm();
  // Runs `wait` with the GIL released when this thread holds it.
  static void withoutTheGil(const std::function<void()>& wait);
  // Aborts the communicator, if there still is one (watchdog, point-to-point failures).
  void abortComm(const std::string& reason);

  std::optional<Communicator> comm_;
  // Outlives every running call (executor_ is destroyed first).
  CallWatchdog watchdog_;
  // send/recv (tags, progress of their own); empty after shutdown().
  TaggedP2p& p2p();
  std::unique_ptr<TaggedP2p> p2p_;
  std::uint8_t barrierByte_ = 0;
  // Between startCoalescing() and endCoalescing(): the Works of the calls made since.
  bool coalescing_ = false;
  std::vector<c10::intrusive_ptr<c10d::Work>> coalesced_;
  // Declared last: drained before comm_ goes away. Works share it, so wait() outlives the group.
  std::shared_ptr<api::OrderedExecutor> executor_;
};

}  // namespace chorus::torch_backend
