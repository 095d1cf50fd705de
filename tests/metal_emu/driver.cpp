// Sanitizer driver: runs one dispatch described by a request file (written by runner.py) with
// every buffer in its own exact-size heap block, so ASan reports any access past its end.
//   msl_emu_asan REQUEST OUTPUT   -> exit 0 (OUTPUT = all buffers, in order), 3 on an
//   emulator error (message on stderr); sanitizer reports abort with their own exit code.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
int emu_dispatch(const char* name, const void* args, uint32_t args_len, int nbuf, const uint32_t* idx,
                 void* const* ptrs, const uint64_t* lens, const uint32_t* grid, const uint32_t* tg, int ntg,
                 const uint32_t* tg_lens, int schedule, uint64_t seed);
const char* emu_last_error();
}

namespace {
struct Reader {
  std::vector<char> d;
  size_t p = 0;
  void raw(void* out, size_t n) {
    if (p + n > d.size()) {
      std::fprintf(stderr, "msl_emu_asan: truncated request\n");
      std::exit(2);
    }
    std::memcpy(out, d.data() + p, n);
    p += n;
  }
  template <class T>
  T get() {
    T v;
    raw(&v, sizeof v);
    return v;
  }
};
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: msl_emu_asan REQUEST OUTPUT\n");
    return 2;
  }
  Reader r;
  FILE* f = std::fopen(argv[1], "rb");
  if (!f) return 2;
  char chunk[65536];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) r.d.insert(r.d.end(), chunk, chunk + n);
  std::fclose(f);
  if (r.get<uint32_t>() != 0x31554d45u) return 2;  // "EMU1"
  std::string name(r.get<uint32_t>(), '\0');
  r.raw(name.data(), name.size());
  uint32_t args_len = r.get<uint32_t>();
  void* args = args_len ? std::malloc(args_len) : nullptr;
  if (args_len) r.raw(args, args_len);
  uint32_t nbuf = r.get<uint32_t>();
  std::vector<uint32_t> idx(nbuf);
  std::vector<uint64_t> lens(nbuf);
  std::vector<void*> ptrs(nbuf);
  for (uint32_t i = 0; i < nbuf; ++i) {
    idx[i] = r.get<uint32_t>();
    lens[i] = r.get<uint64_t>();
    ptrs[i] = std::malloc(lens[i] ? lens[i] : 1);
    r.raw(ptrs[i], lens[i]);
  }
  uint32_t grid[3], tg[3];
  r.raw(grid, sizeof grid);
  r.raw(tg, sizeof tg);
  uint32_t ntg = r.get<uint32_t>();
  std::vector<uint32_t> tg_lens(ntg);
  if (ntg) r.raw(tg_lens.data(), 4 * ntg);
  int32_t schedule = r.get<int32_t>();
  uint64_t seed = r.get<uint64_t>();
  int rc = emu_dispatch(name.c_str(), args, args_len, int(nbuf), idx.data(), ptrs.data(), lens.data(), grid, tg,
                        int(ntg), tg_lens.data(), schedule, seed);
  if (rc) {
    std::fprintf(stderr, "%s\n", emu_last_error());
    return 3;
  }
  FILE* o = std::fopen(argv[2], "wb");
  if (!o) return 2;
  for (uint32_t i = 0; i < nbuf; ++i) std::fwrite(ptrs[i], 1, lens[i], o);
  std::fclose(o);
  for (void* p : ptrs) std::free(p);
  std::free(args);
  return 0;
}
