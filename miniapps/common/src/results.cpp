#include <miniapps/params.hpp>
#include <miniapps/results.hpp>

#include <Kokkos_Core.hpp>
#include <mpi.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace miniapps {

void Results::add(const std::string& key, double value) { add(key, exact(value)); }

void Results::print(std::FILE* out) const {
  for (const auto& [k, v] : items_) std::fprintf(out, "result: %s = %s\n", k.c_str(), v.c_str());
  for (const auto& [k, v] : timings_) std::fprintf(out, "timing: %s = %.6f\n", k.c_str(), v);
  std::fflush(out);
}

double IterationTimer::percentile(double q) const {
  if (intervals_.empty()) return 0.0;
  std::vector<double> v = intervals_;
  const auto k = static_cast<std::size_t>(q * double(v.size() - 1) + 0.5);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

std::string progress_line(std::int64_t iteration, std::int64_t total, double elapsed, double residual) {
  char buf[160];
  const int n = std::snprintf(buf, sizeof buf, "iteration %lld/%lld  elapsed %.3f s  residual ",
                              static_cast<long long>(iteration), static_cast<long long>(total), elapsed);
  // Negative: not measured yet (the stencil computes it every few sweeps).
  if (residual < 0)
    std::snprintf(buf + n, sizeof buf - n, "(not yet computed)");
  else
    std::snprintf(buf + n, sizeof buf - n, "%.6e", residual);
  return buf;
}

std::vector<std::pair<std::string, std::string>> platform_info() {
  std::vector<std::pair<std::string, std::string>> out;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  out.emplace_back("host", host);
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string mpi(lib, static_cast<std::size_t>(len));
  if (auto nl = mpi.find_first_of(",\n"); nl != std::string::npos) mpi.resize(nl);
  out.emplace_back("mpi", mpi);
  out.emplace_back("kokkos_version", std::to_string(KOKKOS_VERSION));
  out.emplace_back("kokkos_execution_space", Kokkos::DefaultExecutionSpace::name());
  return out;
}

void BaselineReport::write(const std::string& path) const {
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "app" << YAML::Value << app;
  y << YAML::Key << "variant" << YAML::Value << "baseline";
  y << YAML::Key << "ranks" << YAML::Value << ranks;
  y << YAML::Key << "platform" << YAML::Value << YAML::BeginMap;
  for (const auto& [k, v] : platform_info()) y << YAML::Key << k << YAML::Value << v;
  y << YAML::EndMap;
  y << YAML::Key << "parameters" << YAML::Value << YAML::BeginMap;
  for (const auto& [k, v] : parameters) y << YAML::Key << k << YAML::Value << v;
  y << YAML::EndMap;
  y << YAML::Key << "timings" << YAML::Value << YAML::BeginMap;
  for (const auto& [k, v] : results.timings()) y << YAML::Key << k << YAML::Value << exact(v);
  y << YAML::EndMap;
  y << YAML::Key << "results" << YAML::Value << YAML::BeginMap;
  for (const auto& [k, v] : results.items()) y << YAML::Key << k << YAML::Value << v;
  y << YAML::EndMap;
  y << YAML::EndMap;
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write the report '" + path + "'");
  f << y.c_str() << "\n";
  if (!f) throw std::runtime_error("cannot write the report '" + path + "'");
}

std::int64_t peak_rss_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6);
  return 0;
}

}  // namespace miniapps
