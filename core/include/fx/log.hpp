#pragma once
// Rank-prefixed logging: "[fx r3/8 WARN] ...". Logical rank 0 prints info;
// every process prints warnings and errors. FX_LOG_LEVEL or log.level set it.
#include <fmt/format.h>

#include <string>
#include <string_view>

namespace fx::log {

enum class Level { trace, debug, info, warn, error, off };

// Parse "trace|debug|info|warn|error|off"; returns false on anything else.
bool parse_level(std::string_view text, Level& out);
std::string_view level_name(Level level);

// Who is speaking: tag is 'r' for an active rank, 's' for a spare.
void set_identity(char tag, int rank, int size);
void set_level(Level level);
Level level();
bool enabled(Level level);

namespace detail {
void write(Level level, std::string_view message);
}

template <class... Args>
void emit(Level lv, fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(lv)) detail::write(lv, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void trace(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::trace, f, std::forward<Args>(a)...);
}
template <class... Args>
void debug(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::debug, f, std::forward<Args>(a)...);
}
template <class... Args>
void info(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::info, f, std::forward<Args>(a)...);
}
template <class... Args>
void warn(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::warn, f, std::forward<Args>(a)...);
}
template <class... Args>
void error(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::error, f, std::forward<Args>(a)...);
}

}  // namespace fx::log
