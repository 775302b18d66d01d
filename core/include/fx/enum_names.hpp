#pragma once
/// \file
/// One enum <-> string facility for every typed setting in fx's API (config
/// values, report fields, phases). An enum opts in with FX_ENUM_NAMES at
/// namespace scope, next to its declaration:
/// \code
///   enum class Scheme { buddy, parity };
///   FX_ENUM_NAMES(fx::Scheme, {fx::Scheme::buddy, "buddy"}, {fx::Scheme::parity, "parity"})
/// \endcode
/// and then: fx::to_string(Scheme::buddy) == "buddy",
/// fx::from_string<Scheme>("parity") == Scheme::parity (std::nullopt for an
/// unknown name), fx::enum_choices<Scheme>() == "buddy | parity" (for error
/// messages and docs).
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace fx {

/// Specialised by FX_ENUM_NAMES; `names` lists every enumerator once.
template <class E>
struct EnumNames;

/// The name FX_ENUM_NAMES gave `value` ("?" for a value it did not list).
/// \tparam E an enum named with FX_ENUM_NAMES
/// \param value any value of E
/// \return its name, a view of a string literal (valid for the whole program)
template <class E>
std::string_view to_string(E value) {
  for (const auto& [v, name] : EnumNames<E>::names)
    if (v == value) return name;
  return "?";
}

/// The enumerator named `text` (exact match), or std::nullopt.
/// \tparam E an enum named with FX_ENUM_NAMES
/// \param text a name, compared case-sensitively
/// \return the enumerator of that name; std::nullopt when E has none
template <class E>
std::optional<E> from_string(std::string_view text) {
  for (const auto& [v, name] : EnumNames<E>::names)
    if (name == text) return v;
  return std::nullopt;
}

/// "a | b | c", in declaration order.
/// \tparam E an enum named with FX_ENUM_NAMES
/// \return every name FX_ENUM_NAMES lists for E, joined by " | " (for error messages)
template <class E>
std::string enum_choices() {
  std::string out;
  for (const auto& [v, name] : EnumNames<E>::names) {
    (void)v;
    if (!out.empty()) out += " | ";
    out += name;
  }
  return out;
}

}  // namespace fx

/// Names enum E's enumerators for fx::to_string, fx::from_string and
/// fx::enum_choices: FX_ENUM_NAMES(E, {E::a, "a"}, ...). At global
/// namespace scope, with E fully qualified.
/// \param E the enum type, fully qualified (fx::Scheme)
/// \param ... one {E::value, "name"} pair per enumerator, in declaration order
#define FX_ENUM_NAMES(E, ...)                                                \
  template <>                                                                \
  struct fx::EnumNames<E> {                                                  \
    static constexpr std::pair<E, std::string_view> names[] = {__VA_ARGS__}; \
  };
