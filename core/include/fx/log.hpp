#pragma once
/// \file
/// Rank-prefixed logging: "[fx r3/8 WARN] ...". Logical rank 0 prints info;
/// every process prints warnings and errors. FX_LOG_LEVEL or log.level set it.
#include <fmt/format.h>

#include <string>
#include <string_view>

/// Rank-prefixed logging to stderr (fx::log::info(...), warn(...), ...).
namespace fx::log {

/// Message severities, least severe first; `off` as a threshold silences all.
enum class Level { trace, debug, info, warn, error, off };

/// Parse "trace|debug|info|warn|error|off"; returns false on anything else.
bool parse_level(std::string_view text, Level& out);
/// The level's lower-case name, as parse_level reads it ("warn").
std::string_view level_name(Level level);

/// Who is speaking: tag is 'r' for an active rank, 's' for a spare.
void set_identity(char tag, int rank, int size);
/// Set this process's threshold: messages below `level` are dropped.
void set_level(Level level);
/// This process's threshold (info, or FX_LOG_LEVEL, until set_level).
Level level();
/// Whether a message at `level` is printed here: at or above the threshold,
/// and info messages on logical rank 0 only.
bool enabled(Level level);

namespace detail {
void write(Level level, std::string_view message);
}

/// Format (fmt syntax) and print a message at level `lv` when enabled(lv).
template <class... Args>
void emit(Level lv, fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(lv)) detail::write(lv, fmt::format(f, std::forward<Args>(args)...));
}
/// emit() at Level::trace.
template <class... Args>
void trace(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::trace, f, std::forward<Args>(a)...);
}
/// emit() at Level::debug.
template <class... Args>
void debug(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::debug, f, std::forward<Args>(a)...);
}
/// emit() at Level::info.
template <class... Args>
void info(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::info, f, std::forward<Args>(a)...);
}
/// emit() at Level::warn.
template <class... Args>
void warn(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::warn, f, std::forward<Args>(a)...);
}
/// emit() at Level::error.
template <class... Args>
void error(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::error, f, std::forward<Args>(a)...);
}

}  // namespace fx::log
