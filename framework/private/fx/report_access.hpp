#pragma once
// The runtime's way to a report's verdict and history (not installed):
// applications read a report and add results; they never set its verdict.
#include <fx/report.hpp>

#include <string>
#include <utility>

namespace fx::detail {

struct ReportAccess {
  // The job's verdict and its one-line reason.
  static void set_exit(Report& report, ExitCode code, std::string text) {
    report.set_exit(code, std::move(text));
  }
  // Replace the report's history with another process's history_yaml()
  // (a spare recruited late takes it over).
  static void adopt_history(Report& report, const std::string& yaml) { report.adopt_history(yaml); }
};

}  // namespace fx::detail
