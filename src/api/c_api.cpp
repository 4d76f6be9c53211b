// The C ABI (include/chorus/chorus_c.h) over chorus::Communicator: every function catches
// everything and maps it to a chorusResult_t, keeping the message for chorusGetLastError.
#include "chorus/chorus_c.h"

#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include "api/communicator_impl.h"
#include "api/group.h"
#include "chorus/chorus.h"

struct chorusComm {
  explicit chorusComm(chorus::Communicator c) : comm(std::move(c)) {}
  chorus::Communicator comm;
  std::mutex mutex;  // guards the members below
  std::string lastError;
  chorusResult_t failure = chorusSuccess;  // code of the call that found it failed
};

namespace {

using chorus::api::FailureOrigin;

static_assert(sizeof(chorusUniqueId) == sizeof(chorus::UniqueId));

// Where a CommError arose, which decides its result code.
enum class Phase { init, call, groupEnd };

thread_local std::string threadError;

chorusResult_t record(chorusComm_t comm, chorusResult_t code, const char* message) {
  threadError = message;
  if (comm != nullptr) {
    std::lock_guard lock(comm->mutex);
    comm->lastError = message;
    if (comm->failure == chorusSuccess && chorus::Communicator::Impl::of(comm->comm).failed())
      comm->failure = code;
  }
  return code;
}

chorusResult_t fromOrigin(FailureOrigin origin) {
  switch (origin) {
    case FailureOrigin::remote:
      return chorusRemoteError;
    case FailureOrigin::system:
      return chorusSystemError;
    default:
      return chorusInvalidUsage;
  }
}

// CommError: set-up failures are system errors; a call on a communicator that had failed
// before is invalid usage; otherwise it depends on who failed the group first.
chorusResult_t commErrorCode(chorusComm_t comm, Phase phase, bool failedBefore) {
  if (phase == Phase::init) return chorusSystemError;
  if (phase == Phase::groupEnd) return fromOrigin(chorus::api::lastGroupFailureOrigin());
  if (comm == nullptr || failedBefore) return chorusInvalidUsage;
  return fromOrigin(chorus::Communicator::Impl::of(comm->comm).failureOrigin());
}

template <class Body>
chorusResult_t guard(chorusComm_t comm, Phase phase, Body&& body) {
  bool failedBefore = false;
  try {
    if (comm != nullptr)
      failedBefore = chorus::Communicator::Impl::of(comm->comm).failureReported();
    body();
    return chorusSuccess;
  } catch (const chorus::OptionError& e) {
    return record(comm, chorusInvalidArgument, e.what());
  } catch (const chorus::TimeoutError& e) {
    return record(comm, chorusTimeout, e.what());
  } catch (const chorus::CommError& e) {
    return record(comm, commErrorCode(comm, phase, failedBefore), e.what());
  } catch (const chorus::UserError& e) {  // plan files and CHORUS_ALGO entries
    return record(comm, chorusInvalidArgument, e.what());
  } catch (const chorus::InternalError& e) {
    return record(comm, chorusInternalError, e.what());
  } catch (const std::bad_alloc&) {
    return record(comm, chorusSystemError, "out of memory");
  } catch (const std::system_error& e) {
    return record(comm, chorusSystemError, e.what());
  } catch (const std::exception& e) {
    return record(comm, chorusInternalError, e.what());
  } catch (...) {
    return record(comm, chorusInternalError, "unknown exception inside chorus");
  }
}

chorusResult_t invalid(chorusComm_t comm, const std::string& message) {
  return record(comm, chorusInvalidArgument, message.c_str());
}

// NCCL numbering (chorus_c.h) -> chorus::DataType.
std::optional<chorus::DataType> dataTypeOf(chorusDataType_t type) {
  using chorus::DataType;
  switch (static_cast<int>(type)) {
    case chorusInt8:
      return DataType::int8;
    case chorusUint8:
      return DataType::uint8;
    case chorusInt32:
      return DataType::int32;
    case chorusUint32:
      return DataType::uint32;
    case chorusInt64:
      return DataType::int64;
    case chorusUint64:
      return DataType::uint64;
    case chorusFloat16:
      return DataType::float16;
    case chorusFloat32:
      return DataType::float32;
    case chorusFloat64:
      return DataType::float64;
    case chorusBfloat16:
      return DataType::bfloat16;
    default:
      return std::nullopt;
  }
}

std::optional<chorus::ReduceOp> reduceOpOf(chorusRedOp_t op) {
  using chorus::ReduceOp;
  switch (static_cast<int>(op)) {
    case chorusSum:
      return ReduceOp::sum;
    case chorusProd:
      return ReduceOp::prod;
    case chorusMax:
      return ReduceOp::max;
    case chorusMin:
      return ReduceOp::min;
    case chorusAvg:
      return ReduceOp::avg;
    default:
      return std::nullopt;
  }
}

// Checks what every communication call shares; returns chorusSuccess or the failure it recorded.
// (A stream is checked by the communicator: only executor "cuda" takes one.)
chorusResult_t checkCall(const char* name, chorusComm_t comm) {
  if (comm == nullptr) return invalid(nullptr, fmt::format("{}: comm is NULL", name));
  return chorusSuccess;
}

// The chorus type of a C datatype; OptionError (chorusInvalidArgument through guard) when it
// is not one.
chorus::DataType convertType(const char* name, chorusDataType_t type) {
  if (const auto t = dataTypeOf(type)) return *t;
  throw chorus::OptionError(fmt::format("{}: datatype {} is not a chorusDataType_t (0 to {})", name,
                                        static_cast<int>(type), chorusNumTypes - 1));
}

chorus::ReduceOp convertOp(const char* name, chorusRedOp_t op) {
  if (const auto o = reduceOpOf(op)) return *o;
  throw chorus::OptionError(
      fmt::format("{}: reduction operator {} is not a chorusRedOp_t (0 to {})", name,
                  static_cast<int>(op), chorusNumOps - 1));
}

}  // namespace

