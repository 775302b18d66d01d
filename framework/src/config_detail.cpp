#include "config_detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>

namespace fx::detail {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string suggestion(std::string_view got, const std::vector<std::string>& known) {
  std::size_t best = std::string::npos;
  const std::string* pick = nullptr;
  for (const auto& k : known) {
    const std::size_t d = edit_distance(got, k);
    if (d < best) best = d, pick = &k;
  }
  // Close enough to be a typo: at most a third of the word, at least 2 edits.
  const std::size_t limit = std::max<std::size_t>(2, got.size() / 3);
  if (pick == nullptr || best > limit || best >= pick->size()) return "";
  return fmt::format(" (did you mean '{}'?)", *pick);
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

std::string node_text(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "";
  if (node.IsScalar()) return node.Scalar();
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << node;
  std::string text = out.c_str();
  std::replace(text.begin(), text.end(), '\n', ' ');
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

std::string mark_position(const std::string& file, const YAML::Node& node) {
  const YAML::Mark m = node.IsDefined() ? node.Mark() : YAML::Mark::null_mark();
  if (m.is_null() || m.line < 0) return file;
  return fmt::format("{}:{}:{}", file, m.line + 1, m.column + 1);
}

bool parse_int(std::string_view text, long long& out) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), out);
  return r.ec == std::errc() && r.ptr == text.data() + text.size();
}

bool is_digits(std::string_view text) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

bool parse_uint(std::string_view text, std::uint64_t& out) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty() || text.front() == '-') return false;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), out);
  return r.ec == std::errc() && r.ptr == text.data() + text.size();
}

bool parse_number(std::string_view text, double& out) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), out);
  return r.ec == std::errc() && r.ptr == text.data() + text.size() && std::isfinite(out);
}

bool parse_bool(std::string_view text, bool& out) {
  std::string t(text);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "true" || t == "yes" || t == "on") return out = true, true;
  if (t == "false" || t == "no" || t == "off") return out = false, true;
  return false;
}

bool parse_target(std::string_view text, TargetKind& kind, int& target) {
  long long v = 0;
  auto number = [&](std::string_view s) { return parse_int(s, v) && v >= 0 && v <= 1 << 30; };
  if (number(text)) return kind = TargetKind::rank, target = static_cast<int>(v), true;
  if (text == "spare") return kind = TargetKind::spare, target = 0, true;
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) return false;
  const auto head = from_string<TargetKind>(text.substr(0, colon));
  if (!head || !number(text.substr(colon + 1))) return false;
  kind = *head;
  target = static_cast<int>(v);
  return true;
}

std::string target_text(TargetKind kind, int target) {
  if (kind == TargetKind::rank) return std::to_string(target);
  if (kind == TargetKind::spare && target == 0) return "spare";
  return fmt::format("{}:{}", to_string(kind), target);
}

}  // namespace fx::detail
