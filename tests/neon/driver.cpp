// Cross-compiled matmul driver for tests/test_neon_cross.py: runs one matmul on the instruction
// set named on the command line (over the weight's repack where that table reads one, as in a
// model) and writes y, so the test can compare NEON with scalar bits.
//   driver ISA WTYPE N K T weights.bin x.bin y.bin
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "cpu/matmul.h"
#include "cpu/quant/isa.h"

static std::vector<char> slurp(const char* path) {
  FILE* f = std::fopen(path, "rb");
  if (!f) std::exit(3);
  std::fseek(f, 0, SEEK_END);
  std::vector<char> buf(size_t(std::ftell(f)));
  std::fseek(f, 0, SEEK_SET);
  if (std::fread(buf.data(), 1, buf.size(), f) != buf.size()) std::exit(4);
  std::fclose(f);
  return buf;
}

int main(int argc, char** argv) {
  if (argc != 9) return 2;
  eyas::cpu::quant::set_isa(argv[1]);
  MatmulArgs a{std::atoi(argv[5]), std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[2])};
  std::vector<char> w = slurp(argv[6]), x = slurp(argv[7]);
  if (x.size() != size_t(a.rows) * a.k * sizeof(float)) return 5;
  std::vector<float> y(size_t(a.rows) * a.n);
  eyas::ThreadPool pool(2);
  const uint8_t* wb = reinterpret_cast<const uint8_t*>(w.data());
  std::vector<uint8_t> pack;  // as a model's weight keeps it, where the table reads a repack
  if (eyas::cpu::matmul_wants_pack(a)) {
    pack.resize(eyas::cpu::matmul_pack_bytes(a));
    eyas::cpu::matmul_pack_weight(a, wb, pack.data(), pool);
  }
  eyas::cpu::matmul(a, reinterpret_cast<const float*>(x.data()), wb, y.data(), pool, pack.empty() ? nullptr : pack.data());
  FILE* f = std::fopen(argv[8], "wb");
  if (!f || std::fwrite(y.data(), sizeof(float), y.size(), f) != y.size()) return 6;
  std::fclose(f);
  std::printf("%s\n", eyas::cpu::matmul_isa());
  return 0;
}
