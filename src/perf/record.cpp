#include "perf/record.h"

namespace chorus::perf {

void setBandwidths(BenchRecord& record, double busFactor) {
  if (record.timeUs <= 0) {
    record.algbwGbps = record.busbwGbps = 0;
    return;
  }
  record.algbwGbps = static_cast<double>(record.bytes) / (record.timeUs * 1e3);
  record.busbwGbps = record.algbwGbps * busFactor;
}

}  // namespace chorus::perf
