#pragma once
// Kokkos in this process: initialised when the process becomes active (at
// start, or when a spare is recruited) on the device the job's map chose,
// and finalised at the end when it was. A spare that is never recruited
// never initialises Kokkos: no device context, no device memory, no host
// thread pool.
#include <string>
#include <vector>

namespace fx::detail {

// How many devices this process may choose among: KOKKOS_VISIBLE_DEVICES'
// entries when it is set (Kokkos 4 takes its device from that list too; on
// a host backend it simulates one), else the GPU backend's count (after
// CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES; counting creates no
// context), else 0. Throws ConfigError naming a malformed list.
int visible_devices();
// The entries of a KOKKOS_VISIBLE_DEVICES value ("0,2,3": 3); ConfigError
// naming the value and where it came from when it is not a list of ids.
int count_device_list(const std::string& text, const std::string& origin);

class DeviceSession {
 public:
  // Takes Kokkos' options (--kokkos-*) out of argc/argv and keeps them for
  // the initialisation; counts the visible devices unless the user chose
  // the device (ConfigError: a malformed KOKKOS_VISIBLE_DEVICES).
  DeviceSession(int& argc, char** argv);
  ~DeviceSession();  // Kokkos::finalize, when it was initialised
  DeviceSession(const DeviceSession&) = delete;
  DeviceSession& operator=(const DeviceSession&) = delete;

  // Where the user chose the device themselves (--kokkos-device-id and the
  // like, or their KOKKOS_* variables): fx's device policy then stays out.
  // "" when they did not.
  const std::string& user_choice() const { return user_choice_; }
  int visible() const { return visible_; }  // visible_devices(); 0 under the user's choice
  // Initialise Kokkos, on `device` (an index into the visible devices; -1:
  // Kokkos' own choice) where a GPU backend is enabled. Once.
  void start(int device);
  bool started() const { return started_; }

 private:
  std::string program_;
  std::vector<std::string> kokkos_args_;
  std::string user_choice_;
  int visible_ = 0;
  bool started_ = false;
};

}  // namespace fx::detail
