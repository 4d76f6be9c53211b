// Vectorized element-wise reduction kernels (see reduce_kernels.h for the contracts).
//
// Algorithm:
//   1. Each data type maps to an element kind: a storage type, a compute type, and load/store
//      between memory and one GCC vector of the compute type (float16/bfloat16 widen to float
//      lanes with the branch-free converters of datatype.h).
//   2. Loops walk whole vectors with unaligned loads/stores (memcpy); the partial last vector
//      goes through zero-padded stack buffers, so there is one code path per (type, op).
//      A vector is fully loaded before its result is stored, which makes dst == a / dst == b safe.
//   3. Everything is instantiated twice: with 16-byte vectors for baseline x86-64 (SSE2) and with
//      32-byte vectors inside [[gnu::target("avx2")]] entry points; the public functions pick one
//      per call from a flag set once from the CPU (cpuid). Helpers are always_inline so each
//      entry point gets its own copy of the loops compiled for its instruction set.
// The loops use GCC vector extensions rather than relying on the auto-vectorizer, so -O2 (the
// project's RelWithDebInfo default) already gives the vector code; no per-file -O3 is needed.
#include "runtime/reduce_kernels.h"

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "support/error.h"

// 32-byte vectors in baseline-ISA functions would change the calling convention if they crossed
// a call; every function taking one here is always_inline, so the note does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CHORUS_KERNELS_HAVE_AVX2 1
#define CHORUS_TARGET_AVX2 [[gnu::target("avx2")]]
#else
#define CHORUS_KERNELS_HAVE_AVX2 0
#define CHORUS_TARGET_AVX2
#endif

#define CHORUS_KERNEL_INLINE [[gnu::always_inline]] inline

namespace chorus::runtime {

namespace {

// reduceMany folds the sources over blocks of this many bytes of compute type (stays in L1).
constexpr std::size_t kBlockBytes = 2048;

template <class T, std::size_t kBytes>
struct VectorOf {
  typedef T type __attribute__((vector_size(kBytes)));
};
template <class T, std::size_t kBytes>
using Vector = typename VectorOf<T, kBytes>::type;

// Element kind for types computed as themselves, kBytes per vector.
template <class T, std::size_t kBytes>
struct PlainKind {
  using Storage = T;
  using Compute = T;
  using V = Vector<T, kBytes>;
  static constexpr std::size_t kLanes = kBytes / sizeof(T);

  CHORUS_KERNEL_INLINE static V load(const Storage* p) {
    V v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  }
  CHORUS_KERNEL_INLINE static void store(Storage* p, const V& v) { std::memcpy(p, &v, sizeof(v)); }
  // Rounds a computed vector to what storing and reloading it would give.
  CHORUS_KERNEL_INLINE static V round(const V& v) { return v; }
};

// Zero-extends 16-bit lanes to 32-bit lanes by interleaving with zeros (little-endian): lane k
// of the result takes index k / 2 of `narrow` when k is even, a zero otherwise. GCC turns this
// into punpcklwd (SSE2) or vpmovzxwd (AVX2); __builtin_convertvector is slower on SSE2 here.
constexpr int interleaveIndex(std::size_t k, std::size_t lanes) {
  return static_cast<int>(k % 2 == 0 ? k / 2 : lanes + k / 2);
}
template <class Wide16, class Narrow, std::size_t... kIndex>
CHORUS_KERNEL_INLINE Wide16 widenLanes(const Narrow& narrow, std::index_sequence<kIndex...>) {
  return __builtin_shufflevector(narrow, Narrow{},
                                 interleaveIndex(kIndex, sizeof...(kIndex) / 2)...);
}

// Element kind for float16 (kIsHalf) or bfloat16: 16-bit storage, float lanes.
template <bool kIsHalf, std::size_t kBytes>
struct Narrow16Kind {
  using Storage = std::uint16_t;
  using Compute = float;
  using V = Vector<float, kBytes>;
  static constexpr std::size_t kLanes = kBytes / 4;
  using Bits32 = Vector<std::uint32_t, kBytes>;
  using Int32 = Vector<std::int32_t, kBytes>;
  using Bits16 = Vector<std::uint16_t, kBytes / 2>;  // kLanes lanes, the stored form
  using Bits16Wide = Vector<std::uint16_t, kBytes>;  // a Bits32 as 16-bit lanes

