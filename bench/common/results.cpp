#include "fx_bench/results.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace fx_bench {

namespace {

// Medians of noisy timings: 6 significant digits say all they can.
constexpr int kDigits = 6;

}  // namespace

Results::Results(std::string comment) : comment_(std::move(comment)) { out_.SetDoublePrecision(kDigits); }

void Results::target(const char* op, double value) {
  out_ << YAML::Flow << YAML::BeginMap << YAML::Key << "op" << YAML::Value << YAML::DoubleQuoted << op
       << YAML::Key << "value" << YAML::Value << value << YAML::EndMap;
}

void Results::write(const std::string& path) const {
  if (!out_.good()) throw std::runtime_error("results for " + path + ": " + out_.GetLastError());
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream f(path);
  std::istringstream lines(comment_);
  for (std::string line; std::getline(lines, line);) f << "# " << line << '\n';
  f << out_.c_str() << '\n';
  if (!f) throw std::runtime_error("cannot write " + path);
}

Line::Line(const char* name) {
  out_.SetDoublePrecision(kDigits);
  out_ << YAML::BeginMap << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginMap;
}

void Line::print() {
  out_ << YAML::EndMap << YAML::EndMap;
  std::printf("%s\n", out_.c_str());
  std::fflush(stdout);
}

}  // namespace fx_bench
