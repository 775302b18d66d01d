// The configuration loader: YAML text, FX_* variables and --fx-set texts
// give a validated Config, or a ConfigError. Input: the YAML file, NUL,
// environment lines (NAME=value), NUL, --fx-set lines (key=value).
#include <fx/config.hpp>
#include <fx/error.hpp>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto parts = fx::fuzz::split_parts(data, size, 3);
  const auto file = fx::fuzz::scratch_dir() / "config.yaml";
  fx::fuzz::write_file(file, parts[0]);
  try {
    const fx::Config c =
        fx::load_config(file.string(), fx::fuzz::lines_of(parts[1]), fx::fuzz::lines_of(parts[2]));
    for (int world : {1, 2, 6, 64}) {
      try {
        fx::validate_against_world(c, world);
      } catch (const fx::ConfigError&) {
        // the job's size decides; a message was made
      }
    }
  } catch (const fx::ConfigError&) {
    // Errors name a file:line:column, a variable or --fx-set: each origin
    // form is checked by the config tests; here nothing else may escape.
  }
  return 0;
}
