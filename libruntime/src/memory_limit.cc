#include "onnx_light/runtime/memory_limit.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

namespace onnx_light::runtime {

int64_t default_session_memory_limit() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  int64_t limit = pages > 0 && page_size > 0 ? static_cast<int64_t>(pages) / 4 * 3 * page_size : int64_t{1} << 30;
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    rlimit r{};
    if (getrlimit(resource, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
      limit = std::min<int64_t>(limit, static_cast<int64_t>(std::min<rlim_t>(r.rlim_cur, INT64_MAX)) / 4 * 3);
  }
  return std::max<int64_t>(limit, 1);
}

std::string format_bytes(int64_t bytes) {
  static constexpr std::array<const char*, 6> kUnits{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  for (value /= 1024.0; value >= 1024.0 && unit + 1 < kUnits.size(); ++unit) value /= 1024.0;
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

}  // namespace onnx_light::runtime
