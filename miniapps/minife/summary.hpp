#pragma once
// miniFE's YAML summary (Mantevo miniFE 2.x, ref/src: YAML_Doc, main.cpp's
// add_params_to_yaml / add_configuration_to_yaml / add_timestring_to_yaml,
// driver.hpp, imbalance.hpp, compute_matrix_stats.hpp): its file name, its
// keys in its order and their meaning, so the figures can be put beside
// published miniFE runs; but a document any YAML parser loads (values
// that would not be plain scalars are quoted, as miniFE quotes its
// platform strings). tests/unit/miniapps/minife_summary_test.py checks the
// key set against a miniFE output of the same shape.
#include <miniapps/params.hpp>
#include <miniapps/results.hpp>

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

// What the build passes in (miniapps/minife/CMakeLists.txt); miniFE's
// MINIFE_CXX, MINIFE_CXX_VERSION and MINIFE_CXXFLAGS.
#ifndef FX_MINIFE_CXX
#define FX_MINIFE_CXX "unknown"
#endif
#ifndef FX_MINIFE_CXX_VERSION
#define FX_MINIFE_CXX_VERSION "unknown"
#endif
#ifndef FX_MINIFE_CXXFLAGS
#define FX_MINIFE_CXXFLAGS ""
#endif

namespace miniapps::minife {

// When this process started (static initialisation, before MPI): miniFE's
// Run Date/Time and the start of its Total Program Time.
struct ProgramStart {
  std::time_t wall = std::time(nullptr);
  std::chrono::steady_clock::time_point steady = std::chrono::steady_clock::now();
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - steady).count();
  }
};
inline const ProgramStart kProgramStart{};

struct MinifeSummary {
  std::int64_t nx = 0, ny = 0, nz = 0;
  int ranks = 0;
  double global_rows = 0, global_nnz = 0;
  std::vector<std::int64_t> rows_per_rank, nnz_per_rank;
  double matrix_bytes = 0;     // CSR arrays over all ranks: Global Memory (GB)
  double halo_plan_bytes = 0;  // halo bookkeeping over all ranks: Pll Memory Overhead (MB)
  double structure_s = 0, assembly_s = 0;
  std::int64_t iterations = 0;
  double final_resid = 0;
  std::array<double, 3> secs{}, flops{};  // dot, waxpby, matvec
  double total_s = 0;
  std::int64_t rss_sum_kb = 0, rss_max_kb = 0;
  std::time_t written = std::time(nullptr);

  // miniFE.<nx>x<ny>x<nz>.P<ranks>.<YYYY>:<MM>:<DD>-<HH>:<MM>:<SS>.yaml,
  // local time of writing, as YAML_Doc::generateYAML names it.
  std::string path() const {
    return "miniFE." + std::to_string(nx) + "x" + std::to_string(ny) + "x" + std::to_string(nz) + ".P" +
           std::to_string(ranks) + "." + local_time(written, "%Y:%m:%d-%H:%M:%S") + ".yaml";
  }

