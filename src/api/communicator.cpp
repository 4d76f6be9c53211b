// The public chorus::Communicator: argument checks and plan choice at the call, then either run
// now or queue in the calling thread's group.
#include <fmt/format.h>

#include "api/communicator_impl.h"
#include "api/group.h"

namespace chorus {

namespace {

void submit(Communicator::Impl& impl, const api::CollectiveCall& call) {
  api::PreparedCollective prepared = impl.prepare(call);
  if (api::groupActive()) {
    impl.retain(prepared);
    api::enqueueCall(&impl, std::move(prepared));
  } else {
    impl.run(prepared);
  }
}

void submit(Communicator::Impl& impl, const api::P2pCall& call) {
  impl.checkP2p(call);
  impl.requireHealthy(call.isSend ? "send" : "recv");
  if (api::groupActive())
    api::enqueueCall(&impl, call);
  else
    impl.runP2p({&call, 1});
}

}  // namespace

Communicator::Communicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;
Communicator::~Communicator() = default;

int Communicator::rank() const {
  return Impl::of(*this).rank();
}

int Communicator::size() const {
  return Impl::of(*this).size();
}

void Communicator::allReduce(const void* sendbuf, void* recvbuf, std::size_t count, DataType type,
                             ReduceOp op, Stream stream) {
  submit(Impl::of(*this),
         {ir::CollectiveKind::allreduce, sendbuf, recvbuf, count, type, op, /*root=*/0, stream});
}

void Communicator::allGather(const void* sendbuf, void* recvbuf, std::size_t sendcount,
                             DataType type, Stream stream) {
  submit(Impl::of(*this), {ir::CollectiveKind::allgather, sendbuf, recvbuf, sendcount, type,
                           ReduceOp::sum, /*root=*/0, stream});
}

void Communicator::reduceScatter(const void* sendbuf, void* recvbuf, std::size_t recvcount,
                                 DataType type, ReduceOp op, Stream stream) {
  submit(Impl::of(*this), {ir::CollectiveKind::reducescatter, sendbuf, recvbuf, recvcount, type, op,
                           /*root=*/0, stream});
}

void Communicator::allToAll(const void* sendbuf, void* recvbuf, std::size_t count, DataType type,
                            Stream stream) {
  submit(Impl::of(*this), {ir::CollectiveKind::alltoall, sendbuf, recvbuf, count, type,
                           ReduceOp::sum, /*root=*/0, stream});
}

void Communicator::broadcast(const void* sendbuf, void* recvbuf, std::size_t count, DataType type,
                             int root, Stream stream) {
  submit(Impl::of(*this), {ir::CollectiveKind::broadcast, sendbuf, recvbuf, count, type,
                           ReduceOp::sum, root, stream});
}

void Communicator::reduce(const void* sendbuf, void* recvbuf, std::size_t count, DataType type,
                          ReduceOp op, int root, Stream stream) {
  submit(Impl::of(*this),
         {ir::CollectiveKind::reduce, sendbuf, recvbuf, count, type, op, root, stream});
}

void Communicator::send(const void* buf, std::size_t count, DataType type, int peer,
                        Stream stream) {
  submit(Impl::of(*this), api::P2pCall{true, buf, nullptr, count, type, peer, stream});
}

void Communicator::recv(void* buf, std::size_t count, DataType type, int peer, Stream stream) {
  submit(Impl::of(*this), api::P2pCall{false, nullptr, buf, count, type, peer, stream});
}

void Communicator::abort(std::string_view reason) {
  Impl::of(*this).abort(reason);
}

std::string Communicator::asyncError() const {
  return Impl::of(*this).asyncError();
}

std::uint64_t Communicator::sequence() const {
  return Impl::of(*this).sequence();
}

PlanInfo Communicator::lastPlan() const {
  return Impl::of(*this).lastPlan();
}

}  // namespace chorus
