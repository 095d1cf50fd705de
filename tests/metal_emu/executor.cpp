// Fiber executor for emulated MSL kernels: one fiber per GPU thread, one threadgroup at a
// time. Each simdgroup runs ahead until all its lanes block at a threadgroup barrier (the
// most run-ahead legal interleaving, which is what exposes missing barriers), in forward,
// reverse or seeded-random simdgroup/lane order. Exposes a C ABI (emu_*) for ctypes and for
// the sanitizer driver.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "shim/msl_rt.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
extern "C" void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, size_t size);
extern "C" void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old, size_t* size_old);
#endif
#endif

#if !defined(__x86_64__)
#error "the emulator's context switch is written for x86-64"
#endif

// Saves callee-saved registers, MXCSR and the x87 control word on the old stack, then
// switches stacks. New fibers start with a frame whose return address is fiber_entry.
asm(R"(
.text
.p2align 4
.type emu_ctx_switch,@function
emu_ctx_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size emu_ctx_switch,.-emu_ctx_switch
.section .note.GNU-stack,"",@progbits
.text
)");
extern "C" void emu_ctx_switch(void** save_sp, void* new_sp);

namespace msl::rt {
namespace {

constexpr size_t kStackBytes = 512 * 1024;
constexpr size_t kMaxThreads = 1024;
constexpr size_t kMaxTgMem = 32 * 1024;
constexpr size_t kMaxSetBytes = 4096;

enum class St { ready, barrier, coll, done, error };

struct Fiber {
  void* sp = nullptr;
  char* stack = nullptr;  // usable region [stack, stack + kStackBytes)
  St st = St::ready;
  const char* file = nullptr;
  int line = 0;
  Coll op = Coll::sum;
  CollFn fn = nullptr;
  CollSlot slot;
  uint32_t tid = 0, lane = 0, sg = 0, pos[3] = {0, 0, 0};
#ifdef EMU_ASAN
  void* fake = nullptr;
#endif
};

struct TgArray {
  const char* file;
  int line;
  size_t size;
  void* ptr;
};

struct Launch {
  const KernelEntry* k = nullptr;
  void* bufs[32] = {};
  size_t buf_len[32] = {};
  bool bound[32] = {};
  size_t tg_len[8] = {};
  void* tg_ptr[8] = {};
  uint32_t grid[3], tg[3], group[3];
  uint32_t nthreads = 0;
  std::vector<TgArray> arrays;
  size_t tg_total = 0;
  int schedule = 0;
  uint64_t seed = 0;
};

std::map<std::string, const KernelEntry*>& registry() {
  static std::map<std::string, const KernelEntry*> r;
  return r;
}

thread_local Launch* g_launch = nullptr;
thread_local Fiber* g_cur = nullptr;
thread_local void* g_sched_sp = nullptr;
thread_local std::vector<Fiber> g_fibers;
thread_local char g_err[1024];
#ifdef EMU_ASAN
thread_local const void* g_sched_bottom = nullptr;
thread_local size_t g_sched_size = 0;
#endif

// Fiber -> scheduler. A fiber that is done passes a null fake stack (it will not resume).
void yield_to_scheduler(bool final) {
  Fiber* f = g_cur;
#ifdef EMU_ASAN
  __sanitizer_start_switch_fiber(final ? nullptr : &f->fake, g_sched_bottom, g_sched_size);
#endif
  (void)final;
  emu_ctx_switch(&f->sp, g_sched_sp);
#ifdef EMU_ASAN
  __sanitizer_finish_switch_fiber(f->fake, nullptr, nullptr);
#endif
}

void fiber_entry() {
#ifdef EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &g_sched_bottom, &g_sched_size);
#endif
  g_launch->k->stub();
  g_cur->st = St::done;
  yield_to_scheduler(true);
  __builtin_trap();  // a finished fiber is never resumed
}

void resume(Fiber* f) {
  g_cur = f;
#ifdef EMU_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, f->stack, kStackBytes);
  emu_ctx_switch(&g_sched_sp, f->sp);
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
  emu_ctx_switch(&g_sched_sp, f->sp);
#endif
  g_cur = nullptr;
}

void init_fiber(Fiber& f) {
  if (!f.stack) {
    // Guard page below the stack turns a kernel stack overflow into a clean SIGSEGV.
    size_t page = size_t(sysconf(_SC_PAGESIZE));
    char* m = static_cast<char*>(mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    if (m == MAP_FAILED) { std::perror("emu: mmap"); std::abort(); }
    mprotect(m, page, PROT_NONE);
    f.stack = m + page;
  }
  uint64_t* sp = reinterpret_cast<uint64_t*>(f.stack + kStackBytes);
  *--sp = 0;                                          // fake return address of fiber_entry
  *--sp = reinterpret_cast<uint64_t>(&fiber_entry);   // popped by `ret`
  for (int i = 0; i < 6; ++i) *--sp = 0;              // rbp rbx r12-r15
  uint32_t csr[2];
  asm volatile("stmxcsr %0" : "=m"(csr[0]));
  asm volatile("fnstcw %0" : "=m"(csr[1]));
  *--sp = uint64_t(csr[0]) | (uint64_t(csr[1] & 0xffff) << 32);
  f.sp = sp;
  f.st = St::ready;
  f.file = nullptr;
  f.line = 0;
}

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// 0 forward, 1 reverse, 2 seeded random.
void order(std::vector<uint32_t>& v, uint32_t n, int schedule, uint64_t& rng) {
  v.resize(n);
  for (uint32_t i = 0; i < n; ++i) v[i] = i;
  if (schedule == 1) std::reverse(v.begin(), v.end());
  if (schedule == 2)
    for (uint32_t i = n; i > 1; --i) std::swap(v[i - 1], v[splitmix(rng) % i]);
}

const char* base(const char* path) {
  const char* s = std::strrchr(path ? path : "?", '/');
  return s ? s + 1 : (path ? path : "?");
}

[[gnu::format(printf, 1, 2)]] bool err(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(g_err, sizeof g_err, fmt, ap);
  va_end(ap);
  return false;
}

bool group_err(const Launch& L, int tid, const char* msg) {
  return err("%s: threadgroup (%u,%u,%u) thread %d: %s", L.k->name, L.group[0], L.group[1], L.group[2], tid, msg);
}

// Runs one threadgroup to completion; false (with g_err set) on a detected error.
bool run_group(Launch& L) {
  uint32_t n = L.nthreads;
  std::vector<Fiber>& F = g_fibers;
  if (F.size() < n) F.resize(n);
  for (uint32_t t = 0; t < n; ++t) {
    init_fiber(F[t]);
    F[t].tid = t;
    F[t].lane = t % kSimdWidth;
    F[t].sg = t / kSimdWidth;
    F[t].pos[0] = t % L.tg[0];
    F[t].pos[1] = (t / L.tg[0]) % L.tg[1];
    F[t].pos[2] = t / (L.tg[0] * L.tg[1]);
  }
  uint32_t nsg = (n + kSimdWidth - 1) / kSimdWidth;
  uint64_t rng = L.seed * 0x100000001B3ull + L.group[0] * 73856093ull + L.group[1] * 19349663ull +
                 L.group[2] * 83492791ull;
  std::vector<uint32_t> sg_order, lane_order;
  char msg[512];
  for (;;) {
    order(sg_order, nsg, L.schedule, rng);
    for (uint32_t sg : sg_order) {
      uint32_t l0 = sg * kSimdWidth, nl = std::min<uint32_t>(kSimdWidth, n - l0);
      for (;;) {
        order(lane_order, nl, L.schedule, rng);
        for (uint32_t l : lane_order) {
          Fiber& f = F[l0 + l];
          if (f.st != St::ready) continue;
          resume(&f);
          if (f.st == St::error) {
            std::snprintf(msg, sizeof msg, "%s", g_err);
            return group_err(L, int(f.tid), msg);
          }
        }
        int ncoll = 0, nother = 0;
        const Fiber* first = nullptr;
        for (uint32_t l = 0; l < nl; ++l) {
          const Fiber& f = F[l0 + l];
          if (f.st == St::coll) {
            ++ncoll;
            if (!first) first = &f;
          } else {
            ++nother;
          }
        }
        if (ncoll == 0) break;
        if (nother) {
          for (uint32_t l = 0; l < nl; ++l) {
            const Fiber& f = F[l0 + l];
            if (f.st == St::coll) continue;
            std::snprintf(msg, sizeof msg,
                          "divergent simd collective: lane %u waits at %s:%d while lane %u %s %s:%d",
                          first->lane, base(first->file), first->line, f.lane,
                          f.st == St::done ? "has returned" : "waits at a barrier at", base(f.file), f.line);
            return group_err(L, int(f.tid), msg);
          }
        }
        CollSlot* slots[kSimdWidth];
        for (uint32_t l = 0; l < nl; ++l) {
          const Fiber& f = F[l0 + l];
          if (f.file != first->file || f.line != first->line || f.op != first->op || f.fn != first->fn) {
            std::snprintf(msg, sizeof msg, "divergent simd collective: lane %u at %s:%d, lane %u at %s:%d",
                          first->lane, base(first->file), first->line, f.lane, base(f.file), f.line);
            return group_err(L, int(f.tid), msg);
          }
          slots[l] = &F[l0 + l].slot;
        }
        first->fn(first->op, slots, int(nl));
        for (uint32_t l = 0; l < nl; ++l) F[l0 + l].st = St::ready;
      }
    }
    // Every simdgroup is now blocked at a barrier or finished.
    const Fiber* at = nullptr;
    const Fiber* done = nullptr;
    for (uint32_t t = 0; t < n; ++t) {
      if (F[t].st == St::barrier && !at) at = &F[t];
      if (F[t].st == St::done && !done) done = &F[t];
    }
    if (!at) return true;
    if (done) {
      std::snprintf(msg, sizeof msg, "thread %u returned while thread %u waits at the barrier at %s:%d",
                    done->tid, at->tid, base(at->file), at->line);
      return group_err(L, int(done->tid), msg);
    }
    for (uint32_t t = 0; t < n; ++t) {
      if (F[t].file != at->file || F[t].line != at->line) {
        std::snprintf(msg, sizeof msg, "divergent barrier: thread %u at %s:%d, thread %u at %s:%d", at->tid,
                      base(at->file), at->line, t, base(F[t].file), F[t].line);
        return group_err(L, int(t), msg);
      }
      F[t].st = St::ready;
    }
  }
}

}  // namespace

Registrar::Registrar(const KernelEntry* e) { registry()[e->name] = e; }

void barrier(const char* file, int line) {
  g_cur->st = St::barrier;
  g_cur->file = file;
  g_cur->line = line;
  yield_to_scheduler(false);
}

void collective(Coll op, CollFn fn, const char* file, int line) {
  g_cur->st = St::coll;
  g_cur->op = op;
  g_cur->fn = fn;
  g_cur->file = file;
  g_cur->line = line;
  yield_to_scheduler(false);
}

CollSlot* my_slot() { return &g_cur->slot; }

void fail(const char* msg) {
  std::snprintf(g_err, sizeof g_err, "%s", msg);
  g_cur->st = St::error;
  yield_to_scheduler(true);
  __builtin_trap();
}

void builtin_value(Bi b, uint32_t v[3]) {
  const Launch& L = *g_launch;
  const Fiber& f = *g_cur;
  v[0] = v[1] = v[2] = 0;
  switch (b) {
    case Bi::thread_position_in_grid:
      for (int i = 0; i < 3; ++i) v[i] = L.group[i] * L.tg[i] + f.pos[i];
      break;
    case Bi::thread_position_in_threadgroup:
      for (int i = 0; i < 3; ++i) v[i] = f.pos[i];
      break;
    case Bi::threadgroup_position_in_grid:
      for (int i = 0; i < 3; ++i) v[i] = L.group[i];
      break;
    case Bi::threads_per_threadgroup:
      for (int i = 0; i < 3; ++i) v[i] = L.tg[i];
      break;
    case Bi::threadgroups_per_grid:
      for (int i = 0; i < 3; ++i) v[i] = L.grid[i];
      break;
    case Bi::threads_per_grid:
      for (int i = 0; i < 3; ++i) v[i] = L.grid[i] * L.tg[i];
      break;
    case Bi::thread_index_in_threadgroup: v[0] = f.tid; break;
    case Bi::thread_index_in_simdgroup: v[0] = f.lane; break;
    case Bi::simdgroup_index_in_threadgroup: v[0] = f.sg; break;
    case Bi::threads_per_simdgroup: v[0] = kSimdWidth; break;
    case Bi::simdgroups_per_threadgroup: v[0] = (L.nthreads + kSimdWidth - 1) / kSimdWidth; break;
  }
}

void* buffer_ptr(int i) { return g_launch->bufs[i]; }
void* tg_arg_ptr(int i) { return g_launch->tg_ptr[i]; }

void* tg_array(const char* file, int line, size_t size, size_t align) {
  Launch& L = *g_launch;
  for (auto& a : L.arrays)
    if (a.file == file && a.line == line) return a.ptr;
  L.tg_total += (size + 15) & ~size_t(15);
  if (L.tg_total > kMaxTgMem) fail("threadgroup memory exceeds 32 KiB");
  // Poisoned with 0xFF (NaN for float/half) so reads of unwritten slots show in results.
  void* p = std::aligned_alloc(std::max<size_t>(align, 16), (size + 15) & ~size_t(15));
  std::memset(p, 0xFF, size);
  L.arrays.push_back({file, line, size, p});
  return p;
}

}  // namespace msl::rt

using namespace msl::rt;

extern "C" {

int emu_kernel_count() { return int(registry().size()); }

const char* emu_kernel_name(int i) {
  auto it = registry().begin();
  std::advance(it, i);
  return it->first.c_str();
}

const char* emu_kernel_file(const char* name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : it->second->file;
}

const char* emu_last_error() { return g_err; }

// Mirrors setBytes(args, index 0) + setBuffer(ptrs[i], index idx[i]) +
// setThreadgroupMemoryLength + dispatchThreadgroups. Returns 0 on success, 1 with
// emu_last_error() set on a detected error.
int emu_dispatch(const char* name, const void* args, uint32_t args_len, int nbuf, const uint32_t* idx,
                 void* const* ptrs, const uint64_t* lens, const uint32_t* grid, const uint32_t* tg, int ntg,
                 const uint32_t* tg_lens, int schedule, uint64_t seed) {
  g_err[0] = 0;
  auto it = registry().find(name ? name : "");
  if (it == registry().end()) return !err("unknown kernel '%s'", name ? name : "(null)"), 1;
  Launch L;
  L.k = it->second;
  L.schedule = schedule;
  L.seed = seed;
  const char* kn = L.k->name;
  if (args) {
    if (args_len > kMaxSetBytes) return !err("%s: setBytes of %u bytes (limit 4096)", kn, args_len), 1;
    L.bufs[0] = const_cast<void*>(args);
    L.buf_len[0] = args_len;
    L.bound[0] = true;
  }
  for (int i = 0; i < nbuf; ++i) {
    if (idx[i] >= 32) return !err("%s: buffer index %u out of range", kn, idx[i]), 1;
    if (L.bound[idx[i]]) return !err("%s: buffer index %u bound twice", kn, idx[i]), 1;
    L.bufs[idx[i]] = ptrs[i];
    L.buf_len[idx[i]] = lens[i];
    L.bound[idx[i]] = true;
  }
  uint64_t nth = uint64_t(tg[0]) * tg[1] * tg[2];
  if (nth == 0 || nth > kMaxThreads)
    return !err("%s: %llu threads per threadgroup (must be 1..1024)", kn, (unsigned long long)nth), 1;
  if (uint64_t(grid[0]) * grid[1] * grid[2] == 0) return !err("%s: empty grid", kn), 1;
  if (ntg > 8) return !err("%s: too many threadgroup memory arguments", kn), 1;
  size_t tg_total = 0;
  for (int i = 0; i < ntg; ++i) {
    if (tg_lens[i] % 16) return !err("%s: threadgroup memory length %u is not a multiple of 16", kn, tg_lens[i]), 1;
    L.tg_len[i] = tg_lens[i];
    tg_total += tg_lens[i];
  }
  if (tg_total > kMaxTgMem) return !err("%s: threadgroup memory %zu bytes exceeds 32 KiB", kn, tg_total), 1;
  for (int p = 0; p < L.k->nparams; ++p) {
    const ParamSpec& s = L.k->params[p];
    if (s.kind == PKind::buffer) {
      if (!L.bound[s.index]) return !err("%s: buffer(%d) is not bound", kn, s.index), 1;
      if (L.buf_len[s.index] < s.size)
        return !err("%s: buffer(%d) has %zu bytes, the kernel reads %zu", kn, s.index, L.buf_len[s.index], s.size), 1;
      if (reinterpret_cast<uintptr_t>(L.bufs[s.index]) % s.align)
        return !err("%s: buffer(%d) is not %zu-byte aligned", kn, s.index, s.align), 1;
    } else if (s.kind == PKind::threadgroup) {
      if (s.index >= ntg || L.tg_len[s.index] == 0)
        return !err("%s: threadgroup(%d) memory length is not set", kn, s.index), 1;
    }
  }
  std::memcpy(L.grid, grid, sizeof L.grid);
  std::memcpy(L.tg, tg, sizeof L.tg);
  L.nthreads = uint32_t(nth);
  g_launch = &L;
  bool ok = true;
  for (uint32_t z = 0; ok && z < grid[2]; ++z)
    for (uint32_t y = 0; ok && y < grid[1]; ++y)
      for (uint32_t x = 0; ok && x < grid[0]; ++x) {
        L.group[0] = x;
        L.group[1] = y;
        L.group[2] = z;
        L.tg_total = tg_total;
        for (int i = 0; i < ntg; ++i) {
          L.tg_ptr[i] = std::aligned_alloc(16, L.tg_len[i]);
          std::memset(L.tg_ptr[i], 0xFF, L.tg_len[i]);
        }
        ok = run_group(L);
        for (int i = 0; i < ntg; ++i) std::free(L.tg_ptr[i]);
        for (auto& a : L.arrays) std::free(a.ptr);
        L.arrays.clear();
      }
  g_launch = nullptr;
  return ok ? 0 : 1;
}

}  // extern "C"
