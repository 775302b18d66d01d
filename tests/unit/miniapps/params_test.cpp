// ParamSet: switches (bool parameters) from YAML and the command line, and
// their errors, which name the value and where it was set.
#include <miniapps/params.hpp>

#include <fx/error.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace {

struct Fixture {
  std::int64_t n = 4;
  bool abft = false;
  miniapps::ParamSet set{"demo"};
  Fixture() { set.add("n", n, "size", 1).add("abft", abft, "a switch"); }
};

TEST(ParamsBool, DefaultAndText) {
  Fixture f;
  f.set.resolve(YAML::Node(), "", {});
  EXPECT_FALSE(f.abft);
  EXPECT_EQ(f.set.origin("abft"), "default");
  ASSERT_EQ(f.set.values().size(), 2u);
  EXPECT_EQ(f.set.values()[1].second, "false");
}

TEST(ParamsBool, YamlSpellings) {
  for (const char* yes : {"true", "True", "yes", "on", "1"}) {
    Fixture f;
    f.set.resolve(YAML::Load(std::string("abft: ") + yes), "run.yaml", {});
    EXPECT_TRUE(f.abft) << yes;
    EXPECT_EQ(f.set.origin("abft"), "run.yaml:1:7");
  }
  for (const char* no : {"false", "FALSE", "no", "off", "0"}) {
    Fixture f;
    f.abft = true;
    f.set.resolve(YAML::Load(std::string("abft: ") + no), "run.yaml", {});
    EXPECT_FALSE(f.abft) << no;
  }
}

TEST(ParamsBool, CommandLineWins) {
  Fixture f;
  f.set.resolve(YAML::Load("abft: true"), "run.yaml", {{"abft", "off"}});
  EXPECT_FALSE(f.abft);
  EXPECT_EQ(f.set.origin("abft"), "command line");
}

TEST(ParamsBool, BadValueNamesValueAndOrigin) {
  Fixture f;
  try {
    f.set.resolve(YAML::Load("n: 2\nabft: maybe"), "run.yaml", {});
    FAIL() << "no error";
  } catch (const fx::ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("run.yaml:2:7"), std::string::npos) << what;
    EXPECT_NE(what.find("app.abft"), std::string::npos) << what;
    EXPECT_NE(what.find("expects true or false, got 'maybe'"), std::string::npos) << what;
  }
  Fixture g;
  try {
    g.set.resolve(YAML::Node(), "", {{"abft", "2"}});
    FAIL() << "no error";
  } catch (const fx::ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--abft"), std::string::npos) << what;
    EXPECT_NE(what.find("got '2'"), std::string::npos) << what;
  }
}

}  // namespace
