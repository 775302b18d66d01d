#include <fx/comm.hpp>
#include <gtest/gtest.h>
#include <mpi.h>

#include <climits>
#include <cstddef>
#include <string>

namespace {

fx::Comm world() { return fx::Comm(MPI_COMM_WORLD); }

TEST(Comm, CountAboveIntMaxIsRefusedWithTheCallersLine) {
  const fx::Comm c = world();
  char byte = 0;
  const std::size_t too_many = static_cast<std::size_t>(INT_MAX) + 1;
  const int line = __LINE__ + 2;
  try {
    c.send(&byte, too_many, 0, 0);
    FAIL() << "no error";
  } catch (const fx::UsageError& e) {
    EXPECT_STREQ(e.file(), __FILE__);
    EXPECT_EQ(e.line(), line);
    const std::string what = e.what();
    EXPECT_NE(what.find(std::string(__FILE__) + ":" + std::to_string(line)), std::string::npos) << what;
    EXPECT_NE(what.find("MPI_Send of 2147483648 elements refused"), std::string::npos) << what;
  }
  // Types MPI does not know travel as bytes: the byte count is what must fit.
  struct Triple {
    double a, b, c;
  };
  Triple t{};
  EXPECT_THROW(c.bcast(&t, static_cast<std::size_t>(INT_MAX) / sizeof(Triple) + 1, 0), fx::UsageError);
}

TEST(Comm, MpiErrorNamesTheCaller) {
  const fx::Comm c = world();
  int x = 0;
  const int line = __LINE__ + 2;
  try {
    c.send(&x, 1, c.size() + 5, 0);  // no such rank
    FAIL() << "no error";
  } catch (const fx::MpiError& e) {
    EXPECT_STREQ(e.file(), __FILE__);
    EXPECT_EQ(e.line(), line);
    EXPECT_NE(std::string(e.what()).find(std::string("MPI_Send at ") + __FILE__), std::string::npos)
        << e.what();
  }
}

}  // namespace
