#include "hdf5_file.hpp"

#include <fx/detail/files.hpp>
#include <fx/error.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include <hdf5.h>

#include "checksum.hpp"
#include "hdf5_plugin.hpp"

namespace fx::detail {
namespace fs = std::filesystem;

namespace {

// An HDF5 handle closed by its own close function.
class Hid {
 public:
  Hid() = default;
  Hid(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Hid(Hid&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  Hid& operator=(Hid&& o) noexcept {
    std::swap(id_, o.id_);
    std::swap(close_, o.close_);
    return *this;
  }
  ~Hid() {
    if (id_ >= 0 && close_) close_(id_);
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

// A file access list: strong close (no handle left open on an error path)
// and no file locking, which shared file systems often refuse and which
// per-rank files written under temporary names do not need.
Hid file_access() {
  Hid fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG);
#if H5_VERSION_GE(1, 10, 7)
  H5Pset_file_locking(fapl.get(), false, true);
#endif
  return fapl;
}

// Every HDF5 failure becomes a CheckpointError naming the file; the
// library's own error printing is switched off once.
struct Context {
  std::string file;
  Context(std::string f) : file(std::move(f)) {
    static const bool quiet = [] { return H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr) >= 0; }();
    (void)quiet;
  }
  [[noreturn]] void fail(const std::string& what) const {
    FX_THROW(CheckpointError, fmt::format("{}: {}", file, what));
  }
  hid_t check(hid_t id, const char* call) const {
    if (id < 0) fail(fmt::format("{} failed", call));
    return id;
  }
  void check_rc(herr_t rc, const char* call) const {
    if (rc < 0) fail(fmt::format("{} failed", call));
  }
};

// Member names may hold '/', which HDF5 reads as a path.
std::string dataset_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c == '/' || c == '%')
      out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    else
      out += c;
  }
  return out.empty() || out == "." ? "%" + out : out;
}

// The HDF5 element type of a type name; opaque bytes for anything unusual.
struct ElementType {
  Hid owned;
  hid_t id = -1;
  std::size_t size = 1;
};
ElementType element_type(const std::string& type, std::uint64_t bytes) {
  ElementType t;
  struct Native {
    const char* name;
    hid_t id;
  };
  const Native natives[] = {
      {"float32", H5T_NATIVE_FLOAT}, {"float64", H5T_NATIVE_DOUBLE}, {"int8", H5T_NATIVE_INT8},
      {"uint8", H5T_NATIVE_UINT8},   {"int16", H5T_NATIVE_INT16},    {"uint16", H5T_NATIVE_UINT16},
      {"int32", H5T_NATIVE_INT32},   {"uint32", H5T_NATIVE_UINT32},  {"int64", H5T_NATIVE_INT64},
      {"uint64", H5T_NATIVE_UINT64}, {"bool", H5T_NATIVE_UINT8}};
  for (const auto& n : natives) {
    if (type == n.name && bytes % H5Tget_size(n.id) == 0) {
      t.id = n.id;
      t.size = H5Tget_size(n.id);
      return t;
    }
  }
  t.size = type_size(type);
  if (t.size == 0 || bytes % t.size != 0) t.size = 1;
  t.owned = Hid(H5Tcreate(H5T_OPAQUE, t.size), H5Tclose);
  H5Tset_tag(t.owned.get(), type.c_str());
  t.id = t.owned.get();
  return t;
}

void put_attr(const Context& cx, hid_t obj, const char* name, hid_t type, const void* value, hsize_t n) {
  Hid space(n == 0 ? H5Screate(H5S_NULL) : H5Screate_simple(1, &n, nullptr), H5Sclose);
  cx.check(space.get(), "H5Screate");
  Hid a(cx.check(H5Acreate2(obj, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT), "H5Acreate2"), H5Aclose);
  if (n > 0) cx.check_rc(H5Awrite(a.get(), type, value), "H5Awrite");
}

template <class T>
void put_attr(const Context& cx, hid_t obj, const char* name, hid_t type, T value) {
  put_attr(cx, obj, name, type, &value, 1);
}

void put_strings(const Context& cx, hid_t obj, const char* name, const std::vector<std::string>& values) {
  std::size_t width = 1;
  for (const auto& v : values) width = std::max(width, v.size());
  std::vector<char> flat(width * values.size(), '\0');
  for (std::size_t i = 0; i < values.size(); ++i)
    std::memcpy(&flat[i * width], values[i].data(), values[i].size());
  Hid t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t.get(), width);
  H5Tset_strpad(t.get(), H5T_STR_NULLPAD);
  put_attr(cx, obj, name, t.get(), flat.data(), values.size());
}

