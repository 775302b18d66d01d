#pragma once
// main() of a plain MPI + Kokkos baseline: MPI and Kokkos up, the app's
// flags plus --config FILE (its `app:` section) and --report FILE, the
// parameters resolved and validated as in the fx app, the body run, the
// result lines printed, the YAML report written and the launcher's verdict.
#include <miniapps/params.hpp>
#include <miniapps/plain_comm.hpp>
#include <miniapps/results.hpp>

#include <fx/config_section.hpp>
#include <fx/error.hpp>
#include <fx/exit_code.hpp>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <utility>

namespace miniapps {

// A baseline's progress log: world rank 0 prints "[<name> r0] <line>".
inline auto rank0_log(std::string name, int rank) {
  return [name = std::move(name), rank](const std::string& line) {
    if (rank == 0) std::fprintf(stderr, "[%s r0] %s\n", name.c_str(), line.c_str());
  };
}

// Body: Results body(const Params&, const PlainComm&), collective.
template <class Params, class Body>
int baseline_main(int argc, char** argv, const std::string& name, const std::string& description, Body body) {
  MPI_Init(&argc, &argv);
  const PlainComm comm(MPI_COMM_WORLD);
  const int rank = comm.rank();
  int code = 0;
  {
    Params params;
    ParamSet set = params.declare();
    CLI::App cli{description, name};
    CliValues cli_values;
    set.add_cli_options(cli, cli_values);
    std::string config, report_path;
    cli.add_option("--config", config, "YAML file; its app: section sets the parameters");
    cli.add_option("--report", report_path, "write the YAML run report to this file");
    const CliOutcome parsed = parse_cli(cli, argc, argv, false, rank);
    // After the flags, so --help is the app's alone (Kokkos has its own).
    std::optional<Kokkos::ScopeGuard> kokkos;
    if (!parsed.exit) kokkos.emplace(argc, argv);
    if (parsed.exit) {
      code = parsed.code;
    } else {
      try {
        set.resolve(config.empty() ? fx::ConfigSection() : fx::load_app_section(config, "--config"),
                    cli_values);
        params.check(set, comm.size());
        const double t0 = wtime();
        BaselineReport report;
        report.results = body(static_cast<const Params&>(params), comm);
        report.results.add_timing("total_s", wtime() - t0);
        if (rank == 0) {
          report.app = name;
          report.ranks = comm.size();
          report.parameters = set.values();
          report.results.print();
          if (!report_path.empty()) report.write(report_path);
          fx::write_status(fx::ExitCode::ok, name + " finished");
        }
      } catch (const fx::ConfigError& e) {
        code = 2;  // every rank reaches the same verdict; rank 0 tells
        if (rank == 0) {
          std::fprintf(stderr, "%s: error: %s\n", name.c_str(), e.what());
          fx::write_status(fx::ExitCode::usage, e.what());
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: rank %d: error: %s\n", name.c_str(), rank, e.what());
        fx::write_status(fx::ExitCode::error, e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
  }
  MPI_Finalize();
  return code;
}

}  // namespace miniapps
