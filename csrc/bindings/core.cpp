// Bindings for Device, Encoder and the thread settings.
#include <nanobind/stl/shared_ptr.h>

#include "bindings/convert.h"
#include "bindings/registry.h"

EYAS_BINDINGS(core) {
  nb::class_<Device>(m, "Device", "A backend ('cpu'; 'metal' on macOS builds) and its worker threads.")
      .def(nb::init<const std::string&, int>(), "backend"_a = "cpu", "threads"_a = 0)
      .def_prop_ro("backend", &Device::backend)
      .def_prop_ro("num_threads", &Device::num_threads);

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
        "Replace the default CPU device with one of `threads` workers (<= 0: all cores).");
  m.def("get_num_threads", [] { return bind::default_device()->num_threads(); });
}
