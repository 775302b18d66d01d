#pragma once
/// \file
/// fx::DataStore: versioned, globally consistent checkpoints of registered
/// members. Levels: in memory (own copy + a buddy copy on another rank, or
/// XOR parity over a group), node-local storage (each rank's image and the
/// buddy copy it holds, on its own host) and HDF5 (one file per rank per
/// version).
#include <fx/comm.hpp>
#include <fx/data_store/level.hpp>
#include <fx/data_store/member.hpp>
#include <fx/data_store/options.hpp>
#include <fx/data_store/prior.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fx {
namespace detail {
struct StoreAccess;
}  // namespace detail

/// What one commit() or restore() did on this rank, for run reports.
struct CheckpointStats {
  /// Written to (commit) or restored from (restore).
  CheckpointLevel level = CheckpointLevel::none;
  std::int64_t iteration = -1;  ///< the version's iteration (-1: none)
  std::uint64_t bytes = 0;      ///< this rank's registered bytes
  double seconds = 0;           ///< the whole call
  /// commit: from the call until the version was committed everywhere (an
  /// asynchronous commit finishes after the call; else = seconds).
  double committed_seconds = 0;
  /// asynchronous commit: the time progress() and flush() spent on it on
  /// the app's thread after the call (the copies left to the step end when
  /// no core is idle, the exchange, the agreement).
  double background_seconds = 0;
  bool async = false;  ///< commit: the exchange and agreement ran after the call
  /// asynchronous commit: the buddy exchange moved on a thread of the
  /// store's, beside the app's steps (`checkpoint.memory.progress`)
  bool progress_thread = false;
  double memory_seconds = 0;     ///< in-memory part (pack, redundancy, agreement / pull, load)
  double node_seconds = 0;       ///< node-local part (0 when the call did not touch it)
  double hdf5_seconds = 0;       ///< disk part (0 when the call did not touch disk)
  double hdf5_file_seconds = 0;  ///< ...of which this rank's file (write, flush, fsync, rename);
                                 ///< the rest: agreement, manifest, retention
  /// Static members (add_static) this call sent (commit: to the buddy, at
  /// the first commit after registration only) or received (restore: a
  /// recovered rank's own data; the copies re-made for buddies arrive after
  /// restore() returns, alongside the app's next steps).
  ///@{
  std::uint64_t static_bytes_sent = 0;
  std::uint64_t static_bytes_received = 0;
  ///@}
  int old_size = 0;  ///< restore_resized: the rank count that wrote the version (else 0)
  /// Device members (Views in GPU memory): the time the call waited for
  /// their copies between the store's pinned memory and the device (restore:
  /// host to device; a synchronous commit: device to host). 0 without them.
  double device_seconds = 0;
  /// restore() at a cold start that found nothing written by this number of
  /// ranks, but a complete version written by `other_size` ranks (node-local
  /// or HDF5): restore_resized() brings it back (0: none).
  int other_size = 0;
  /// restore: versions had been committed but none could be restored (the
  /// logical ranks whose in-memory copies are all gone in lost_ranks).
  ///@{
  bool lost = false;
  std::vector<int> lost_ranks;
  ///@}
  /// restore: the versions it tried and passed over, newest first (the same
  /// list everywhere).
  std::vector<SkippedVersion> skipped;
  /// restore: the ranks (of the app's comm, the same list everywhere) whose
  /// static members (add_static) it could not give back: the rank and the
  /// holder of its copy both died, or the version came from node-local
  /// storage or HDF5, which hold none. The runtime then calls
  /// ResilientApp::rebuild_static before the next step.
  std::vector<int> static_lost;
};

/// Named points inside commit() and restore() where a fault may be injected
/// (the runtime maps them to fx::Phase; the store knows nothing of injection).
/// commit_begin: a commit() was called, before anything else (the
/// runtime's own commits and the app's explicit ones alike);
/// commit_save: before this rank packs its members (the members' save), after
/// the commit's set-up collectives; commit_posted: an asynchronous commit has
/// posted its exchange and is about to return (its image in flight);
/// commit_agree: the copies exchanged, before the agreement that commits the
/// version (asynchronous: inside progress() or flush(), steps later);
/// node_write: this rank's node-local files written, before their
/// agreement; restore_load: before a restore loads its version.
enum class StorePoint { commit_begin, commit_save, commit_posted, commit_agree, node_write, restore_load };

/// Versioned, globally consistent checkpoints of the members registered on
/// every rank of one communicator (see the file's description for the levels).
class DataStore {
 public:
  ~DataStore();
  DataStore(const DataStore&) = delete;
  DataStore& operator=(const DataStore&) = delete;

  /// The settings it was made with.
  /// \return the store's own copy, valid as long as the store
  const CheckpointConfig& options() const { return options_; }

