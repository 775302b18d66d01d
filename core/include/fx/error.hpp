#pragma once
// The fx exception hierarchy: one root, typed subclasses, every message
// naming the offending value and where it came from.
#include <stdexcept>
#include <string>
#include <vector>

namespace fx {

class Error : public std::runtime_error {
 public:
  Error(std::string what, const char* file, int line);
  const char* file() const noexcept { return file_; }
  int line() const noexcept { return line_; }

 private:
  const char* file_;
  int line_;
};

// A peer died or the communicator was revoked; caught by the runtime, which
// repairs and resumes. Carries the failed world ranks this process knows of.
class ProcessFailure : public Error {
 public:
  ProcessFailure(std::string what, std::vector<int> failed_world_ranks, const char* file, int line);
  const std::vector<int>& failed_world_ranks() const noexcept { return failed_; }

 private:
  std::vector<int> failed_;
};

// An MPI call failed for a reason other than a process failure.
class MpiError : public Error {
 public:
  MpiError(std::string call, int code, const char* file, int line);
  int code() const noexcept { return code_; }
  const std::string& call() const noexcept { return call_; }

 private:
  std::string call_;
  int code_;
};

// Bad configuration: position is "file:line:column" (or "--fx-set", "env FX_X").
class ConfigError : public Error {
 public:
  ConfigError(std::string position, std::string key, std::string message, const char* file, int line);
  const std::string& position() const noexcept { return position_; }
  const std::string& key() const noexcept { return key_; }

 private:
  std::string position_;
  std::string key_;
};

class CheckpointError : public Error {
 public:
  using Error::Error;
};

// No usable checkpoint where one existed (a rank and the holders of its
// redundancy died together and no HDF5 version is usable), and the policy
// says stop: the job ends with exit 4 rather than silently start again.
class CheckpointLost : public CheckpointError {
 public:
  using CheckpointError::CheckpointError;
};

class TryBlockAborted : public Error {
 public:
  using Error::Error;
};

// The API was used against its rules (e.g. Reinit regions nested).
class UsageError : public Error {
 public:
  using Error::Error;
};

// Spares are exhausted under the abort policy, or repair gave up.
class RecoveryFailed : public Error {
 public:
  using Error::Error;
};

}  // namespace fx

// FX_THROW(Type, args...): throw Type(args..., __FILE__, __LINE__).
#define FX_THROW(Type, ...) throw Type(__VA_ARGS__, __FILE__, __LINE__)
