// Every rank loads the configuration and reaches the same verdict: on a bad
// one, rank 0 prints the one-line error, every rank exits with 2 (usage),
// and nobody waits for anybody. The allreduce below only checks that the
// verdicts agree; fx itself decides before any communication.
#include <fx/config.hpp>
#include <fx/error.hpp>
#include <fx/exit_code.hpp>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string error;
  try {
    const fx::Config config = fx::load_config(argc, argv);
    fx::validate_against_world(config, size);
  } catch (const fx::ConfigError& e) {
    error = e.what();
  }
  const unsigned long long mine = std::hash<std::string>{}(error);
  unsigned long long lo = 0, hi = 0;
  MPI_Allreduce(&mine, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  int code = error.empty() ? 0 : 2;
  if (lo != hi) code = 1;
  if (rank == 0) {
    if (lo != hi) std::fprintf(stderr, "config_verdict: ranks disagree on the configuration\n");
    if (!error.empty()) std::fprintf(stderr, "%s\n", error.c_str());
    fx::write_status(static_cast<fx::ExitCode>(code), error.empty() ? "ok" : "bad configuration");
  }
  MPI_Finalize();
  return code;
}