  CHORUS_KERNEL_INLINE static Bits32 toFloatBits(const Bits32& bits) {
    if constexpr (kIsHalf) {
      return detail::halfBitsToFloatBits<Bits32, Int32, V>(bits);
    } else {
      return detail::bfloat16BitsToFloatBits(bits);
    }
  }
  CHORUS_KERNEL_INLINE static Bits32 fromFloatBits(const Bits32& bits) {
    if constexpr (kIsHalf) {
      return detail::floatBitsToHalfBits<Bits32, Int32, V>(bits);
    } else {
      return detail::floatBitsToBfloat16Bits<Bits32, Int32>(bits);
    }
  }
  CHORUS_KERNEL_INLINE static V load(const Storage* p) {
    Bits16 h;
    std::memcpy(&h, p, sizeof(h));
    const Bits16Wide wide = widenLanes<Bits16Wide>(h, std::make_index_sequence<2 * kLanes>());
    return detail::bitsAs<V>(toFloatBits(detail::bitsAs<Bits32>(wide)));
  }
  CHORUS_KERNEL_INLINE static void store(Storage* p, const V& v) {
    const Bits32 bits = fromFloatBits(detail::bitsAs<Bits32>(v));
    const Bits16 h = __builtin_convertvector(bits, Bits16);  // keeps the low 16 bits
    std::memcpy(p, &h, sizeof(h));
  }
  CHORUS_KERNEL_INLINE static V round(const V& v) {
    return detail::bitsAs<V>(toFloatBits(fromFloatBits(detail::bitsAs<Bits32>(v))));
  }
};

// One reduction step on whole vectors of compute type C.
template <ReduceOp kOp, class C, class V>
CHORUS_KERNEL_INLINE V applyOp(const V& a, const V& b) {
  if constexpr (kOp == ReduceOp::sum || kOp == ReduceOp::avg || kOp == ReduceOp::prod) {
    if constexpr (std::is_integral_v<C>) {
      // Unsigned lanes: wraparound is defined and bit-identical to two's complement.
      using U = Vector<std::make_unsigned_t<C>, sizeof(V)>;
      const U ua = detail::bitsAs<U>(a);
      const U ub = detail::bitsAs<U>(b);
      return detail::bitsAs<V>(kOp == ReduceOp::prod ? U(ua * ub) : U(ua + ub));
    } else {
      return kOp == ReduceOp::prod ? V(a * b) : V(a + b);
    }
  } else if constexpr (std::is_integral_v<C>) {
    return kOp == ReduceOp::min ? (b < a ? b : a) : (a < b ? b : a);
  } else {
    // std::min(a, b) is (b < a ? b : a); also take b when it is NaN, so any NaN wins.
    return kOp == ReduceOp::min ? ((b < a) | (b != b) ? b : a) : ((a < b) | (b != b) ? b : a);
  }
}

// Elements covered by whole vectors; the rest (< kLanes) goes through padded buffers.
template <class Kind>
CHORUS_KERNEL_INLINE std::size_t wholeVectorCount(std::size_t count) {
  return count - count % Kind::kLanes;
}

template <class Kind, ReduceOp kOp>
CHORUS_KERNEL_INLINE void reduceTwo(void* dstRaw, const void* aRaw, const void* bRaw,
                                    std::size_t count) {
  using Storage = typename Kind::Storage;
  using Compute = typename Kind::Compute;
  auto* dst = static_cast<Storage*>(dstRaw);
  const auto* a = static_cast<const Storage*>(aRaw);
  const auto* b = static_cast<const Storage*>(bRaw);
  const std::size_t whole = wholeVectorCount<Kind>(count);
  std::size_t i = 0;
  for (; i + 2 * Kind::kLanes <= whole; i += 2 * Kind::kLanes) {
    const auto x0 = Kind::load(a + i);
    const auto x1 = Kind::load(a + i + Kind::kLanes);
    const auto y0 = Kind::load(b + i);
    const auto y1 = Kind::load(b + i + Kind::kLanes);
    Kind::store(dst + i, applyOp<kOp, Compute>(x0, y0));
    Kind::store(dst + i + Kind::kLanes, applyOp<kOp, Compute>(x1, y1));
  }
  for (; i < whole; i += Kind::kLanes) {
    Kind::store(dst + i, applyOp<kOp, Compute>(Kind::load(a + i), Kind::load(b + i)));
  }
  const std::size_t rest = count - whole;
  if (rest != 0) {
    Storage ta[Kind::kLanes] = {};
    Storage tb[Kind::kLanes] = {};
    std::memcpy(ta, a + whole, rest * sizeof(Storage));
    std::memcpy(tb, b + whole, rest * sizeof(Storage));
    Kind::store(ta, applyOp<kOp, Compute>(Kind::load(ta), Kind::load(tb)));
    std::memcpy(dst + whole, ta, rest * sizeof(Storage));
  }
}

template <class Kind>
CHORUS_KERNEL_INLINE void divideAll(void* dataRaw, std::size_t count, int divisor) {
  using Storage = typename Kind::Storage;
  using Compute = typename Kind::Compute;
  using V = typename Kind::V;
  auto* data = static_cast<Storage*>(dataRaw);
  const V d = V{} + static_cast<Compute>(divisor);
  const std::size_t whole = wholeVectorCount<Kind>(count);
  for (std::size_t i = 0; i < whole; i += Kind::kLanes) {
    Kind::store(data + i, Kind::load(data + i) / d);
  }
  const std::size_t rest = count - whole;
  if (rest != 0) {
    Storage t[Kind::kLanes] = {};
    std::memcpy(t, data + whole, rest * sizeof(Storage));
    Kind::store(t, Kind::load(t) / d);
    std::memcpy(data + whole, t, rest * sizeof(Storage));
  }
}

// Left fold over nsrc >= 2 sources, one L1-sized block at a time; each block of every source
// is read before the block of dst is written, so dst may be any one of the sources.
template <class Kind, ReduceOp kOp>
CHORUS_KERNEL_INLINE void reduceFold(void* dstRaw, const void* const* srcsRaw, int nsrc,
                                     std::size_t count) {
  using Storage = typename Kind::Storage;
  using Compute = typename Kind::Compute;
  using V = typename Kind::V;
  constexpr std::size_t kLanes = Kind::kLanes;
  constexpr std::size_t kBlockVectors = kBlockBytes / sizeof(V);
  constexpr std::size_t kBlock = kBlockVectors * kLanes;
  auto* dst = static_cast<Storage*>(dstRaw);
  const auto src = [srcsRaw](int k) { return static_cast<const Storage*>(srcsRaw[k]); };

  V acc[kBlockVectors];
  const std::size_t whole = wholeVectorCount<Kind>(count);
  for (std::size_t begin = 0; begin < whole; begin += kBlock) {
    const std::size_t vectors = (whole - begin < kBlock ? whole - begin : kBlock) / kLanes;
    const Storage* s0 = src(0) + begin;
    const Storage* s1 = src(1) + begin;
    for (std::size_t v = 0; v < vectors; ++v) {
      acc[v] = applyOp<kOp, Compute>(Kind::load(s0 + v * kLanes), Kind::load(s1 + v * kLanes));
    }
    for (int k = 2; k < nsrc; ++k) {
      const Storage* sk = src(k) + begin;
      for (std::size_t v = 0; v < vectors; ++v) {
        acc[v] = applyOp<kOp, Compute>(Kind::round(acc[v]), Kind::load(sk + v * kLanes));
      }
    }
    for (std::size_t v = 0; v < vectors; ++v)
      Kind::store(dst + begin + v * kLanes, acc[v]);
  }
  const std::size_t rest = count - whole;
  if (rest != 0) {
    Storage t[kLanes] = {};
    std::memcpy(t, src(0) + whole, rest * sizeof(Storage));
    V tail = Kind::load(t);
    for (int k = 1; k < nsrc; ++k) {
      std::memcpy(t, src(k) + whole, rest * sizeof(Storage));
      tail = applyOp<kOp, Compute>(Kind::round(tail), Kind::load(t));
    }
    Kind::store(t, tail);
    std::memcpy(dst + whole, t, rest * sizeof(Storage));
  }
}

// Calls fn.template run<Kind, kOp>() (avg runs as sum). Functors rather than lambdas, so that
// every level is always_inline and lands inside the target clone of the entry point.
template <class Kind, class Fn>
CHORUS_KERNEL_INLINE void visitOp(ReduceOp op, const Fn& fn) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg:
      return fn.template run<Kind, ReduceOp::sum>();
    case ReduceOp::prod:
      return fn.template run<Kind, ReduceOp::prod>();
    case ReduceOp::min:
      return fn.template run<Kind, ReduceOp::min>();
    case ReduceOp::max:
      return fn.template run<Kind, ReduceOp::max>();
  }
  CHORUS_INTERNAL_ASSERT(false, "ReduceOp value out of range");
}

