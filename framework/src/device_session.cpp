#include "device_session.hpp"

#include <fx/error.hpp>

#include <Kokkos_Core.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

namespace fx::detail {
namespace {

constexpr std::string_view kKokkosPrefix = "--kokkos-";
constexpr const char* kVisibleVariable = "KOKKOS_VISIBLE_DEVICES";

// Kokkos' own ways to choose the device: where one is given, it decides.
constexpr std::string_view kDeviceOptions[] = {"--kokkos-device-id", "--kokkos-map-device-id-by",
                                               "--kokkos-num-devices", "--kokkos-ndevices"};
constexpr const char* kDeviceVariables[] = {"KOKKOS_DEVICE_ID", "KOKKOS_MAP_DEVICE_ID_BY",
                                            "KOKKOS_NUM_DEVICES"};

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::string device_option(std::string_view arg) {
  for (const std::string_view o : kDeviceOptions)
    if (starts_with(arg, o)) return std::string(arg);
  return {};
}

std::string device_variable() {
  for (const char* v : kDeviceVariables)
    if (const char* value = std::getenv(v); value != nullptr) return fmt::format("{}={}", v, value);
  return {};
}

}  // namespace

int count_device_list(const std::string& text, const std::string& origin) {
  int n = 0;
  for (std::size_t from = 0;; ++n) {
    const std::size_t comma = text.find(',', from);
    const std::string_view id = std::string_view(text).substr(from, comma - from);
    if (id.empty() || !std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      FX_THROW(ConfigError, origin, kVisibleVariable,
               fmt::format("expected a comma-separated list of device ids (\"0,1\"), got '{}'", text));
    }
    if (comma == std::string::npos) return n + 1;
    from = comma + 1;
  }
}

int visible_devices() {
  if (const char* list = std::getenv(kVisibleVariable); list != nullptr)
    return count_device_list(list, fmt::format("env {}", kVisibleVariable));
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP) || defined(KOKKOS_ENABLE_SYCL)
#if KOKKOS_VERSION >= 40200
  return Kokkos::num_devices();  // the runtime's count: no context is created
#else
  return 1;  // Kokkos 3 cannot count before it is initialised: the first device
#endif
#else
  return 0;
#endif
}

DeviceSession::DeviceSession(int& argc, char** argv) {
  if (argc > 0 && argv[0] != nullptr) program_ = argv[0];
  int kept = argc > 0 ? 1 : 0;
  for (int i = kept; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!starts_with(arg, kKokkosPrefix)) {
      argv[kept++] = argv[i];
      continue;
    }
    kokkos_args_.emplace_back(arg);
    if (user_choice_.empty()) user_choice_ = device_option(arg);
  }
  argc = kept;
  argv[argc] = nullptr;
  if (user_choice_.empty()) user_choice_ = device_variable();
  if (user_choice_.empty()) visible_ = visible_devices();
}

DeviceSession::~DeviceSession() {
  if (started_ && Kokkos::is_initialized()) Kokkos::finalize();
}

void DeviceSession::start(int device) {
  if (started_) return;
  std::vector<std::string> args{program_};
  args.insert(args.end(), kokkos_args_.begin(), kokkos_args_.end());
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP) || defined(KOKKOS_ENABLE_SYCL)
  if (device >= 0 && user_choice_.empty()) args.push_back(fmt::format("--kokkos-device-id={}", device));
#else
  (void)device;  // a host backend has no device to choose
#endif
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  Kokkos::initialize(argc, argv.data());
  started_ = true;
}

}  // namespace fx::detail
