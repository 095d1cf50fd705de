#include "bindings/convert.h"
#include "bindings/registry.h"
#include "ops/kv.h"

EYAS_BINDINGS(ops_kv) {
  nb::module_ ops = bind::ops_module(m);
  ops.def(
      "kv_write",
      [](bind::Array kv_new, bind::Array cache, int start_slot, std::optional<Encoder*> encoder) {
        const char* op = "kv_write";
        Tensor tn = bind::from_numpy(op, "kv_new", kv_new), tc = bind::from_numpy(op, "cache", cache);
        bind::encode(encoder, [&](Encoder& enc) { ops::kv_write(enc, tn, tc, start_slot); });
      },
      "kv_new"_a, "cache"_a, "start_slot"_a, nb::kw_only(), "encoder"_a = nb::none(),
      "Copy kv_new float32[T, Hkv, D] into cache float32[Hkv, capacity, D] slots [start_slot, start_slot + T), "
      "in place.");
  ops.def(
      "kv_move_rows",
      [](bind::Array cache, bind::Array src_slots, int dst_start, std::optional<Encoder*> encoder) {
        const char* op = "kv_move_rows";
        Tensor tc = bind::from_numpy(op, "cache", cache), ts = bind::from_numpy(op, "src_slots", src_slots);
        bind::encode(encoder, [&](Encoder& enc) { ops::kv_move_rows(enc, tc, ts, dst_start); });
      },
      "cache"_a, "src_slots"_a, "dst_start"_a, nb::kw_only(), "encoder"_a = nb::none(),
      "Move cache slots src_slots int32[m] to [dst_start, dst_start + m) in every head, in place, byte for byte "
      "(overlapping ranges are safe).");
}
