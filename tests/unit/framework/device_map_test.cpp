// The device policy on simulated device lists (CI has no GPU): which
// device each rank takes at start and after a repair, and what a process
// reads as its visible devices and Kokkos options.
#include <Kokkos_Macros.hpp>
#include <fx/error.hpp>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "device_map.hpp"
#include "device_session.hpp"

namespace fx::detail {
namespace {

// world ranks 0..n-1, the last `spares` of them spares.
std::vector<Identity> table(int n, int spares) {
  std::vector<Identity> t;
  for (int r = 0; r < n; ++r) t.push_back({r, r < n - spares ? r : -1});
  return t;
}

std::vector<int> devices(const DeviceMap& m, int n) {
  std::vector<int> out;
  for (int r = 0; r < n; ++r) out.push_back(m.device(r));
  return out;
}

TEST(DeviceMap, RoundRobinByNodeLocalRankAndSeveralRanksToADevice) {
  DeviceMap m;
  // Host a: world 0-3 and the spares 6, 7; host b: world 4, 5. Two devices each.
  m.start({"a", "a", "a", "a", "b", "b", "a", "a"}, std::vector<int>(8, 2),
          {{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {6, -1}, {7, -1}});
  EXPECT_EQ(devices(m, 8), (std::vector<int>{0, 1, 0, 1, 0, 1, -1, -1}));
}

TEST(DeviceMap, RecruitTakesItsPredecessorsDeviceOnTheSameHost) {
  DeviceMap m;
  m.start(std::vector<std::string>(6, "a"), std::vector<int>(6, 4), table(6, 2));  // 4 ranks, 4 devices
  const auto before = table(6, 2);
  // Logical 1 (world 1, device 1) dies; spare world 4 takes logical 1.
  std::vector<Identity> after{{0, 0}, {4, 1}, {2, 2}, {3, 3}, {5, -1}};
  m.repair(before, after, {{1, 1}});
  EXPECT_EQ(m.device(4), 1);
  EXPECT_EQ(m.device(1), -1);
  EXPECT_EQ(m.device(5), -1);
  EXPECT_EQ(m.describe(4), "device 1 of 4, its predecessor's (world rank 1)");
}

TEST(DeviceMap, RecruitOnAnotherHostTakesItsHostsLeastUsedDevice) {
  DeviceMap m;
  // Host a: world 0-2 (devices 0, 1, 0); host b: world 3 (device 0), spare world 4.
  m.start({"a", "a", "a", "b", "b"}, std::vector<int>(5, 2), table(5, 1));
  EXPECT_EQ(devices(m, 5), (std::vector<int>{0, 1, 0, 0, -1}));
  m.repair(table(5, 1), {{0, 0}, {4, 1}, {2, 2}, {3, 3}}, {{1, 1}});
  EXPECT_EQ(m.device(4), 1);  // b's device 0 is world 3's
  EXPECT_EQ(m.describe(4), "device 1 of 2, the least used on host b");
}

TEST(DeviceMap, TwoRecruitsInOneRepairShareOutTheFreedDevices) {
  DeviceMap m;
  m.start({"a", "a", "b", "b"}, std::vector<int>(4, 2), table(4, 2));  // world 0, 1 on a: devices 0, 1
  // Both ranks die; the spares on host b take them: b's devices 0 then 1.
  m.repair(table(4, 2), {{2, 0}, {3, 1}}, {{0, 0}, {1, 1}});
  EXPECT_EQ(m.device(2), 0);
  EXPECT_EQ(m.device(3), 1);
}

TEST(DeviceMap, ARecruitKilledInItsRestoreHandsTheDeviceOn) {
  std::vector<Identity> first{{0, 0}, {1, 1}, {4, 2}, {3, 3}, {5, -1}};
  DeviceMap n;
  n.start(std::vector<std::string>(6, "a"), std::vector<int>(6, 4), table(6, 2));
  n.repair(table(6, 2), first, {{2, 2}});  // logical 2 (device 2) dies; world 4 takes it
  EXPECT_EQ(n.device(4), 2);
  // The recruit dies too; the last spare takes logical 2 and device 2 again.
  n.repair(first, {{0, 0}, {1, 1}, {5, 2}, {3, 3}}, {{4, 2}});
  EXPECT_EQ(n.device(5), 2);
}

TEST(DeviceMap, NoDeviceVisibleMeansNone) {
  DeviceMap m;
  m.start({"a", "a", "a"}, {0, 0, 0}, table(3, 1));
  EXPECT_EQ(devices(m, 3), (std::vector<int>{-1, -1, -1}));
  EXPECT_EQ(m.describe(0), "no device visible");
  m.repair(table(3, 1), {{0, 0}, {2, 1}}, {{1, 1}});
  EXPECT_EQ(m.device(2), -1);
}

TEST(DeviceMap, AShrinkKeepsTheSurvivorsDevices) {
  DeviceMap m;
  m.start(std::vector<std::string>(3, "a"), std::vector<int>(3, 2), table(3, 0));
  m.repair(table(3, 0), {{0, 0}, {2, 1}}, {{1, 1}});  // no spare: world 2 renumbered
  EXPECT_EQ(m.device(0), 0);
  EXPECT_EQ(m.device(2), 0);
}

TEST(DeviceList, CountsItsIdsAndNamesABadOne) {
  EXPECT_EQ(count_device_list("0", "env KOKKOS_VISIBLE_DEVICES"), 1);
  EXPECT_EQ(count_device_list("0,2,3", "env KOKKOS_VISIBLE_DEVICES"), 3);
  for (const std::string bad : {"", "0,", ",1", "0,,1", "a", "0;1", "-1"}) {
    try {
      count_device_list(bad, "env KOKKOS_VISIBLE_DEVICES");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.position(), "env KOKKOS_VISIBLE_DEVICES");
      EXPECT_NE(std::string(e.what()).find("got '" + bad + "'"), std::string::npos) << e.what();
    }
  }
}

struct Argv {
  std::vector<std::string> text;
  std::vector<char*> ptrs;
  int argc = 0;
  explicit Argv(std::vector<std::string> t) : text(std::move(t)) {
    for (auto& s : text) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
    argc = static_cast<int>(text.size());
  }
  std::vector<std::string> left() const { return {ptrs.begin(), ptrs.begin() + argc}; }
};

TEST(DeviceSession, TakesKokkosOptionsOutAndCountsTheSimulatedList) {
  ::setenv("KOKKOS_VISIBLE_DEVICES", "0,1,3", 1);
  Argv a({"app", "--nx", "8", "--kokkos-num-threads=2", "x"});
  DeviceSession s(a.argc, a.ptrs.data());
  EXPECT_EQ(a.left(), (std::vector<std::string>{"app", "--nx", "8", "x"}));
  EXPECT_EQ(s.user_choice(), "");
  EXPECT_EQ(s.visible(), 3);
  EXPECT_FALSE(s.started());
  ::unsetenv("KOKKOS_VISIBLE_DEVICES");
}

TEST(DeviceSession, TheUsersDeviceOptionTurnsThePolicyOff) {
  ::setenv("KOKKOS_VISIBLE_DEVICES", "0,1", 1);
  Argv a({"app", "--kokkos-device-id=1"});
  DeviceSession s(a.argc, a.ptrs.data());
  EXPECT_EQ(s.user_choice(), "--kokkos-device-id=1");
  EXPECT_EQ(s.visible(), 0);
  ::unsetenv("KOKKOS_VISIBLE_DEVICES");
  ::setenv("KOKKOS_DEVICE_ID", "0", 1);
  Argv b({"app"});
  DeviceSession t(b.argc, b.ptrs.data());
  EXPECT_EQ(t.user_choice(), "KOKKOS_DEVICE_ID=0");
  ::unsetenv("KOKKOS_DEVICE_ID");
}

TEST(DeviceSession, AHostBackendSeesNoDevice) {
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP) || defined(KOKKOS_ENABLE_SYCL)
  GTEST_SKIP() << "a GPU backend counts its devices";
#endif
  ::unsetenv("KOKKOS_VISIBLE_DEVICES");
  EXPECT_EQ(visible_devices(), 0);
}

TEST(DeviceSession, AMalformedListIsAConfigError) {
  ::setenv("KOKKOS_VISIBLE_DEVICES", "0,x", 1);
  Argv a({"app"});
  EXPECT_THROW(DeviceSession(a.argc, a.ptrs.data()), ConfigError);
  ::unsetenv("KOKKOS_VISIBLE_DEVICES");
}

}  // namespace
}  // namespace fx::detail
