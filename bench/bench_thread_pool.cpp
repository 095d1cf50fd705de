// Cost of one ThreadPool job at 1..EYAS_BENCH_MAX_THREADS threads (default: the hardware's): wall time of
// run() with an empty job (publish, every worker claims and finishes its share, the caller sees them all
// done), and the time over 2 us of a job whose every share spins 2 us (a small decode matmul's share), where
// the workers' wake-up overlaps the caller's own share. A small model's decode step runs ~12 jobs a layer.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/thread_pool.h"

int main() {
  const char* env = std::getenv("EYAS_BENCH_MAX_THREADS");
  const int max_threads = env ? std::atoi(env) : int(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("threads  us/empty job  us over 2 us/share\n");
  auto spin_2us = [](int, int) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(2);
    while (std::chrono::steady_clock::now() < end) {
    }
  };
  for (int n = 1; n <= max_threads; ++n) {
    eyas::ThreadPool pool(n);
    for (int i = 0; i < 2000; ++i) pool.run([](int, int) {});  // warm-up: workers spinning, lines in place
    const int reps = 20000;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) pool.run([](int, int) {});
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    const auto t1 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps / 4; ++i) pool.run(spin_2us);
    const double busy = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t1).count();
    std::printf("%7d  %12.3f  %18.3f\n", n, us / reps, busy / (reps / 4) - 2.0);
  }
}