  /// add(name, T* data, n), add(name, std::vector<T>&), add(name, Kokkos::View):
  /// see make_member in <fx/data_store/member.hpp>. Names are unique.
  /// \param name unique among the registered members; names it in checkpoints and errors
  /// \param args what make_member takes after the name: (T* data, n), a std::vector<T>&, a
  ///   Kokkos::View, fx::follow(view) or fx::resizable(x); the memory stays the caller's and
  ///   must outlive the registration
  /// \throws UsageError for a name already registered
  template <class... Args>
  void add(const std::string& name, Args&&... args) {
    add_member(make_member(name, std::forward<Args>(args)...));
  }
  /// A scalar member: `value` (a member without extents).
  /// \param name unique among the registered members
  /// \param value the variable, by reference: it must outlive the registration
  /// \throws UsageError for a name already registered
  template <class T>
  void add_scalar(const std::string& name, T& value) {
    Member m = make_member(name, &value, 1);
    m.extents.clear();
    add_member(std::move(m));
  }
  /// Register a member built by hand.
  /// \param m the member (make_member's, or filled in by hand), moved into the store
  /// \throws UsageError for a name already registered or a member with neither host memory
  ///   nor save and load
  void add_member(Member m);
  /// When commits take the snapshot of member `name` (see fx::Snapshot).
  /// \param name a registered member
  /// \param snapshot at_commit (the default) or during_next_step
  /// \throws UsageError naming it when no such member is registered, or for during_next_step
  ///   on a resizable member (always copied at the commit)
  void set_snapshot(const std::string& name, Snapshot snapshot);
  /// add_static(name, std::vector<T>&) or (name, Kokkos::View<T*>&), see
  /// make_static_member: data written once (such as an assembled matrix) that
  /// the first commit after registration copies to the buddy and later
  /// commits skip. restore() gives it back to a recovered rank (resized to
  /// fit) before it returns, and re-creates the buddy copies in the
  /// background (done by the next commit). A rank it could not give them
  /// back to (the buddy was lost too, a node-local or HDF5 restore, a
  /// resize) is named in CheckpointStats::static_lost, and the runtime has
  /// the app rebuild them (ResilientApp::rebuild_static) before any step.
  /// Static members are not written to node-local storage or HDF5.
  /// \param name unique among the static members
  /// \param data a std::vector or a one-dimensional Kokkos::View, by reference: it must
  ///   outlive the registration; a restore resizes it
  /// \throws UsageError for a static member's name registered twice
  template <class T>
  void add_static(const std::string& name, T& data) {
    add_static_member(make_static_member(name, data));
  }
  /// Register a static member built by hand.
  /// \param m the member (make_static_member's, or filled in by hand), moved into the store
  /// \throws UsageError for a static member's name registered twice
  void add_static_member(StaticMember m);
  /// The static members, in registration order.
  /// \return the store's list, valid until the next registration
  const std::vector<StaticMember>& static_members() const { return statics_; }
  /// Drop every registration, static ones too. The runtime does it before
  /// ResilientApp::resize() and after a Reinit function returns.
  [[deprecated("the runtime clears the registrations before resize(): remove the call (CHANGELOG)")]] void
  clear() {
    clear_registrations();
  }
  /// Whether no member is registered (static members aside).
  /// \return true when members() is empty
  bool empty() const { return members_.empty(); }
  /// The members, in registration order.
  /// \return the store's list, valid until the next registration
  const std::vector<Member>& members() const { return members_; }
  /// Registered bytes on this rank.
  /// \return the sum of the members' sizes, a resizable member's at its extents now (static
  ///   members aside)
  std::size_t bytes() const;

  /// Collective on the app comm: store a version of every member for
  /// `iteration` (own copy + redundancy); it becomes the committed version
  /// once every rank has it (agreement). Every node.every-th commit also
  /// goes to node-local storage, every hdf5.every-th to disk. A failure
  /// inside throws ProcessFailure and leaves the previous committed version
  /// intact. With checkpoint.memory.async (buddy scheme) it returns once
  /// the snapshot is taken and the exchange posted; progress() and flush()
  /// finish it, node-local and HDF5 writes included, and a failure before
  /// then leaves the previous version restorable. Two commits never overlap: the
  /// next one finishes this one first.
  /// \param iteration the version's iteration, the one restore() returns: the next step to
  ///   run (>= 0); kept versions of this iteration or later are dropped first
  /// \throws ProcessFailure when a process fails during it
  /// \throws CheckpointError when some rank could not save a member or write its node-local or
  ///   HDF5 files (the same on every rank); the previous version stays the committed one
  /// \throws MpiError when an MPI call fails for another reason
  /// \throws UsageError on a store without a communicator (one the application made itself)
  void commit(std::int64_t iteration);
  /// The iteration of the newest version committed or restored here;
  /// nullopt when there is none.
  /// \return that iteration, or std::nullopt
  std::optional<std::int64_t> committed_iteration() const;

