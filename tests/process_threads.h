// Threads of this process (/proc/self/task), for tests that fork: fork() is safe only while
// the test process has a single thread.
#pragma once

#include <dirent.h>

namespace chorus::testing_support {

inline int processThreadCount() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (const dirent* e = ::readdir(d))
      n += e->d_name[0] != '.';
    ::closedir(d);
  }
  return n;
}

}  // namespace chorus::testing_support
