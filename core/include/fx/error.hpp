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
  /// An error thrown at `file`:`line` (FX_THROW fills them in).
  /// \param what the message, as what() returns it
  /// \param file the source file that threw; not copied: a string literal (__FILE__)
  /// \param line the line in `file`
  Error(std::string what, const char* file, int line);
  /// Source file that threw.
  /// \return the file name FX_THROW passed (__FILE__), as the compiler spelled it
  const char* file() const noexcept { return file_; }
  /// Line in file().
  /// \return a line number, 1-based
  int line() const noexcept { return line_; }

 private:
  const char* file_;
  int line_;
};

/// A peer died or the communicator was revoked; caught by the runtime, which
/// repairs and resumes. Carries the failed world ranks this process knows of.
class ProcessFailure : public Error {
 public:
  /// A failure seen at `file`:`line`.
  /// \param what the message, as what() returns it
  /// \param failed_world_ranks the world ranks of the processes known to have failed (empty when
  ///   none is known yet: a revoked communicator, a repair started elsewhere)
  /// \param file the source file that threw (a string literal, not copied)
  /// \param line the line in `file`
  ProcessFailure(std::string what, std::vector<int> failed_world_ranks, const char* file, int line);
  /// The failed world ranks this process knew of when it threw.
  /// \return ranks in MPI_COMM_WORLD, possibly empty; valid as long as the exception
  const std::vector<int>& failed_world_ranks() const noexcept { return failed_; }

 private:
  std::vector<int> failed_;
};

/// An MPI call failed for a reason other than a process failure.
class MpiError : public Error {
 public:
  /// what(): "<call> failed with MPI error code <code>".
  /// \param call the MPI call that failed, e.g. "MPI_Send" (fx::Comm adds the caller's file:line)
  /// \param code the error code it returned (not MPI_SUCCESS)
  /// \param file the source file that threw (a string literal, not copied)
  /// \param line the line in `file`
  MpiError(std::string call, int code, const char* file, int line);
  /// The MPI error code.
  /// \return what the call returned (MPI_Error_string describes it)
  int code() const noexcept { return code_; }
  /// The MPI call, e.g. "MPI_Send".
  /// \return the name given to the constructor (fx::Comm adds the caller's file:line)
  const std::string& call() const noexcept { return call_; }

 private:
  std::string call_;
  int code_;
};

/// Bad configuration: position is "file:line:column" (or "--fx-set", "env FX_X").
class ConfigError : public Error {
 public:
  /// what(): "<position>: <key>: <message>".
  /// \param position where the value was set: "file:line:column", "--fx-set", "env FX_X"
  /// \param key the dotted key, e.g. "spares.count"
  /// \param message what was expected and what was found ("expected ..., got '...'")
  /// \param file the source file that threw (a string literal, not copied)
  /// \param line the line in `file`
  ConfigError(std::string position, std::string key, std::string message, const char* file, int line);
  /// Where the value was set.
  /// \return "file:line:column", "--fx-set", "env FX_X", "command line" or "default"
  const std::string& position() const noexcept { return position_; }
  /// The key, e.g. "spares.count".
  /// \return the dotted key as the user wrote it ("app.nx" for an application's own)
  const std::string& key() const noexcept { return key_; }

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
