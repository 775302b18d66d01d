// Finding and loading the HDF5 plugin (hdf5_plugin.hpp).
#include <fx/error.hpp>

#include <dlfcn.h>

#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "hdf5_plugin.hpp"

namespace fx::detail {

const Hdf5Api& load_hdf5_plugin() {
#if FX_DATA_STORE_HDF5
  std::vector<std::string> paths;
  if (const char* env = std::getenv("FX_HDF5_PLUGIN"); env != nullptr && *env != '\0') {
    paths.emplace_back(env);  // set by the installed launcher: the package may have moved
  } else {
    paths = {FX_HDF5_PLUGIN_BUILD, FX_HDF5_PLUGIN_INSTALL};
  }
  std::string why;
  for (const auto& path : paths) {
    // Never closed: its table is used for the rest of the process.
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      why += fmt::format("\n  {}: {}", path, dlerror());
      continue;
    }
    using Entry = const Hdf5Api* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(lib, kHdf5ApiSymbol));
    const Hdf5Api* api = entry != nullptr ? entry() : nullptr;
    if (api != nullptr && api->version == kHdf5ApiVersion) return *api;
    why += fmt::format("\n  {}: not an fx HDF5 plugin of version {}", path, kHdf5ApiVersion);
  }
  FX_THROW(CheckpointError,
           fmt::format("HDF5 level: cannot load fx's HDF5 plugin (set FX_HDF5_PLUGIN to its path):{}", why));
#else
  FX_THROW(CheckpointError, "HDF5 level: fx was built without HDF5 (FX_ENABLE_HDF5=OFF)");
#endif
}

}  // namespace fx::detail