// Calls fn.template run<Kind>() (or, given an op, fn.template run<Kind, kOp>()) with the element
// kind of `type` for kBytes-wide vectors.
template <std::size_t kBytes, class Fn, class... Op>
CHORUS_KERNEL_INLINE void visitKind(DataType type, const Fn& fn, Op... op) {
  const auto call = [&]<class Kind>() __attribute__((always_inline)) {
    if constexpr (sizeof...(Op) == 0) {
      fn.template run<Kind>();
    } else {
      visitOp<Kind>(op..., fn);
    }
  };
  switch (type) {
    case DataType::int8:
      return call.template operator()<PlainKind<std::int8_t, kBytes>>();
    case DataType::uint8:
      return call.template operator()<PlainKind<std::uint8_t, kBytes>>();
    case DataType::int32:
      return call.template operator()<PlainKind<std::int32_t, kBytes>>();
    case DataType::uint32:
      return call.template operator()<PlainKind<std::uint32_t, kBytes>>();
    case DataType::int64:
      return call.template operator()<PlainKind<std::int64_t, kBytes>>();
    case DataType::uint64:
      return call.template operator()<PlainKind<std::uint64_t, kBytes>>();
    case DataType::float16:
      return call.template operator()<Narrow16Kind<true, kBytes>>();
    case DataType::bfloat16:
      return call.template operator()<Narrow16Kind<false, kBytes>>();
    case DataType::float32:
      return call.template operator()<PlainKind<float, kBytes>>();
    case DataType::float64:
      return call.template operator()<PlainKind<double, kBytes>>();
  }
  CHORUS_INTERNAL_ASSERT(false, "DataType value out of range");
}

