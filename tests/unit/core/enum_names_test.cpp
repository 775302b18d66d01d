#include <fx/enum_names.hpp>
#include <gtest/gtest.h>

namespace demo {
enum class Colour { red, dark_green };
}
FX_ENUM_NAMES(demo::Colour, {demo::Colour::red, "red"}, {demo::Colour::dark_green, "dark-green"})

TEST(EnumNames, RoundTrip) {
  EXPECT_EQ(fx::to_string(demo::Colour::dark_green), "dark-green");
  EXPECT_EQ(fx::from_string<demo::Colour>("red"), demo::Colour::red);
  EXPECT_FALSE(fx::from_string<demo::Colour>("blue").has_value());
  EXPECT_EQ(fx::enum_choices<demo::Colour>(), "red | dark-green");
}
