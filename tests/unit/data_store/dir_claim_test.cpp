// A job's claim on a node-local directory (dir_claim.hpp): the ranks of one
// job share it, another live job is refused by name, a dead job's claim is
// removed. Claims of "other jobs" here are other claim objects: flock(2)
// locks of separate opens conflict within one process as across two.
#include <fx/error.hpp>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "dir_claim.hpp"
#include "tmp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using fx::detail::DirectoryClaim;

const DirectoryClaim::Origin kOrigin{"checkpoint.node.directory", "/scratch/fx-{host}"};

int claim_files(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir / ".fx-jobs")) n += e.path().extension() == ".lock" ? 1 : 0;
  return n;
}

TEST(DirectoryClaim, RanksOfOneJobShareTheDirectory) {
  TmpDir tmp;
  {
    DirectoryClaim a(tmp.path(), kOrigin, "job-a", 0);
    DirectoryClaim b(tmp.path(), kOrigin, "job-a", 0);
    EXPECT_EQ(claim_files(tmp.path()), 2);
  }
  EXPECT_EQ(claim_files(tmp.path()), 0);
}

TEST(DirectoryClaim, AnotherLiveJobIsRefusedByName) {
  TmpDir tmp;
  DirectoryClaim a(tmp.path(), kOrigin, "job-a", 0);
  try {
    DirectoryClaim b(tmp.path(), kOrigin, "job-b", 0.2);
    FAIL() << "a second job's claim was made";
  } catch (const fx::CheckpointError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("checkpoint.node.directory '" + tmp.path().string() +
                        "' is in use by another running job (job-a; its lock files are in"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("FX_CFG_CHECKPOINT__NODE__DIRECTORY=/scratch/fx-{host}/$SLURM_JOB_ID"),
              std::string::npos)
        << what;
  }
  EXPECT_EQ(claim_files(tmp.path()), 1);  // the refused job left nothing
}

TEST(DirectoryClaim, AJobEndingWithinTheWaitIsWaitedFor) {
  TmpDir tmp;
  std::optional<DirectoryClaim> a(std::in_place, tmp.path(), kOrigin, "job-a", 0);
  std::thread end([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    a.reset();
  });
  EXPECT_NO_THROW(DirectoryClaim(tmp.path(), kOrigin, "job-b", 30));
  end.join();
}

// A dead process's claim: its file, which nobody locks (the kernel dropped
// the lock with the process; no fork here, the test may have threads).
TEST(DirectoryClaim, ADeadJobsClaimIsRemoved) {
  TmpDir tmp;
  fs::create_directories(tmp.path() / ".fx-jobs");
  std::ofstream(tmp.path() / ".fx-jobs" / "job-dead-Ab12Cd.lock").flush();
  ASSERT_EQ(claim_files(tmp.path()), 1);
  {
    DirectoryClaim b(tmp.path(), kOrigin, "job-b", 0);
    EXPECT_EQ(claim_files(tmp.path()), 1);  // its own; the dead job's is gone
    EXPECT_FALSE(fs::exists(tmp.path() / ".fx-jobs" / "job-dead-Ab12Cd.lock"));
  }
  EXPECT_EQ(claim_files(tmp.path()), 0);
}

TEST(DirectoryClaim, TheJobIsItsPmixNamespaceMadeFileSafe) {
  const char* old = std::getenv("PMIX_NAMESPACE");
  const std::string saved = old != nullptr ? old : "";
  setenv("PMIX_NAMESPACE", "prterun-vm-23136@1", 1);
  EXPECT_EQ(fx::detail::job_token(), "prterun-vm-23136_1");
  unsetenv("PMIX_NAMESPACE");
  EXPECT_EQ(fx::detail::job_token(), "pid-" + std::to_string(getpid()));
  if (old != nullptr) setenv("PMIX_NAMESPACE", saved.c_str(), 1);
}

}  // namespace
