#pragma once
/// \file
/// The job's verdict for the launcher (bin/fx-run, scripts/launch.sh), which
/// exits with it: mpiexec --with-ft ulfm exits 0 even when ranks were killed.
#include <fx/enum_names.hpp>

#include <string_view>

namespace fx {
/// Exit codes of an fx job, as the launcher reports them; the run report's
/// exit.status names them (fx::to_string).
enum class ExitCode : int {
  ok = 0,        ///< finished, no failure seen
  error = 1,     ///< an error unrelated to process failures
  usage = 2,     ///< bad command line or configuration
  survived = 3,  ///< finished correctly after surviving failures
  aborted = 4,   ///< failures could not be survived (policy abort)
};

/// Write "<code> <text>" to $FX_STATUS_FILE (no-op when unset). fx::run does
/// this itself; a program the launcher runs without fx::run (a plain MPI
/// baseline) calls it on one rank, or the launcher reports "no verdict" (125).
/// A file that cannot be written is left as it is (the launcher then reports no verdict).
/// \param code the job's verdict
/// \param text its reason, on one line (the launcher prints it)
void write_status(ExitCode code, std::string_view text);
}  // namespace fx

FX_ENUM_NAMES(fx::ExitCode, {fx::ExitCode::ok, "ok"}, {fx::ExitCode::error, "error"},
              {fx::ExitCode::usage, "usage"}, {fx::ExitCode::survived, "survived"},
              {fx::ExitCode::aborted, "aborted"})
