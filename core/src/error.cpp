#include <fx/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace fx {

// By value in the installed signature (kept until the next release breaks ABI).
Error::Error(std::string what, const char* file, int line)  // NOLINT(performance-unnecessary-value-param)
    : std::runtime_error(what), file_(file), line_(line) {}

ProcessFailure::ProcessFailure(std::string what, std::vector<int> failed, const char* file, int line)
    : Error(std::move(what), file, line), failed_(std::move(failed)) {}

MpiError::MpiError(std::string call, int code, const char* file, int line)
    : Error(fmt::format("{} failed with MPI error code {}", call, code), file, line),
      call_(std::move(call)),
      code_(code) {}

ConfigError::ConfigError(std::string position, std::string key, std::string message, const char* file,
                         int line)
    : Error(fmt::format("{}: {}: {}", position, key, message), file, line),
      position_(std::move(position)),
      key_(std::move(key)) {}

}  // namespace fx
