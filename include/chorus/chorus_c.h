/* chorus C ABI, shaped like NCCL's so that porting is a prefix change (nccl -> chorus). On the
 * default executors buffers are host memory and the stream must be NULL: every call has
 * finished when it returns. On executor "cuda" (CHORUS_EXECUTOR=cuda) buffers are GPU memory
 * and a stream (a cudaStream_t) queues the call on it, as NCCL does; NULL still waits for the
 * call (docs/gpu.md). Each function returns a chorusResult_t;
 * chorusGetLastError(comm) gives the message of the last failure on that communicator (or of
 * the last failure on this thread when comm is NULL). */
#ifndef CHORUS_C_H_
#define CHORUS_C_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CHORUS_MAJOR 0
#define CHORUS_MINOR 1
#define CHORUS_PATCH 0
#define CHORUS_VERSION_CODE (CHORUS_MAJOR * 10000 + CHORUS_MINOR * 100 + CHORUS_PATCH)

typedef struct chorusComm* chorusComm_t;
typedef void* chorusStream_t; /* a cudaStream_t on executor "cuda"; else NULL */

#define CHORUS_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[CHORUS_UNIQUE_ID_BYTES];
} chorusUniqueId;

/* Same numbering as ncclResult_t (chorusTimeout is chorus's own). How failures map:
 *   bad arguments or options (incl. plan files, CHORUS_ALGO)   -> chorusInvalidArgument
 *   a wait passed its deadline on this rank                    -> chorusTimeout
 *   another rank failed or aborted first                       -> chorusRemoteError
 *   mismatched calls noticed here; a call on a communicator
 *   that had already failed; chorusGroupEnd without a start    -> chorusInvalidUsage
 *   creating a communicator failed (store, /dev/shm), or a
 *   transport failed here before any rank failed the group     -> chorusSystemError
 *   a chorus bug                                               -> chorusInternalError */
typedef enum {
  chorusSuccess = 0,
  chorusSystemError = 2,     /* a system call or transport failed (e.g. /dev/shm full) */
  chorusInternalError = 3,   /* a bug in chorus */
  chorusInvalidArgument = 4, /* bad pointer, count, type, op, rank or option */
  chorusInvalidUsage = 5,    /* wrong call order, failed communicator, mismatched calls */
  chorusRemoteError = 6,     /* a peer died or aborted */
  chorusInProgress = 7,
  chorusTimeout = 8, /* a wait passed CHORUS_TIMEOUT */
  chorusNumResults = 9
} chorusResult_t;

/* Same numbering as ncclDataType_t. */
typedef enum {
  chorusInt8 = 0,
  chorusChar = 0,
  chorusUint8 = 1,
  chorusInt32 = 2,
  chorusInt = 2,
  chorusUint32 = 3,
  chorusInt64 = 4,
  chorusUint64 = 5,
  chorusFloat16 = 6,
  chorusHalf = 6,
  chorusFloat32 = 7,
  chorusFloat = 7,
  chorusFloat64 = 8,
  chorusDouble = 8,
  chorusBfloat16 = 9,
  chorusNumTypes = 10
} chorusDataType_t;

/* Same numbering as ncclRedOp_t. */
typedef enum {
  chorusSum = 0,
  chorusProd = 1,
  chorusMax = 2,
  chorusMin = 3,
  chorusAvg = 4,
  chorusNumOps = 5
} chorusRedOp_t;

chorusResult_t chorusGetVersion(int* version);
const char* chorusGetErrorString(chorusResult_t result);
const char* chorusGetLastError(chorusComm_t comm);

chorusResult_t chorusGetUniqueId(chorusUniqueId* uniqueId);
chorusResult_t chorusCommInitRank(chorusComm_t* comm, int nranks, chorusUniqueId commId, int rank);
/* ndev ranks as threads of this process; devlist is ignored (may be NULL). */
chorusResult_t chorusCommInitAll(chorusComm_t* comms, int ndev, const int* devlist);
/* Rank, size and rendezvous from chorus launch, mpirun or torchrun variables. */
chorusResult_t chorusCommInitFromEnv(chorusComm_t* comm);
/* Frees this rank's resources without waiting for peers. */
chorusResult_t chorusCommDestroy(chorusComm_t comm);
/* As ncclCommAbort: fails the peers' pending and later calls (chorusRemoteError), then frees
 * comm. No other thread may be inside a call on comm. */
chorusResult_t chorusCommAbort(chorusComm_t comm);
/* chorusSuccess while healthy, else the code of the failure (chorusRemoteError if a peer's). */
chorusResult_t chorusCommGetAsyncError(chorusComm_t comm, chorusResult_t* asyncError);
chorusResult_t chorusCommCount(const chorusComm_t comm, int* count);
chorusResult_t chorusCommUserRank(const chorusComm_t comm, int* rank);

chorusResult_t chorusAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                               chorusDataType_t datatype, chorusRedOp_t op, chorusComm_t comm,
                               chorusStream_t stream);
chorusResult_t chorusBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                               chorusDataType_t datatype, int root, chorusComm_t comm,
                               chorusStream_t stream);
chorusResult_t chorusReduce(const void* sendbuff, void* recvbuff, size_t count,
                            chorusDataType_t datatype, chorusRedOp_t op, int root,
                            chorusComm_t comm, chorusStream_t stream);
chorusResult_t chorusAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                               chorusDataType_t datatype, chorusComm_t comm, chorusStream_t stream);
chorusResult_t chorusReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                   chorusDataType_t datatype, chorusRedOp_t op, chorusComm_t comm,
                                   chorusStream_t stream);
/* As MSCCL's ncclAllToAll: count elements to and from each peer. */
chorusResult_t chorusAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                              chorusDataType_t datatype, chorusComm_t comm, chorusStream_t stream);
chorusResult_t chorusSend(const void* sendbuff, size_t count, chorusDataType_t datatype, int peer,
                          chorusComm_t comm, chorusStream_t stream);
chorusResult_t chorusRecv(void* recvbuff, size_t count, chorusDataType_t datatype, int peer,
                          chorusComm_t comm, chorusStream_t stream);
/* As ncclMemAlloc/ncclMemFree: host memory that the ranks on this host can map (see
 * chorus::memAlloc in chorus.h); faster collective buffers on shm. With CHORUS_EXECUTOR=cuda
 * (chorus built with CUDA): device memory of the current GPU that peers can map. */
chorusResult_t chorusMemAlloc(void** ptr, size_t size);
chorusResult_t chorusMemFree(void* ptr);
chorusResult_t chorusGroupStart(void);
chorusResult_t chorusGroupEnd(void);

#ifdef __cplusplus
}
#endif

#endif /* CHORUS_C_H_ */
