// ParamSet: switches (bool parameters) from YAML and the command line, and
// their errors, which name the value and where it was set.
#include <miniapps/params.hpp>

#include <fx/config_yaml.hpp>
#include <fx/error.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace {

// An `app:` section parsed from `text`, its marks naming run.yaml.
fx::ConfigSection app(const std::string& text) {
  return fx::detail::make_section(YAML::Load(text), "run.yaml");
}

struct Fixture {
  std::int64_t n = 4;
  bool abft = false;
  miniapps::ParamSet set{"demo"};
  Fixture() { set.add("n", n, "size", 1).add("abft", abft, "a switch"); }
};

TEST(ParamsBool, DefaultAndText) {
  Fixture f;
  f.set.resolve(fx::ConfigSection(), {});
  EXPECT_FALSE(f.abft);
  EXPECT_EQ(f.set.origin("abft"), "default");
  ASSERT_EQ(f.set.values().size(), 2u);
  EXPECT_EQ(f.set.values()[1].second, "false");
}

TEST(ParamsBool, YamlSpellings) {
  for (const char* yes : {"true", "True", "yes", "on", "1"}) {
    Fixture f;
    f.set.resolve(app(std::string("abft: ") + yes), {});
    EXPECT_TRUE(f.abft) << yes;
    EXPECT_EQ(f.set.origin("abft"), "run.yaml:1:7");
  }
  for (const char* no : {"false", "FALSE", "no", "off", "0"}) {
    Fixture f;
    f.abft = true;
    f.set.resolve(app(std::string("abft: ") + no), {});
    EXPECT_FALSE(f.abft) << no;
  }
}

TEST(ParamsBool, CommandLineWins) {
  Fixture f;
  f.set.resolve(app("abft: true"), {{"abft", "off"}});
  EXPECT_FALSE(f.abft);
  EXPECT_EQ(f.set.origin("abft"), "command line");
}

TEST(ParamsBool, BadValueNamesValueAndOrigin) {
  Fixture f;
  try {
    f.set.resolve(app("n: 2\nabft: maybe"), {});
    FAIL() << "no error";
  } catch (const fx::ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("run.yaml:2:7"), std::string::npos) << what;
    EXPECT_NE(what.find("app.abft"), std::string::npos) << what;
    EXPECT_NE(what.find("expects true or false, got 'maybe'"), std::string::npos) << what;
  }
  Fixture g;
  try {
    g.set.resolve(fx::ConfigSection(), {{"abft", "2"}});
    FAIL() << "no error";
  } catch (const fx::ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--abft"), std::string::npos) << what;
    EXPECT_NE(what.find("got '2'"), std::string::npos) << what;
  }
}

}  // namespace
