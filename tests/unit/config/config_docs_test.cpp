// docs/config.md against the schema table (framework/src/config_schema.cpp):
// every key has a row with its type and default, every documented key of a
// schema section exists, and the FX_* aliases agree.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "config_schema.hpp"

namespace {

using fx::detail::config_schema;
using fx::detail::find_key;

// The cells of a markdown table row ("\|" is a pipe inside a cell).
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (std::size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '|' && line[i - 1] != '\\') {
      const auto a = cur.find_first_not_of(' ');
      const auto b = cur.find_last_not_of(' ');
      out.push_back(a == std::string::npos ? "" : cur.substr(a, b - a + 1));
      cur.clear();
    } else {
      cur += line[i];
    }
  }
  return out;
}

std::string unquote(const std::string& cell) {
  return cell.size() > 2 && cell.front() == '`' && cell.back() == '`' ? cell.substr(1, cell.size() - 2)
                                                                      : cell;
}

std::vector<std::vector<std::string>> rows() {
  std::ifstream in(FX_DOCS_CONFIG);
  EXPECT_TRUE(in) << FX_DOCS_CONFIG;
  std::vector<std::vector<std::string>> out;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("| `", 0) == 0) out.push_back(cells(line));
  return out;
}

bool in_schema_section(const std::string& key) {
  for (const auto& k : config_schema()) {
    const std::string section = k.path.substr(0, k.path.find('.') + 1);
    if (key.rfind(section, 0) == 0 && key != "inject.failures") return true;
  }
  return false;
}

TEST(ConfigDocs, KeyTablesMatchTheSchema) {
  std::map<std::string, std::vector<std::string>> documented;
  for (const auto& r : rows())
    if (r.size() == 4) documented[unquote(r[0])] = r;
  for (const auto& k : config_schema()) {
    const auto it = documented.find(k.path);
    ASSERT_NE(it, documented.end()) << k.path << " has no row in docs/config.md";
    EXPECT_EQ(it->second[1], k.type) << k.path;
    EXPECT_EQ(it->second[2], k.default_text) << k.path;
  }
  for (const auto& [key, row] : documented) {
    if (key.find('.') != std::string::npos && in_schema_section(key)) {
      EXPECT_NE(find_key(key), nullptr) << key << " is documented but not in the schema";
    }
  }
}

TEST(ConfigDocs, EnvironmentTableMatchesTheSchema) {
  std::map<std::string, std::string> aliases;  // FX_NAME -> key
  for (const auto& r : rows())
    if (r.size() == 3 && r[0].rfind("`FX_", 0) == 0) aliases[unquote(r[0])] = unquote(r[1]);
  for (const auto& k : config_schema()) {
    if (k.env.empty()) continue;
    ASSERT_TRUE(aliases.count(k.env)) << k.env << " has no row in docs/config.md";
    EXPECT_EQ(aliases[k.env], k.path) << k.env;
  }
  for (const auto& [name, key] : aliases) {
    if (name == "FX_CONFIG" || name == "FX_INJECT" || name.rfind("FX_CFG_", 0) == 0) continue;
    const auto* k = find_key(key);
    EXPECT_TRUE(k != nullptr && k->env == name) << name << " is documented but not a schema alias";
  }
}

}  // namespace

// Issue 40: a positional "app.x=1" (no --fx-set) was silently unused; the
// run warns about arguments that read like a setting of a known section.
TEST(SettingLikeArguments, NamesOnlyKnownSections) {
  std::vector<std::string> args = {"app",   "app.x=1",        "foo=bar",  "checkpoint.memory.every=3",
                                   "x.y=2", "--flag=app.z=1", "spares=2", "output.txt"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  EXPECT_EQ(fx::detail::setting_like_arguments(static_cast<int>(args.size()), argv.data()),
            (std::vector<std::string>{"app.x=1", "checkpoint.memory.every=3"}));
}
