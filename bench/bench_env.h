// Switches of the C++ microbenchmarks read from the environment.
#pragma once

#include <cstdlib>
#include <cstring>

// True when `name` is set to anything but "" or "0", so EYAS_BENCH_COLD=0 means warm, as it reads.
inline bool bench_env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}
