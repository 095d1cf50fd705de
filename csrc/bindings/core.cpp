// Bindings for Device, Encoder and the thread settings.
#include <nanobind/stl/shared_ptr.h>

#include "bindings/convert.h"
#include "core/encoder.h"
#include "core/huge_pages.h"
#include "core/page_out.h"
#include "core/read_bandwidth.h"
#include "bindings/registry.h"

EYAS_BINDINGS(core) {
  m.def("_profile_reset", &profile_reset,
        "Forget the EYAS_PROFILE rows recorded so far (the table printed at exit starts from here).");
  nb::class_<Device>(m, "Device",
                     "A backend and its worker threads. 'cpu', or 'metal': Apple's GPU in macOS builds, elsewhere\n"
                     "the MSL emulator library given as emulator=PATH or $EYAS_METAL_EMULATOR (docs/metal.md).")
      .def(nb::init<const std::string&, int, const std::string&>(), "backend"_a = "cpu", "threads"_a = 0,
           nb::kw_only(), "emulator"_a = "")
      .def_prop_ro("backend", &Device::backend)
      .def_prop_ro("num_threads", &Device::num_threads)
      .def_prop_ro(
          "driver", [](Device& d) { return d.driver() ? std::string(d.driver()->name()) : std::string(); },
          "'apple' or 'emulator' for a Metal device, '' for the CPU.")
      .def(
          "_set_test_hooks",
          [](Device& d, uint32_t thread_limit, const std::string& matmul, int schedule, uint64_t seed,
             const std::string& record_dir) {
            const char* op = "_set_test_hooks";
            if (!d.driver()) fail(op, "a CPU device has no GPU driver");
            if (thread_limit < 32 || thread_limit > gpu::kMaxThreads) fail(op, "thread_limit must be in [32, 1024]");
            if (matmul != "auto" && matmul != "vec" && matmul != "mat") fail(op, "matmul must be auto, vec or mat");
            if (schedule < -1 || schedule > 2) fail(op, "schedule must be -1 (the encoder's) or 0..2");
            d.driver()->hooks = {thread_limit, matmul == "vec" ? 1 : matmul == "mat" ? 2 : 0, schedule, seed, record_dir};
          },
          nb::kw_only(), "thread_limit"_a = gpu::kMaxThreads, "matmul"_a = "auto", "schedule"_a = -1, "seed"_a = 0,
          "record_dir"_a = "",
          "Test hooks of a Metal device: cap threads per threadgroup, force the matmul variant, force the\n"
          "emulator's thread interleaving, record every launch as request/result files in record_dir.");

  nb::enum_<Schedule>(m, "Schedule", "Order in which an encoder runs the dispatches between two barriers.")
      .value("forward", Schedule::Forward)
      .value("reverse", Schedule::Reverse)
      .value("shuffle", Schedule::Shuffle);

  nb::class_<Encoder>(m, "Encoder",
                      "Records dispatches with the buffers each reads and writes; inserts barriers on hazards.")
      .def(
          "__init__",
          [](Encoder* self, Device* device, bool serial, bool check, Schedule schedule, uint64_t seed) {
            EncoderOptions o{serial, check, schedule, seed};
            new (self) Encoder(device ? *device : *bind::default_device(), o);
          },
          "device"_a = nb::none(), nb::kw_only(), "serial"_a = false, "check"_a = false,
          "schedule"_a = Schedule::Forward, "seed"_a = 0, nb::keep_alive<1, 2>())
      .def("commit", [](Encoder& e) {
        nb::gil_scoped_release release;
        e.commit();
      })
      .def("wait", &Encoder::wait)
      .def_prop_ro("num_dispatches", &Encoder::num_dispatches)
      .def_prop_ro("num_barriers", &Encoder::num_barriers)
      .def_prop_ro("barrier_positions", &Encoder::barrier_positions);

  m.def("set_num_threads", &bind::set_default_threads, "threads"_a,
        "Replace the default device with a CPU device of `threads` workers (<= 0: all cores).");
  m.def("get_num_threads", [] { return bind::default_device()->num_threads(); });
  m.def("set_default_device", &bind::set_default_device, "device"_a,
        "Make `device` the default: models, drafters, encoders and ops created without a device use it.");
  m.def("get_default_device", &bind::default_device);
  m.def(
      "_page_out",
      [](bind::Array a) {
        Tensor t = bind::from_numpy("_page_out", "a", a);
        page_out(t.data<uint8_t>(), t.nbytes());
      },
      "a"_a, "Test hook: asks the OS to drop the resident pages of array a (csrc/core/page_out.h).");
  m.def(
      "_alloc_streamed",
      [](size_t nbytes) {
        void* p = alloc_streamed(nbytes);
        if (!p) throw std::bad_alloc();
        nb::capsule owner(p, [](void* q) noexcept { std::free(q); });
        return nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>>(p, {nbytes}, owner);
      },
      "nbytes"_a, "Test hook: uint8[nbytes] allocated as weight repacks are (csrc/core/huge_pages.h).");
  m.def(
      "read_bandwidth",
      [](nb::ndarray<const uint64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> buf, int streams, int reps,
         Device* device) {
        if (streams < 1 || streams > 64) fail("read_bandwidth", "streams must be in [1, 64]");
        if (reps < 1) fail("read_bandwidth", "reps must be >= 1");
        nb::gil_scoped_release release;
        Device& d = device ? *device : *bind::default_device();
        return read_bandwidth_gbs(d.pool(), buf.data(), buf.shape(0), streams, reps);
      },
      "buf"_a.noconvert(), "streams"_a = 4, "reps"_a = 3, "device"_a = nb::none(),
      "Best read GB/s of `reps` passes of the device's threads (default: the default device's) over buf\n"
      "(uint64[n], far larger than the caches, its pages touched), each thread reading its share as\n"
      "`streams` interleaved streams: the decode roofline's numerator (csrc/core/read_bandwidth.h).");
  // A Device made in Python and set as the default must be released before the interpreter is.
  nb::module_::import_("atexit").attr("register")(nb::cpp_function([] { bind::reset_default_device(); }));
}