Hid open_attr(const Context& cx, hid_t obj, const char* name, const std::string& where) {
  if (H5Aexists(obj, name) <= 0) cx.fail(fmt::format("{} has no attribute '{}'", where, name));
  return Hid(cx.check(H5Aopen(obj, name, H5P_DEFAULT), "H5Aopen"), H5Aclose);
}

hssize_t attr_count(const Hid& a) {
  Hid space(H5Aget_space(a.get()), H5Sclose);
  return H5Sget_simple_extent_npoints(space.get());
}

template <class T>
std::vector<T> get_attr(const Context& cx, hid_t obj, const char* name, hid_t type,
                        const std::string& where) {
  Hid a = open_attr(cx, obj, name, where);
  const hssize_t n = attr_count(a);
  std::vector<T> out(static_cast<std::size_t>(std::max<hssize_t>(n, 0)));
  if (!out.empty()) cx.check_rc(H5Aread(a.get(), type, out.data()), "H5Aread");
  return out;
}

template <class T>
T get_scalar(const Context& cx, hid_t obj, const char* name, hid_t type, const std::string& where) {
  const auto v = get_attr<T>(cx, obj, name, type, where);
  if (v.size() != 1)
    cx.fail(fmt::format("{}: attribute '{}' has {} values, expected 1", where, name, v.size()));
  return v[0];
}

std::vector<std::string> get_strings(const Context& cx, hid_t obj, const char* name,
                                     const std::string& where) {
  Hid a = open_attr(cx, obj, name, where);
  Hid ftype(H5Aget_type(a.get()), H5Tclose);
  if (H5Tget_class(ftype.get()) != H5T_STRING || H5Tis_variable_str(ftype.get()) > 0) {
    cx.fail(fmt::format("{}: attribute '{}' is not a fixed-length string", where, name));
  }
  const std::size_t width = H5Tget_size(ftype.get());
  const hssize_t n = attr_count(a);
  std::vector<char> flat(width * static_cast<std::size_t>(std::max<hssize_t>(n, 0)) + 1, '\0');
  std::vector<std::string> out;
  if (n <= 0) return out;
  Hid mtype(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(mtype.get(), width);
  H5Tset_strpad(mtype.get(), H5T_STR_NULLPAD);
  cx.check_rc(H5Aread(a.get(), mtype.get(), flat.data()), "H5Aread");
  for (hssize_t i = 0; i < n; ++i) {
    const char* p = &flat[static_cast<std::size_t>(i) * width];
    out.emplace_back(p, strnlen(p, width));
  }
  return out;
}

void put_string(const Context& cx, hid_t obj, const char* name, const std::string& s) {
  put_strings(cx, obj, name, {s});
}

std::string get_string(const Context& cx, hid_t obj, const char* name, const std::string& where) {
  const auto v = get_strings(cx, obj, name, where);
  if (v.size() != 1)
    cx.fail(fmt::format("{}: attribute '{}' has {} values, expected 1", where, name, v.size()));
  return v[0];
}

}  // namespace

std::uint64_t write_rank_file(const fs::path& dir, const ImageInfo& info, const std::byte* image) {
  const fs::path final_path = dir / rank_file_name(info.rank);
  // HDF5 opens the temporary by name: created exclusively first, then truncated.
  TempFile made;
  if (const std::string why = create_temp_beside(final_path.string(), made); !why.empty())
    FX_THROW(CheckpointError, fmt::format("cannot create a file beside {}: {}", final_path.string(), why));
  ::close(made.fd);
  const fs::path tmp = made.path;
  Context cx(tmp.string());
  {
    Hid fapl = file_access();
    Hid file(cx.check(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), "H5Fcreate"), H5Fclose);
    const hid_t f = file.get();
    put_attr(cx, f, "format_version", H5T_NATIVE_INT32, static_cast<std::int32_t>(kDiskFormat));
    put_attr(cx, f, "iteration", H5T_NATIVE_INT64, info.iteration);
    put_attr(cx, f, "sequence", H5T_NATIVE_INT64, info.sequence);
    put_attr(cx, f, "rank", H5T_NATIVE_INT32, static_cast<std::int32_t>(info.rank));
    put_attr(cx, f, "rank_count", H5T_NATIVE_INT32, static_cast<std::int32_t>(info.size));
    put_attr(cx, f, "xxh3_digest", H5T_NATIVE_UINT64, info.digest());
    std::vector<std::string> names;
    for (const auto& r : info.members) names.push_back(r.name);
    put_strings(cx, f, "member_names", names);

    Hid dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS);
    H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER);  // every byte is written once, by us
    for (const auto& r : info.members) {
      ElementType et = element_type(r.type, r.bytes);
      const hsize_t n = r.bytes / et.size;
      Hid space(cx.check(H5Screate_simple(1, &n, nullptr), "H5Screate_simple"), H5Sclose);
      Hid ds(cx.check(H5Dcreate2(f, dataset_name(r.name).c_str(), et.id, space.get(), H5P_DEFAULT, dcpl.get(),
                                 H5P_DEFAULT),
                      "H5Dcreate2"),
             H5Dclose);
      if (n > 0) {
        cx.check_rc(
            H5Dwrite(ds.get(), et.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, image + info.payload_offset + r.offset),
            "H5Dwrite");
      }
      put_string(cx, ds.get(), "name", r.name);
      put_string(cx, ds.get(), "type", r.type);
      put_string(cx, ds.get(), "layout", r.layout);
      put_attr(cx, ds.get(), "extents", H5T_NATIVE_UINT64, r.extents.data(), r.extents.size());
      put_attr(cx, ds.get(), "bytes", H5T_NATIVE_UINT64, r.bytes);
      put_attr(cx, ds.get(), hash_name(r.hash_kind), H5T_NATIVE_UINT64, r.hash);
    }
    cx.check_rc(H5Fflush(f, H5F_SCOPE_GLOBAL), "H5Fflush");
  }
  ::chmod(tmp.c_str(), 0640);
  sync_path(tmp, false);
  if (const std::string why = replace_with(tmp.string(), final_path.string()); !why.empty())
    cx.fail(fmt::format("cannot rename to {}: {}", final_path.string(), why));
  // The directory entry is made durable once for all ranks, by rank 0's
  // fsync of the directory after the manifest (write_manifest).
  std::error_code ec;
  const auto size = fs::file_size(final_path, ec);
  if (ec) cx.fail(fmt::format("cannot stat {}: {}", final_path.string(), ec.message()));
  return size;
}