  /// Collective after a shrink (the resize hook): the newest version the old
  /// ranks all still have somewhere, as the old decomposition laid it out.
  /// Each old rank's image comes from the survivor holding it (its own copy,
  /// else its buddy's copy). When an image is gone from memory, the whole
  /// version comes from the newest complete HDF5 version of the old size.
  /// `wants` says which old ranks this rank needs; only those are sent here
  /// and handed to `use`, one at a time. Registered members are not loaded:
  /// the app copies what it needs into its new layout. The old versions stay
  /// until the next commit() (a failure before it can restore them again).
  /// After a relaunch on fewer ranks (restore() set other_size), the version
  /// comes from storage instead: node-local files (each old image read on a
  /// live host holding it, own or partner copy) or HDF5, the newer first.
  /// \param wants called once, on every rank, with the version found: the old ranks this rank
  ///   needs (each in 0..size-1 of the PriorVersion; any order, empty allowed)
  /// \param use called once per wanted old rank, in ascending order, with its image (valid
  ///   during the call only)
  /// \return the version restored; std::nullopt when no version exists (start afresh)
  /// \throws CheckpointError naming the iteration and the old ranks when some image is nowhere
  /// \throws CheckpointLost when no copy of some old rank survived and no complete HDF5
  ///   version of the old size exists (or the HDF5 level is off)
  /// \throws UsageError when `wants` names a rank outside the old decomposition, or on a store
  ///   without a communicator
  /// \throws ProcessFailure on a failure (call again after the repair)
  /// \throws MpiError when an MPI call fails for another reason
  std::optional<PriorVersion> restore_resized(const PriorWants& wants, const PriorUse& use);

  /// Wait for an asynchronous commit in flight (collective then) and the
  /// re-protection after a restore. The runtime does it at the end of the run
  /// and before each commit and restore.
  /// \throws ProcessFailure if a peer died
  /// \throws CheckpointError when the commit in flight failed on some rank
  /// \throws MpiError when an MPI call fails for another reason
  [[deprecated("the runtime finishes commits itself: remove the call (CHANGELOG)")]] void flush() {
    wait_pending();
  }

  /// The buddy distance chosen for the hosts of this communicator (0: the
  /// parity scheme, or unknown before the first commit or restore on it).
  /// \return logical rank r's copy is held by r + distance (mod size); 0 as above
  int buddy_distance() const;

  /// What the last commit() did on this rank (an asynchronous one's stats
  /// are completed when it is committed).
  /// \return the store's record, overwritten by the next commit
  const CheckpointStats& last_commit_stats() const;
  /// What the last restore() did on this rank.
  /// \return the store's record, overwritten by the next restore
  const CheckpointStats& last_restore_stats() const;
  /// Where the last restore() came from (none: nothing restored).
  /// \return last_restore_stats().level
  CheckpointLevel last_restore_level() const { return last_restore_stats().level; }

 private:
  // The runtime's alone, through detail::StoreAccess (set_comm, revoke,
  // set_fault_hook): an application never sets the store's communicator.
  friend struct detail::StoreAccess;

  // The runtime's steps, through detail::StoreAccess (store_access.hpp has
  // what each does): made by it, restored, moved on, flushed.
  explicit DataStore(CheckpointConfig options);
  std::optional<std::int64_t> restore();
  bool progress();
  std::optional<CheckpointStats> take_committed() { return std::exchange(committed_async_, std::nullopt); }
  std::optional<CheckpointStats> take_resized_restore() {
    return std::exchange(resized_restore_, std::nullopt);
  }
  void start_reprotection();
  void wait_pending();
  void clear_registrations();
  void reserve();
  // The logical app communicator; set again by the runtime after each
  // repair, on every rank of it. Not collective itself: the store talks on
  // its own duplicate of `comm`, made by the next collective call (every
  // rank of `comm` must have set it), so its transfers can never match the
  // application's receives, even MPI_ANY_SOURCE / MPI_ANY_TAG ones.
  // Versions taken at another size (a shrink) move aside for
  // restore_resized() until the next commit().
  void set_comm(Comm comm);
  // Revoke the store's communicator (not collective): the runtime does it
  // with its own on a failure, so a rank blocked in a store transfer wakes.
  void revoke();
  // Called at each StorePoint this rank reaches (not collective), with the
  // iteration of the version concerned (-1 in a restore).
  using FaultHook = std::function<void(StorePoint, std::int64_t)>;
  void set_fault_hook(FaultHook hook) { fault_hook_ = std::move(hook); }
  void fault_point(StorePoint point, std::int64_t iteration) const {
    if (fault_hook_) fault_hook_(point, iteration);
  }
  struct Impl;
  /// The store's duplicate of comm_, made when missing (the first collective
  /// call after set_comm()); throws ProcessFailure like any store call.
  const Comm& own_comm();
  void release_own();               ///< after its background transfers
  bool advance_commit(bool block);  ///< progress() / flush()'s part for the commit in flight
  CheckpointConfig options_;
  Comm comm_;  ///< the application's
  Comm own_;   ///< the store's duplicate of comm_: all its traffic
  std::vector<Member> members_;
  std::optional<CheckpointStats> resized_restore_;  ///< see take_resized_restore()
  std::optional<CheckpointStats> committed_async_;  ///< see take_committed()
  std::vector<StaticMember> statics_;
  FaultHook fault_hook_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fx