  std::string text() const {
    std::ostringstream o;
    const auto r = stats(rows_per_rank), z = stats(nnz_per_rank);
    utsname u{};
    uname(&u);
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);
    o << "Mini-Application Name: miniFE\n"
      << "Mini-Application Version: " << quoted("fx minife (problem minife)") << "\n"
      << "Global Run Parameters: \n  dimensions: \n    nx: " << nx << "\n    ny: " << ny << "\n    nz: " << nz
      << "\n  load_imbalance: 0\n  mv_overlap_comm_comp: 0 (no)\n  number of processors: " << ranks
      << "\n  ScalarType: double\n  GlobalOrdinalType: long int\n  LocalOrdinalType: int\n"
      << "Platform: \n  hostname: " << quoted(host) << "\n  kernel name: " << quoted(u.sysname)
      << "\n  kernel release: " << quoted(u.release) << "\n  processor: " << quoted(u.machine) << "\n"
      << "Build: \n  CXX: " << quoted(FX_MINIFE_CXX)
      << "\n  compiler version: " << quoted(FX_MINIFE_CXX_VERSION)
      << "\n  CXXFLAGS: " << quoted(FX_MINIFE_CXXFLAGS) << "\n  using MPI: yes\n"
      << "Run Date/Time: " << local_time(kProgramStart.wall, "%Y-%m-%d, %H-%M-%S") << "\n"
      << "Rows-per-proc Load Imbalance: \n  Largest (from avg, %): " << exact(r.largest_pct)
      << "\n  Std Dev (%): " << exact(r.std_dev_pct) << "\n"
      << "Matrix structure generation: \n  Mat-struc-gen Time: " << exact(structure_s) << "\n"
      << "FE assembly: \n  FE assembly Time: " << exact(assembly_s) << "\n"
      << "Matrix attributes: \n  Global Nrows: " << std::int64_t(global_rows)
      << "\n  Global NNZ: " << std::int64_t(global_nnz)
      << "\n  Global Memory (GB): " << exact(matrix_bytes / (1024.0 * 1024 * 1024))
      << "\n  Pll Memory Overhead (MB): " << exact(halo_plan_bytes / (1024.0 * 1024))
      << "\n  Rows per proc MIN: " << r.min << "\n  Rows per proc MAX: " << r.max
      << "\n  Rows per proc AVG: " << exact(r.avg) << "\n  NNZ per proc MIN: " << z.min
      << "\n  NNZ per proc MAX: " << z.max << "\n  NNZ per proc AVG: " << exact(z.avg) << "\n"
      << "CG solve: \n  Iterations: " << iterations << "\n  Final Resid Norm: " << exact(final_resid) << "\n";
    const char* names[3] = {"DOT", "WAXPY", "MATVEC"};
    for (int i : {1, 0, 2})
      o << "  " << names[i] << " Time: " << exact(secs[i]) << "\n  " << names[i]
        << " Flops: " << exact(flops[i]) << "\n  " << names[i] << " Mflops: " << mflops(flops[i], secs[i])
        << "\n";
    const double total_flops = flops[0] + flops[1] + flops[2];
    o << "  Total: \n    Total CG Time: " << exact(total_s) << "\n    Total CG Flops: " << exact(total_flops)
      << "\n    Total CG Mflops: " << mflops(total_flops, total_s)
      << "\n  Time per iteration: " << exact(iterations > 0 ? total_s / double(iterations) : 0.0) << "\n"
      << "Global All-RSS (kB): " << rss_sum_kb << "\nGlobal Max-RSS (kB): " << rss_max_kb << "\n"
      << "Total Program Time: " << exact(kProgramStart.seconds()) << "\n";
    return o.str();
  }

  void write() const {
    std::ofstream out(path());
    out << text();
    if (!out) throw std::runtime_error("minife: cannot write " + path());
  }

 private:
  struct Stats {
    std::int64_t min = 0, max = 0;
    double avg = 0, largest_pct = 0, std_dev_pct = 0;  // miniFE's imbalance.hpp, in % of the average
  };
  static Stats stats(const std::vector<std::int64_t>& v) {
    Stats s;
    if (v.empty()) return s;
    s.min = *std::min_element(v.begin(), v.end());
    s.max = *std::max_element(v.begin(), v.end());
    double sum = 0, sq = 0;
    for (auto x : v) sum += double(x);
    s.avg = sum / double(v.size());
    for (auto x : v) sq += (double(x) - s.avg) * (double(x) - s.avg);
    if (s.avg > 0) {
      s.largest_pct = 100 * std::max(s.avg - double(s.min), double(s.max) - s.avg) / s.avg;
      s.std_dev_pct = 100 * std::sqrt(sq / double(v.size())) / s.avg;
    }
    return s;
  }
  static std::string mflops(double f, double t) {
    return t > 1e-4 ? exact(1e-6 * f / t) : std::string("inf");
  }
  // A single-quoted YAML scalar (a quote inside is doubled).
  static std::string quoted(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
    return q + "'";
  }
  static std::string local_time(std::time_t t, const char* format) {
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[64];
    return std::strftime(buf, sizeof buf, format, &tm) > 0 ? buf : "";
  }
};

}  // namespace miniapps::minife