extern "C" {

chorusResult_t chorusGetVersion(int* version) {
  if (version == nullptr) return invalid(nullptr, "chorusGetVersion: version is NULL");
  *version = CHORUS_VERSION_CODE;
  return chorusSuccess;
}

const char* chorusGetErrorString(chorusResult_t result) {
  switch (result) {
    case chorusSuccess:
      return "no error";
    case chorusSystemError:
      return "system error: a system call or transport failed";
    case chorusInternalError:
      return "internal error: a bug in chorus";
    case chorusInvalidArgument:
      return "invalid argument: bad pointer, count, type, operator, rank or option";
    case chorusInvalidUsage:
      return "invalid usage: wrong call order, failed communicator or mismatched calls";
    case chorusRemoteError:
      return "remote error: a peer failed or aborted";
    case chorusInProgress:
      return "operation in progress";
    case chorusTimeout:
      return "timeout: a wait passed CHORUS_TIMEOUT";
    default:
      return "unknown chorusResult_t value";
  }
}

const char* chorusGetLastError(chorusComm_t comm) {
  if (comm == nullptr) return threadError.c_str();
  std::lock_guard lock(comm->mutex);
  if (comm->lastError.empty()) {
    try {
      comm->lastError = chorus::Communicator::Impl::of(comm->comm).asyncError();
    } catch (...) {
      comm->lastError = "could not read the communicator's error";
    }
  }
  return comm->lastError.c_str();
}

chorusResult_t chorusGetUniqueId(chorusUniqueId* uniqueId) {
  if (uniqueId == nullptr) return invalid(nullptr, "chorusGetUniqueId: uniqueId is NULL");
  return guard(nullptr, Phase::init, [&] {
    const chorus::UniqueId id = chorus::getUniqueId();
    std::memcpy(uniqueId->internal, id.bytes.data(), id.bytes.size());
  });
}

chorusResult_t chorusCommInitRank(chorusComm_t* comm, int nranks, chorusUniqueId commId, int rank) {
  if (comm == nullptr) return invalid(nullptr, "chorusCommInitRank: comm is NULL");
  *comm = nullptr;
  return guard(nullptr, Phase::init, [&] {
    chorus::UniqueId id;
    std::memcpy(id.bytes.data(), commId.internal, id.bytes.size());
    *comm = new chorusComm(chorus::Communicator::initRank(nranks, id, rank));
  });
}

chorusResult_t chorusCommInitAll(chorusComm_t* comms, int ndev, const int* devlist) {
  (void)devlist;  // ranks are threads of this process; there are no devices to pick
  if (comms == nullptr) return invalid(nullptr, "chorusCommInitAll: comms is NULL");
  return guard(nullptr, Phase::init, [&] {
    std::vector<chorus::Communicator> made = chorus::Communicator::initAll(ndev);
    std::vector<std::unique_ptr<chorusComm>> wrapped;
    for (auto& c : made)
      wrapped.push_back(std::make_unique<chorusComm>(std::move(c)));
    for (std::size_t i = 0; i < wrapped.size(); ++i)
      comms[i] = wrapped[i].release();
  });
}

chorusResult_t chorusCommInitFromEnv(chorusComm_t* comm) {
  if (comm == nullptr) return invalid(nullptr, "chorusCommInitFromEnv: comm is NULL");
  *comm = nullptr;
  return guard(nullptr, Phase::init,
               [&] { *comm = new chorusComm(chorus::Communicator::initFromEnvironment()); });
}

chorusResult_t chorusCommDestroy(chorusComm_t comm) {
  if (comm == nullptr) return invalid(nullptr, "chorusCommDestroy: comm is NULL");
  delete comm;
  return chorusSuccess;
}

chorusResult_t chorusCommAbort(chorusComm_t comm) {
  if (comm == nullptr) return invalid(nullptr, "chorusCommAbort: comm is NULL");
  const chorusResult_t result =
      guard(comm, Phase::call, [&] { comm->comm.abort("chorusCommAbort was called"); });
  delete comm;
  return result;
}

chorusResult_t chorusCommGetAsyncError(chorusComm_t comm, chorusResult_t* asyncError) {
  if (comm == nullptr) return invalid(nullptr, "chorusCommGetAsyncError: comm is NULL");
  if (asyncError == nullptr) return invalid(comm, "chorusCommGetAsyncError: asyncError is NULL");
  return guard(comm, Phase::call, [&] {
    const auto& impl = chorus::Communicator::Impl::of(comm->comm);
    std::lock_guard lock(comm->mutex);
    if (!impl.failed())
      *asyncError = chorusSuccess;
    else if (comm->failure != chorusSuccess)
      *asyncError = comm->failure;
    else
      *asyncError = fromOrigin(impl.failureOrigin());
  });
}

chorusResult_t chorusCommCount(const chorusComm_t comm, int* count) {
  if (comm == nullptr) return invalid(nullptr, "chorusCommCount: comm is NULL");
  if (count == nullptr) return invalid(comm, "chorusCommCount: count is NULL");
  *count = comm->comm.size();
  return chorusSuccess;
}

chorusResult_t chorusCommUserRank(const chorusComm_t comm, int* rank) {
  if (comm == nullptr) return invalid(nullptr, "chorusCommUserRank: comm is NULL");
  if (rank == nullptr) return invalid(comm, "chorusCommUserRank: rank is NULL");
  *rank = comm->comm.rank();
  return chorusSuccess;
}

chorusResult_t chorusAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                               chorusDataType_t datatype, chorusRedOp_t op, chorusComm_t comm,
                               chorusStream_t stream) {
  if (auto r = checkCall("chorusAllReduce", comm)) return r;
  return guard(comm, Phase::call, [&] {
    const chorus::DataType type = convertType("chorusAllReduce", datatype);
    const chorus::ReduceOp reduceOp = convertOp("chorusAllReduce", op);
    comm->comm.allReduce(sendbuff, recvbuff, count, type, reduceOp, stream);
  });
}

