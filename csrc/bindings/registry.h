// Each binding file registers itself, so adding an op family never edits a shared file.
#pragma once
#include <nanobind/nanobind.h>

#include <functional>

namespace eyas::bind {

using BindFn = void (*)(nanobind::module_& m);
struct Registrar {
  Registrar(const char* name, BindFn fn);
};

}  // namespace eyas::bind

#define EYAS_BINDINGS(name) \
  static void eyas_bind_##name(nanobind::module_& m); \
  static ::eyas::bind::Registrar eyas_registrar_##name(#name, &eyas_bind_##name); \
  static void eyas_bind_##name(nanobind::module_& m)