struct ReduceTwoFn {
  void* dst;
  const void* a;
  const void* b;
  std::size_t count;
  template <class Kind, ReduceOp kOp>
  CHORUS_KERNEL_INLINE void run() const {
    reduceTwo<Kind, kOp>(dst, a, b, count);
  }
};

struct ReduceFoldFn {
  void* dst;
  const void* const* srcs;
  int nsrc;
  std::size_t count;
  template <class Kind, ReduceOp kOp>
  CHORUS_KERNEL_INLINE void run() const {
    reduceFold<Kind, kOp>(dst, srcs, nsrc, count);
  }
};

struct DivideFn {
  void* data;
  std::size_t count;
  int divisor;
  template <class Kind>
  CHORUS_KERNEL_INLINE void run() const {
    divideAll<Kind>(data, count, divisor);
  }
};

// One entry point per instruction set: 16-byte vectors need only SSE2 (x86-64 baseline).
void reduceTwoBaseline(DataType type, ReduceOp op, const ReduceTwoFn& fn) {
  visitKind<16>(type, fn, op);
}
void reduceFoldBaseline(DataType type, ReduceOp op, const ReduceFoldFn& fn) {
  visitKind<16>(type, fn, op);
}
void divideBaseline(DataType type, const DivideFn& fn) {
  visitKind<16>(type, fn);
}

