#pragma once
// Private helpers shared by config.cpp, inject.cpp and report.cpp: value
// parsing, "did you mean" suggestions and how a YAML node is quoted in an
// error message.
#include <fx/config_yaml.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fx::detail {

// Levenshtein distance, for "did you mean" suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b);
// " (did you mean 'x'?)" for the nearest of `known`, or "" when none is close.
std::string suggestion(std::string_view got, const std::vector<std::string>& known);
// "a, b, c" (names joined for "expected one of ...").
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");

// A node as the user wrote it, for "got '...'": a scalar's text, "" for
// null, a flow rendering (shortened) for maps and sequences.
std::string node_text(const YAML::Node& node);
// "file:line:column" (1-based) of a node, or `file` alone without a mark.
std::string mark_position(const std::string& file, const YAML::Node& node);

// Strict scalar parsing: the whole text must be the value.
bool parse_int(std::string_view text, long long& out);
// A whole number written in decimal digits (a leading '+' allowed), of any
// size: what parse_int rejects only for being too large.
bool is_digits(std::string_view text);
bool parse_uint(std::string_view text, std::uint64_t& out);
bool parse_number(std::string_view text, double& out);
bool parse_bool(std::string_view text, bool& out);

// A failure target written as text: "2", "rank:2", "world:5", "spare",
// "spare:1", "buddy-of:2". Returns false when malformed.
bool parse_target(std::string_view text, TargetKind& kind, int& target);
std::string target_text(TargetKind kind, int target);

}  // namespace fx::detail
