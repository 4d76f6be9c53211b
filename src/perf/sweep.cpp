#include "perf/sweep.h"

#include <fmt/format.h>

#include <limits>

#include "support/error.h"
#include "support/size.h"

namespace chorus::perf {

std::vector<std::uint64_t> sizeSweep(std::uint64_t minBytes, std::uint64_t maxBytes,
                                     std::uint64_t factor) {
  if (minBytes == 0) throw OptionError("-b (minimum size) must be at least 1 byte, e.g. -b 8");
  if (minBytes > maxBytes)
    throw OptionError(fmt::format("-b {} is larger than -e {}; give the smaller size to -b",
                                  formatSize(minBytes), formatSize(maxBytes)));
  if (minBytes < maxBytes && factor < 2)
    throw OptionError(
        fmt::format("-f {} never reaches -e {}; use a factor of at least 2 (e.g. -f 2 or -f 4)",
                    factor, formatSize(maxBytes)));
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t size = minBytes; size <= maxBytes; size *= factor) {
    sizes.push_back(size);
    if (minBytes == maxBytes || size > std::numeric_limits<std::uint64_t>::max() / factor) break;
  }
  return sizes;
}

}  // namespace chorus::perf
