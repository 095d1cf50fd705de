// Each binding file registers itself, so adding an op family never edits a shared file. Included
// by binding files only, so it also carries their shared vocabulary (nanobind's names, eyas').
#pragma once
#include <nanobind/nanobind.h>

#include <functional>

namespace nb = nanobind;
using namespace nanobind::literals;
namespace eyas {}
using namespace eyas;

namespace eyas::bind {

using BindFn = void (*)(nanobind::module_& m);
struct Registrar {
  Registrar(const char* name, BindFn fn);
};

// The `_core.ops` and `_core.speculative` submodules, described once; every file adds to them.
inline nanobind::module_ ops_module(nanobind::module_& m) {
  return m.def_submodule("ops", "Kernels, one function per op; arrays in, arrays out.");
}
inline nanobind::module_ speculative_module(nanobind::module_& m) {
  return m.def_submodule("speculative", "Speculative decoding: drafter, tree expansion, accept.");
}

}  // namespace eyas::bind

#define EYAS_BINDINGS(name) \
  static void eyas_bind_##name(nanobind::module_& m); \
  static ::eyas::bind::Registrar eyas_registrar_##name(#name, &eyas_bind_##name); \
  static void eyas_bind_##name(nanobind::module_& m)
