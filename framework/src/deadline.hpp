#pragma once
// A bound on a blocking phase: if the guarded scope is still running after
// `seconds`, the process reports the phase and ends the job with
// ExitCode::aborted instead of hanging (ULFM's shrink/agree have no
// timeouts of their own).
#include <fx/log.hpp>
#include <fx/recovery/shutdown.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace fx::detail {

class Deadline {
 public:
  Deadline(double seconds, std::string what) : what_(std::move(what)) {
    if (seconds <= 0) return;
    thread_ = std::thread([this, seconds] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_; })) return;
      log::error("{} did not finish within {} s; leaving the job", what_, seconds);
      end_job_from_here(ExitCode::aborted, what_ + " timed out");
    });
  }
  ~Deadline() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

 private:
  std::string what_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace fx::detail