chorusResult_t chorusBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                               chorusDataType_t datatype, int root, chorusComm_t comm,
                               chorusStream_t stream) {
  if (auto r = checkCall("chorusBroadcast", comm)) return r;
  return guard(comm, Phase::call, [&] {
    const chorus::DataType type = convertType("chorusBroadcast", datatype);
    comm->comm.broadcast(sendbuff, recvbuff, count, type, root, stream);
  });
}

chorusResult_t chorusReduce(const void* sendbuff, void* recvbuff, size_t count,
                            chorusDataType_t datatype, chorusRedOp_t op, int root,
                            chorusComm_t comm, chorusStream_t stream) {
  if (auto r = checkCall("chorusReduce", comm)) return r;
  return guard(comm, Phase::call, [&] {
    const chorus::DataType type = convertType("chorusReduce", datatype);
    const chorus::ReduceOp reduceOp = convertOp("chorusReduce", op);
    comm->comm.reduce(sendbuff, recvbuff, count, type, reduceOp, root, stream);
  });
}

chorusResult_t chorusAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                               chorusDataType_t datatype, chorusComm_t comm,
                               chorusStream_t stream) {
  if (auto r = checkCall("chorusAllGather", comm)) return r;
  return guard(comm, Phase::call, [&] {
    const chorus::DataType type = convertType("chorusAllGather", datatype);
    comm->comm.allGather(sendbuff, recvbuff, sendcount, type, stream);
  });
}