namespace {

// The file's size, then its header attributes, against the manifest.
Hid open_checked(Context& cx, const fs::path& path, const Manifest& manifest, int rank,
                 const ManifestEntry& expect) {
  std::error_code ec;
  if (!fs::exists(path, ec)) cx.fail("rank file is missing");
  const auto size = fs::file_size(path, ec);
  if (ec) cx.fail(fmt::format("cannot stat: {}", ec.message()));
  if (size != expect.bytes) {
    cx.fail(
        fmt::format("file has {} bytes, the manifest says {} (truncated or replaced)", size, expect.bytes));
  }
  Hid fapl = file_access();
  Hid file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
  if (!file.ok()) cx.fail("not a readable HDF5 file (corrupted or truncated)");
  const hid_t f = file.get();
  const std::string root = "file";
  const auto format = get_scalar<std::int32_t>(cx, f, "format_version", H5T_NATIVE_INT32, root);
  if (format != kDiskFormat)
    cx.fail(fmt::format("format_version {} (this build reads {})", format, kDiskFormat));
  const auto iteration = get_scalar<std::int64_t>(cx, f, "iteration", H5T_NATIVE_INT64, root);
  const auto file_rank = get_scalar<std::int32_t>(cx, f, "rank", H5T_NATIVE_INT32, root);
  const auto count = get_scalar<std::int32_t>(cx, f, "rank_count", H5T_NATIVE_INT32, root);
  if (iteration != manifest.iteration || file_rank != rank || count != manifest.rank_count) {
    cx.fail(fmt::format("holds iteration {}, rank {} of {}; expected iteration {}, rank {} of {}", iteration,
                        file_rank, count, manifest.iteration, rank, manifest.rank_count));
  }
  return file;
}

// A member's record as the file stores it (offset and hash not yet known).
MemberRecord stored_record(Context& cx, hid_t f, const std::string& name) {
  const std::string where = fmt::format("dataset '{}'", name);
  const std::string dname = dataset_name(name);
  if (H5Lexists(f, dname.c_str(), H5P_DEFAULT) <= 0) cx.fail(where + " is missing");
  Hid ds(cx.check(H5Dopen2(f, dname.c_str(), H5P_DEFAULT), "H5Dopen2"), H5Dclose);
  MemberRecord r;
  r.name = name;
  r.type = get_string(cx, ds.get(), "type", where);
  r.layout = get_string(cx, ds.get(), "layout", where);
  r.extents = get_attr<std::uint64_t>(cx, ds.get(), "extents", H5T_NATIVE_UINT64, where);
  r.bytes = get_scalar<std::uint64_t>(cx, ds.get(), "bytes", H5T_NATIVE_UINT64, where);
  return r;
}

// The image's layout: the registered members' (which the file must hold;
// a resizable one as big as it was at the commit), or, `members` null,
// the member table of the file itself (a version written under another
// decomposition, read after a shrink).
ImageInfo file_layout(Context& cx, hid_t f, const Manifest& manifest, int rank,
                      const std::vector<Member>* members) {
  const auto stored = get_strings(cx, f, "member_names", "file");
  ImageInfo info;
  if (members) {
    std::vector<std::string> names;
    for (const auto& m : *members) names.push_back(m.name);
    if (stored != names) {
      cx.fail(fmt::format("holds members [{}], the application registered [{}]", fmt::join(stored, ", "),
                          fmt::join(names, ", ")));
    }
    info = layout_image(*members, manifest.iteration, manifest.sequence, rank, manifest.rank_count);
    for (std::size_t i = 0; i < members->size(); ++i) {
      if ((*members)[i].shape) info.members[i] = stored_record(cx, f, stored[i]);
    }
    layout_records(info);
    return info;
  }
  info.iteration = manifest.iteration;
  info.sequence = manifest.sequence;
  info.rank = rank;
  info.size = manifest.rank_count;
  for (const auto& name : stored) info.members.push_back(stored_record(cx, f, name));
  layout_records(info);
  return info;
}

// One member's dataset into `payload`, checked against its record and hash.
void read_member(Context& cx, hid_t f, MemberRecord& r, std::byte* payload) {
  const std::string where = fmt::format("dataset '{}'", r.name);
  const std::string dname = dataset_name(r.name);
  if (H5Lexists(f, dname.c_str(), H5P_DEFAULT) <= 0) cx.fail(where + " is missing");
  Hid ds(cx.check(H5Dopen2(f, dname.c_str(), H5P_DEFAULT), "H5Dopen2"), H5Dclose);
  const auto type = get_string(cx, ds.get(), "type", where);
  const auto bytes = get_scalar<std::uint64_t>(cx, ds.get(), "bytes", H5T_NATIVE_UINT64, where);
  const auto extents = get_attr<std::uint64_t>(cx, ds.get(), "extents", H5T_NATIVE_UINT64, where);
  if (type != r.type || bytes != r.bytes || extents != r.extents) {
    cx.fail(fmt::format("{} is {} [{}] ({} bytes); the registered member is {} [{}] ({} bytes)", where, type,
                        fmt::join(extents, ", "), bytes, r.type, fmt::join(r.extents, ", "), r.bytes));
  }
  ElementType et = element_type(r.type, r.bytes);
  Hid space(H5Dget_space(ds.get()), H5Sclose);
  if (static_cast<std::uint64_t>(H5Sget_simple_extent_npoints(space.get())) * et.size != r.bytes) {
    cx.fail(where + " has the wrong number of elements");
  }
  if (r.bytes > 0) {
    cx.check_rc(H5Dread(ds.get(), et.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, payload + r.offset), "H5Dread");
  }
  // The checksum's attribute names its kind (files before mix64: xxh3).
  const bool mix64 = H5Aexists(ds.get(), hash_name(HashKind::mix64)) > 0;
  r.hash_kind = mix64 ? HashKind::mix64 : HashKind::xxh3;
  r.hash = get_scalar<std::uint64_t>(cx, ds.get(), hash_name(r.hash_kind), H5T_NATIVE_UINT64, where);
  if (hash_bytes(r.hash_kind, payload + r.offset, r.bytes) != r.hash)
    cx.fail(fmt::format("checksum mismatch in {}", where));
}

// Both readers: `members` null takes the member table from the file itself.
ImageInfo read_file(const fs::path& dir, const Manifest& manifest, int rank,
                    const std::vector<Member>* members, Buffer& image) {
  const ManifestEntry& expect = manifest.files.at(static_cast<std::size_t>(rank));
  const fs::path path = dir / expect.file;
  Context cx(path.string());
  Hid file = open_checked(cx, path, manifest, rank, expect);
  ImageInfo info = file_layout(cx, file.get(), manifest, rank, members);
  image.reset(info.total_bytes);
  for (MemberRecord& r : info.members) read_member(cx, file.get(), r, image.data() + info.payload_offset);
  if (info.digest() != expect.checksum)
    cx.fail("the checksums differ from the manifest's (a file of another version?)");
  write_header(info, image.data());
  return info;
}

}  // namespace

ImageInfo read_rank_file(const fs::path& dir, const Manifest& manifest, int rank,
                         const std::vector<Member>& members, Buffer& image) {
  return read_file(dir, manifest, rank, &members, image);
}

ImageInfo read_rank_file_as_written(const fs::path& dir, const Manifest& manifest, int rank, Buffer& image) {
  return read_file(dir, manifest, rank, nullptr, image);
}

}  // namespace fx::detail

// The plugin's one exported symbol (everything else is hidden).
extern "C" __attribute__((visibility("default"))) const fx::detail::Hdf5Api* fx_hdf5_api() {
  static constexpr fx::detail::Hdf5Api api{fx::detail::kHdf5ApiVersion, &fx::detail::write_rank_file,
                                           &fx::detail::read_rank_file,
                                           &fx::detail::read_rank_file_as_written};
  return &api;
}
