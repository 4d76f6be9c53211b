// Fuzz builds only (CMakeLists.txt, CHORUS_BUILD_FUZZERS): clang 14 with GCC 12's libstdc++
// lacks std::source_location (libstdc++ needs __builtin_source_location, which clang gained in
// 15), so chorus's headers would not compile. This force-included stand-in provides the same
// interface from the __builtin_FILE/LINE/FUNCTION builtins clang does have. Never part of a
// normal build.
#pragma once

#include <version>

#if defined(__clang__) && !defined(__cpp_lib_source_location)
#include <cstdint>

namespace std {  // NOLINT: a stand-in for the missing standard type, fuzz builds only
struct source_location {
  static constexpr source_location current(const char* file = __builtin_FILE(),
                                           const char* function = __builtin_FUNCTION(),
                                           std::uint_least32_t line = __builtin_LINE()) noexcept {
    source_location here;
    here.file_ = file;
    here.function_ = function;
    here.line_ = line;
    return here;
  }
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr const char* function_name() const noexcept { return function_; }
  constexpr std::uint_least32_t line() const noexcept { return line_; }
  constexpr std::uint_least32_t column() const noexcept { return 0; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  std::uint_least32_t line_ = 0;
};
}  // namespace std
#endif
