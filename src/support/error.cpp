#include "support/error.h"

#include <fmt/format.h>

namespace chorus {

namespace {
std::string withLocation(const std::string& message, const std::source_location& where) {
  return fmt::format("{}:{}: {}", where.file_name(), where.line(), message);
}
}  // namespace

ProgramError::ProgramError(const std::string& message, const std::source_location& where)
    : UserError(withLocation(message, where)), where_(where) {}

ProgramError::ProgramError(const std::string& message, const std::string& location,
                           const std::source_location& where)
    : UserError(fmt::format("{}: {}", location, message)), where_(where) {}

void failInternalAssert(const char* condition, const std::string& message,
                        const std::source_location& where) {
  throw InternalError(
      fmt::format("chorus internal error at {}:{}: {} ({}). Please report this bug.",
                  where.file_name(), where.line(), message, condition));
}

}  // namespace chorus
