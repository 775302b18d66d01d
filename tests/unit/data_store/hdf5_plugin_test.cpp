// The HDF5 level is a plugin: a store without it does not map HDF5 (nor
// Debian HDF5's curl/TLS dependencies); one with it loads the plugin at
// construction, so a missing plugin is an error at start.
#include <fx/data_store/store.hpp>
#include <fx/data_store/store_access.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace {

bool mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream all;
  all << maps.rdbuf();
  return all.str().find(name) != std::string::npos;
}

TEST(Hdf5Plugin, LoadedOnlyWithTheHdf5Level) {
  fx::CheckpointConfig off;
  off.hdf5.every = 0;
  off.hdf5.restart = true;  // a restart alone loads it only when a version is there to read
  const auto without = fx::detail::StoreAccess::make(off);
  EXPECT_FALSE(mapped("libhdf5"));
  EXPECT_FALSE(mapped("libfx_hdf5"));
#if FX_DATA_STORE_HDF5
  fx::CheckpointConfig on;
  on.hdf5.every = 1;
  const auto with = fx::detail::StoreAccess::make(on);
  EXPECT_TRUE(mapped("libfx_hdf5"));
  EXPECT_TRUE(mapped("libhdf5"));
#endif
}

}  // namespace
