// The reference compiler's valid MSCCL XML files (shared/interop/msccl-xml/valid), which the
// runtime tests run on every transport.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace chorus::testing_support {

// Their paths, sorted (CHORUS_SHARED_DIR comes from tests/CMakeLists.txt).
inline std::vector<std::string> validFiles() {
  std::vector<std::string> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(CHORUS_SHARED_DIR "/interop/msccl-xml/valid"))
    files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace chorus::testing_support