chorusResult_t chorusReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                   chorusDataType_t datatype, chorusRedOp_t op, chorusComm_t comm,
                                   chorusStream_t stream) {
  if (auto r = checkCall("chorusReduceScatter", comm)) return r;
  return guard(comm, Phase::call, [&] {
    const chorus::DataType type = convertType("chorusReduceScatter", datatype);
    const chorus::ReduceOp reduceOp = convertOp("chorusReduceScatter", op);
    comm->comm.reduceScatter(sendbuff, recvbuff, recvcount, type, reduceOp, stream);
  });
}

chorusResult_t chorusAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                              chorusDataType_t datatype, chorusComm_t comm, chorusStream_t stream) {
  if (auto r = checkCall("chorusAllToAll", comm)) return r;
  return guard(comm, Phase::call, [&] {
    const chorus::DataType type = convertType("chorusAllToAll", datatype);
    comm->comm.allToAll(sendbuff, recvbuff, count, type, stream);
  });
}

chorusResult_t chorusSend(const void* sendbuff, size_t count, chorusDataType_t datatype, int peer,
                          chorusComm_t comm, chorusStream_t stream) {
  if (auto r = checkCall("chorusSend", comm)) return r;
  return guard(comm, Phase::call, [&] {
    const chorus::DataType type = convertType("chorusSend", datatype);
    comm->comm.send(sendbuff, count, type, peer, stream);
  });
}

chorusResult_t chorusRecv(void* recvbuff, size_t count, chorusDataType_t datatype, int peer,
                          chorusComm_t comm, chorusStream_t stream) {
  if (auto r = checkCall("chorusRecv", comm)) return r;
  return guard(comm, Phase::call, [&] {
    const chorus::DataType type = convertType("chorusRecv", datatype);
    comm->comm.recv(recvbuff, count, type, peer, stream);
  });
}

chorusResult_t chorusMemAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return invalid(nullptr, "chorusMemAlloc: ptr is NULL");
  return guard(nullptr, Phase::init, [&] { *ptr = chorus::memAlloc(size); });
}

chorusResult_t chorusMemFree(void* ptr) {
  return guard(nullptr, Phase::init, [&] { chorus::memFree(ptr); });
}

chorusResult_t chorusGroupStart(void) {
  chorus::groupStart();
  return chorusSuccess;
}

chorusResult_t chorusGroupEnd(void) {
  if (!chorus::api::groupActive())
    return record(nullptr, chorusInvalidUsage,
                  "chorusGroupEnd: no chorusGroupStart() is open on this thread; call "
                  "chorusGroupStart() first");
  return guard(nullptr, Phase::groupEnd, [] { chorus::groupEnd(); });
}

}  // extern "C"
