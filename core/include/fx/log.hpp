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
/// \param text a level's name, lower case, exactly
/// \param[out] out set to the level `text` names; left unchanged when it names none
/// \return whether `text` named a level
bool parse_level(std::string_view text, Level& out);
/// The level's lower-case name, as parse_level reads it ("warn").
/// \param level any Level, `off` included
/// \return a view of a string literal (valid for the whole program)
std::string_view level_name(Level level);

/// Who is speaking: tag is 'r' for an active rank, 's' for a spare, 'w' for
/// a process that start-up has not yet given a role.
/// \param tag 'r', 's' or 'w', the prefix's letter
/// \param rank the logical rank of an active process, else the world rank
/// \param size the number of logical ranks (active), else of world ranks
void set_identity(char tag, int rank, int size);
/// Set this process's threshold: messages below `level` are dropped.
/// \param level the least severe level printed; Level::off prints nothing
void set_level(Level level);
/// This process's threshold (info, or FX_LOG_LEVEL, until set_level).
/// \return the least severe level printed
Level level();
/// Whether a message at `level` is printed here: at or above the threshold,
/// and info messages on logical rank 0 only.
/// \param level a message's severity
/// \return true when emit() at that level prints on this process
bool enabled(Level level);

namespace detail {
void write(Level level, std::string_view message);
}

/// Format (fmt syntax) and print a message at level `lv` when enabled(lv).
/// \param lv the message's severity
/// \param f the fmt format string, checked against `args` at compile time
/// \param args the values `f` formats (formatted only when the message is printed)
template <class... Args>
void emit(Level lv, fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(lv)) detail::write(lv, fmt::format(f, std::forward<Args>(args)...));
}
/// emit() at Level::trace.
/// \param f the fmt format string, checked against `a` at compile time
/// \param a the values `f` formats
template <class... Args>
void trace(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::trace, f, std::forward<Args>(a)...);
}
/// emit() at Level::debug.
/// \param f the fmt format string, checked against `a` at compile time
/// \param a the values `f` formats
template <class... Args>
void debug(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::debug, f, std::forward<Args>(a)...);
}
/// emit() at Level::info.
/// \param f the fmt format string, checked against `a` at compile time
/// \param a the values `f` formats
template <class... Args>
void info(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::info, f, std::forward<Args>(a)...);
}
/// emit() at Level::warn.
/// \param f the fmt format string, checked against `a` at compile time
/// \param a the values `f` formats
template <class... Args>
void warn(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::warn, f, std::forward<Args>(a)...);
}
/// emit() at Level::error.
/// \param f the fmt format string, checked against `a` at compile time
/// \param a the values `f` formats
template <class... Args>
void error(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::error, f, std::forward<Args>(a)...);
}

}  // namespace fx::log
