// A benchmark's results file (bench/results/<name>.yaml) written through
// yaml-cpp, so that it loads in any YAML parser (bench_results_yaml checks).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace fx_bench {

class Results {
 public:
  // comment: the file's leading `#` lines, one per line of it.
  explicit Results(std::string comment = {});

  YAML::Emitter& yaml() { return out_; }

  // A target, as every results file writes one: {op: "<=", value: 1.5}.
  void target(const char* op, double value);

  // Writes the document to path (its directory is created); throws
  // std::runtime_error naming path.
  void write(const std::string& path) const;

 private:
  std::string comment_;
  YAML::Emitter out_;
};

// One result line on stdout, `<name>: {key: value, ...}`, that a driver
// loads with bench_results.result_line (yaml.safe_load):
//   fx_bench::Line("loop").add("mode", "plain").add("ms_per_step", 10.2).print();
class Line {
 public:
  explicit Line(const char* name);

  template <class T>
  Line& add(const char* key, const T& value) {
    out_ << YAML::Key << key << YAML::Value << value;
    return *this;
  }

  // Prints the line and flushes stdout.
  void print();

 private:
  YAML::Emitter out_;
};

}  // namespace fx_bench
