#pragma once
// A job's claim on a node-local directory. Two jobs writing one directory
// delete and move aside each other's versions (retention keeps the newest
// few, whoever wrote them), so a job that finds another live job's claim
// there stops instead of destroying its checkpoints.
#include <filesystem>
#include <string>

namespace fx::detail {

// This job's name among the jobs sharing a host: its PMIx namespace (the
// same in every process of one launch, another in the next), else
// "pid-<pid>" (a singleton is a job of one process).
std::string job_token();

// One lock file per process, `<dir>/.fx-jobs/<job>-XXXXXX.lock`, held with
// flock(2) for the object's life: the kernel drops the lock when the
// process dies, so a killed job leaves a file any later job may remove.
class DirectoryClaim {
 public:
  // The setting that named the directory, for messages.
  struct Origin {
    std::string key;         // e.g. "checkpoint.node.directory"
    std::string configured;  // its value, before {host} was replaced
  };
  DirectoryClaim() = default;
  // Throws CheckpointError naming `dir`, the setting and the other job when
  // another live job holds a claim there after `wait_s` seconds (a
  // relaunch may start while the last attempt's processes still end).
  // Where the file system has no flock, no claim is made (logged).
  DirectoryClaim(const std::filesystem::path& dir, const Origin& origin, const std::string& job,
                 double wait_s);
  DirectoryClaim(DirectoryClaim&& o) noexcept;
  DirectoryClaim& operator=(DirectoryClaim&& o) noexcept;
  DirectoryClaim(const DirectoryClaim&) = delete;
  DirectoryClaim& operator=(const DirectoryClaim&) = delete;
  ~DirectoryClaim();  // the lock file goes, then the lock

 private:
  void release() noexcept;
  int fd_ = -1;
  std::filesystem::path path_;
};

}  // namespace fx::detail
