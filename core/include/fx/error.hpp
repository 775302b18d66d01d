#pragma once
/// \file
/// The fx exception hierarchy: one root, typed subclasses, every message
/// naming the offending value and where it came from.
#include <stdexcept>
#include <string>
#include <vector>

/// fx: MPI+Kokkos applications that survive process failures.
namespace fx {

/// The root of fx's exceptions: the message (what()) and where it was thrown.
class Error : public std::runtime_error {
 public:
  /// `what` is the message; file and line where it was thrown (FX_THROW fills them in).
  Error(std::string what, const char* file, int line);
  const char* file() const noexcept { return file_; }  ///< source file that threw
  int line() const noexcept { return line_; }          ///< line in file()

 private:
  const char* file_;
  int line_;
};

/// A peer died or the communicator was revoked; caught by the runtime, which
/// repairs and resumes. Carries the failed world ranks this process knows of.
class ProcessFailure : public Error {
 public:
  /// The message, the failed world ranks known, and where it was thrown.
  ProcessFailure(std::string what, std::vector<int> failed_world_ranks, const char* file, int line);
  /// The failed world ranks this process knew of when it threw.
  const std::vector<int>& failed_world_ranks() const noexcept { return failed_; }

 private:
  std::vector<int> failed_;
};

/// An MPI call failed for a reason other than a process failure.
class MpiError : public Error {
 public:
  /// what(): "<call> failed with MPI error code <code>".
  MpiError(std::string call, int code, const char* file, int line);
  int code() const noexcept { return code_; }                 ///< the MPI error code
  const std::string& call() const noexcept { return call_; }  ///< the MPI call, e.g. "MPI_Send"

 private:
  std::string call_;
  int code_;
};

/// Bad configuration: position is "file:line:column" (or "--fx-set", "env FX_X").
class ConfigError : public Error {
 public:
  /// what(): "<position>: <key>: <message>".
  ConfigError(std::string position, std::string key, std::string message, const char* file, int line);
  const std::string& position() const noexcept { return position_; }  ///< where the value was set
  const std::string& key() const noexcept { return key_; }            ///< the key, e.g. "spares.count"

 private:
  std::string position_;
  std::string key_;
};

/// A checkpoint could not be written, read or restored (a missing or corrupt
/// file, a member that does not match, an image that is nowhere).
class CheckpointError : public Error {
 public:
  using Error::Error;  ///< (what, file, line), as fx::Error
};

/// No usable checkpoint where one existed (a rank and the holders of its
/// redundancy died together and no HDF5 version is usable), and the policy
/// says stop: the job ends with exit 4 rather than silently start again.
class CheckpointLost : public CheckpointError {
 public:
  using CheckpointError::CheckpointError;  ///< (what, file, line), as fx::Error
};

/// A top-level TryBlock still aborted after its soft retries, with rollback
/// off or already tried at that point; what() names the block and its outcome.
class TryBlockAborted : public Error {
 public:
  using Error::Error;  ///< (what, file, line), as fx::Error
};

/// The API was used against its rules (e.g. Reinit regions nested).
class UsageError : public Error {
 public:
  using Error::Error;  ///< (what, file, line), as fx::Error
};

/// Spares are exhausted under the abort policy, or repair gave up.
class RecoveryFailed : public Error {
 public:
  using Error::Error;  ///< (what, file, line), as fx::Error
};

}  // namespace fx

/// FX_THROW(Type, args...): throw Type(args..., __FILE__, __LINE__).
#define FX_THROW(Type, ...) throw Type(__VA_ARGS__, __FILE__, __LINE__)
