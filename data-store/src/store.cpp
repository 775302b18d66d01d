#include <fx/data_store/store.hpp>

#include <algorithm>
#include <map>

// Placeholder: own-copy versions only. The data-store issue replaces this
// with buddy copies, HDF5 and consistent multi-version commits.
namespace fx {

struct DataStore::Impl {
  std::map<std::int64_t, std::vector<std::byte>> versions;
  std::optional<std::int64_t> committed;
};

DataStore::DataStore(CheckpointConfig options) : options_(std::move(options)), impl_(std::make_unique<Impl>()) {}
DataStore::~DataStore() = default;

void DataStore::set_comm(Comm comm) { comm_ = comm; }
void DataStore::add_member(Member m) { members_.push_back(std::move(m)); }
void DataStore::clear() { members_.clear(); }

void DataStore::commit(std::int64_t iteration) {
  std::size_t total = 0;
  for (auto& m : members_) total += m.bytes;
  std::vector<std::byte> buf(total);
  std::size_t off = 0;
  for (auto& m : members_) {
    m.save(buf.data() + off);
    off += m.bytes;
  }
  impl_->versions[iteration] = std::move(buf);
  comm_.agree(1);
  impl_->committed = iteration;
  while (static_cast<int>(impl_->versions.size()) > options_.memory.depth)
    impl_->versions.erase(impl_->versions.begin());
}

std::optional<std::int64_t> DataStore::restore() {
  const std::int64_t mine = impl_->committed.value_or(-1);
  const std::int64_t lowest = comm_.allreduce(mine, MPI_MIN);
  if (lowest < 0) return std::nullopt;
  auto& buf = impl_->versions.at(lowest);
  std::size_t off = 0;
  for (auto& m : members_) {
    m.load(buf.data() + off);
    off += m.bytes;
  }
  return lowest;
}

std::optional<std::int64_t> DataStore::committed_iteration() const { return impl_->committed; }

}  // namespace fx
