// Fault injection: FX_INJECT's short and long forms and the inject section
// (failures and chaos) give a schedule the injector can hold, or a
// ConfigError. Input: FX_INJECT text, NUL, YAML file text.
#include <fx/config.hpp>
#include <fx/error.hpp>
#include <fx/inject.hpp>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto parts = fx::fuzz::split_parts(data, size, 2);
  const auto file = fx::fuzz::scratch_dir() / "inject.yaml";
  fx::fuzz::write_file(file, parts[1]);
  try {
    const fx::Config c = fx::load_config(file.string(), {"FX_INJECT=" + parts[0]}, {});
    fx::validate_against_world(c, 8);
    const auto chaos = fx::detail::chaos_schedule(c.inject, 6);
    for (const auto& s : c.inject.failures) (void)fx::detail::spec_text(s);
    for (const auto& s : chaos) (void)fx::detail::spec_text(s);
  } catch (const fx::ConfigError&) {
  }
  return 0;
}
