#include <fx/log.hpp>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <array>
#include <cstdlib>

namespace fx::log {
namespace {

struct State {
  char tag = 'r';
  int rank = 0;
  int size = 1;
  Level level = Level::info;
  std::shared_ptr<spdlog::logger> sink;
  State() {
    sink = spdlog::stderr_logger_mt("fx");
    sink->set_pattern("%v");
    sink->set_level(spdlog::level::trace);
    sink->flush_on(spdlog::level::trace);  // lines must survive a SIGKILL
    if (const char* env = std::getenv("FX_LOG_LEVEL")) {
      Level parsed{};
      if (parse_level(env, parsed)) level = parsed;
    }
  }
};

State& state() {
  static State s;
  return s;
}

constexpr std::array<std::string_view, 6> kNames = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF"};
constexpr std::array<std::string_view, 6> kKeys = {"trace", "debug", "info", "warn", "error", "off"};

}  // namespace

bool parse_level(std::string_view text, Level& out) {
  for (std::size_t i = 0; i < kKeys.size(); ++i) {
    if (text == kKeys[i]) {
      out = static_cast<Level>(i);
      return true;
    }
  }
  return false;
}

std::string_view level_name(Level level) { return kKeys[static_cast<std::size_t>(level)]; }

void set_identity(char tag, int rank, int size) {
  auto& s = state();
  s.tag = tag;
  s.rank = rank;
  s.size = size;
}

void set_level(Level level) { state().level = level; }
Level level() { return state().level; }

bool enabled(Level lv) {
  const auto& s = state();
  if (lv < s.level || lv == Level::off) return false;
  // Info is rank 0's alone; debug output is asked for, so every rank gives it.
  return lv != Level::info || (s.tag == 'r' && s.rank == 0);
}

namespace detail {
void write(Level lv, std::string_view message) {
  auto& s = state();
  s.sink->info("[fx {}{}/{} {}] {}", s.tag, s.rank, s.size, kNames[static_cast<std::size_t>(lv)], message);
}
}  // namespace detail

}  // namespace fx::log