#if CHORUS_KERNELS_HAVE_AVX2
CHORUS_TARGET_AVX2 void reduceTwoAvx2(DataType type, ReduceOp op, const ReduceTwoFn& fn) {
  visitKind<32>(type, fn, op);
}
CHORUS_TARGET_AVX2 void reduceFoldAvx2(DataType type, ReduceOp op, const ReduceFoldFn& fn) {
  visitKind<32>(type, fn, op);
}
CHORUS_TARGET_AVX2 void divideAvx2(DataType type, const DivideFn& fn) {
  visitKind<32>(type, fn);
}

bool cpuHasAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}
#else
bool cpuHasAvx2() {
  return false;
}
#endif

// Read on every call (relaxed); set during static initialization and by forceKernelIsaForTesting.
// A kernel called from another static initializer before that sees false: baseline, still correct.
std::atomic<bool> useAvx2{cpuHasAvx2()};

}  // namespace

void reduceElements(DataType type, ReduceOp op, void* dst, const void* a, const void* b,
                    std::size_t count) {
  const ReduceTwoFn fn{dst, a, b, count};
#if CHORUS_KERNELS_HAVE_AVX2
  if (useAvx2.load(std::memory_order_relaxed)) return reduceTwoAvx2(type, op, fn);
#endif
  reduceTwoBaseline(type, op, fn);
}

void divideElements(DataType type, void* data, std::size_t count, int divisor) {
  CHORUS_INTERNAL_ASSERT(divisor >= 1, "divideElements needs a divisor >= 1 (a rank count)");
  if (divisor == 1) return;
  const DivideFn fn{data, count, divisor};
#if CHORUS_KERNELS_HAVE_AVX2
  if (useAvx2.load(std::memory_order_relaxed)) return divideAvx2(type, fn);
#endif
  divideBaseline(type, fn);
}

void reduceMany(DataType type, ReduceOp op, void* dst, const void* const* srcs, int nsrc,
                std::size_t count) {
  CHORUS_INTERNAL_ASSERT(nsrc >= 1, "reduceMany needs at least one source");
  if (nsrc == 1) {
    if (dst != srcs[0] && count != 0) std::memmove(dst, srcs[0], count * dataTypeSize(type));
    return;
  }
  const ReduceFoldFn fn{dst, srcs, nsrc, count};
#if CHORUS_KERNELS_HAVE_AVX2
  if (useAvx2.load(std::memory_order_relaxed)) return reduceFoldAvx2(type, op, fn);
#endif
  reduceFoldBaseline(type, op, fn);
}

namespace detail {

KernelIsa activeKernelIsa() {
  return useAvx2.load(std::memory_order_relaxed) ? KernelIsa::avx2 : KernelIsa::baseline;
}

bool forceKernelIsaForTesting(KernelIsa isa) {
  if (isa == KernelIsa::avx2 && !cpuHasAvx2()) return false;
  useAvx2.store(isa == KernelIsa::avx2, std::memory_order_relaxed);
  return true;
}

}  // namespace detail

}  // namespace chorus::runtime
