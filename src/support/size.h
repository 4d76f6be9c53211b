// Byte sizes on the command line: "8", "64K", "1M", "1G" (binary multiples, optional "B"/"iB").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace chorus {

// Throws OptionError naming the text and the accepted forms.
std::uint64_t parseSize(std::string_view text);
// "64 KiB", "1 MiB", "3 B": the largest binary unit that divides the size exactly.
std::string formatSize(std::uint64_t bytes);

}  // namespace chorus
