#pragma once
// Communication between sub-boxes, as LAMMPS's Comm does it, dimension by
// dimension (x, then y, then z), each with the low and the high neighbour:
//
// - migrate(): at a rebuild, owned atoms that left the sub-box go to the
//   neighbour that now holds them (one hop per dimension: between rebuilds
//   an atom moves far less than a sub-box);
// - borders(): at a rebuild, the ghosts: atoms within cutoff + skin of a
//   face are sent across it, the ghosts received along x included in the
//   y and z rounds (edges and corners), shifted by the box length where
//   they cross the periodic boundary. The send lists are kept;
// - forward(): every other step, ghost positions refreshed through the
//   same send lists.
//
// Everything is ordered by the owned atoms' order: received atoms and
// ghosts are appended in a fixed order (from the low neighbour, then from
// the high one), so a rank rebuilds the same ghosts from the same owned
// arrays. A ghost's position is its owner's plus at most one period per
// dimension, the same floating-point operation whichever rank adds it.
// Comm: fx::Comm or miniapps::PlainComm.
#include "atoms.hpp"
#include "domain.hpp"

#include <miniapps/plain_comm.hpp>

#include <Kokkos_Core.hpp>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace miniapps::md {

// An atom changing owner.
struct AtomRecord {
  double x[3], v[3];
  std::int64_t id;
};
// A ghost as sent at a rebuild, its position already shifted.
struct GhostRecord {
  double x[3];
  std::int64_t id;
  std::int32_t image;  // which periodic image (image_code)
  std::int32_t pad;
};
// A ghost position as refreshed between rebuilds.
struct Position {
  double x[3];
};

// Periodic image offsets (each -1, 0 or 1) as one number: 13 is the box itself.
KOKKOS_INLINE_FUNCTION int image_code(int ix, int iy, int iz) {
  return (ix + 1) + 3 * (iy + 1) + 9 * (iz + 1);
}
KOKKOS_INLINE_FUNCTION int image_step(int d) { return d == 0 ? 1 : d == 1 ? 3 : 9; }

// A message buffer in the default memory space and its host mirror (MPI
// reads and writes host memory; on a host backend they are one).
template <class T>
class CommBuffer {
 public:
  using Device = Kokkos::View<T*>;
  using Host = typename Device::HostMirror;

  void reserve(std::int64_t n) {
    if (static_cast<std::int64_t>(dev_.extent(0)) >= n) return;
    dev_ = Device(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("md_comm_buffer")),
                  n + n / 4 + 16);
    host_ = Kokkos::create_mirror_view(dev_);
  }
  const Device& device() const { return dev_; }
  T* host_data() const { return host_.data(); }
  void to_host(std::int64_t n) const { copy(host_, dev_, n); }
  void to_device(std::int64_t n) const { copy(dev_, host_, n); }

 private:
  template <class D, class S>
  static void copy(const D& dst, const S& src, std::int64_t n) {
    if (n == 0 || static_cast<const void*>(dst.data()) == static_cast<const void*>(src.data())) return;
    const auto range = std::make_pair(std::int64_t(0), n);
    const Kokkos::DefaultExecutionSpace space;
    Kokkos::deep_copy(space, Kokkos::subview(dst, range), Kokkos::subview(src, range));
    space.fence();
  }
  Device dev_;
  Host host_;
};

// Owned atoms (first nlocal) and ghosts, as the neighbour list and the
// force kernel see them: position, id and periodic image.
struct AllAtoms {
  Vec3s x{"md_x_all", 0};
  Ids id{"md_id_all", 0};
  Indices image{"md_image_all", 0};
  std::int64_t nlocal = 0, nall = 0;

  void reserve(std::int64_t n) {
    if (static_cast<std::int64_t>(x.extent(0)) >= n) return;
    const std::int64_t cap = n + n / 4 + 64;
    Kokkos::resize(x, cap);
    Kokkos::resize(id, cap);
    Kokkos::resize(image, cap);
  }
};

template <class Comm>
class Exchange {
 public:
  explicit Exchange(const Domain& dom, double ghost_cutoff) : dom_(dom), cut_(ghost_cutoff) {}

  void migrate(const Comm& comm, Atoms& atoms) {
    for (int d = 0; d < 3; ++d)
      if (dom_.dims[d] > 1) migrate_along(comm, atoms, d);
  }

  void borders(const Comm& comm, const Atoms& atoms, AllAtoms& all) {
    copy_owned(atoms, all, true);
    for (int d = 0; d < 3; ++d) borders_along(comm, all, d);
  }

  void forward(const Comm& comm, const Atoms& atoms, AllAtoms& all) {
    copy_owned(atoms, all, false);
    for (int d = 0; d < 3; ++d) forward_along(comm, all, d);
  }

 private:
  enum Tag : int { kMigrateCount = 100, kMigrate = 110, kBorderCount = 120, kBorder = 130, kForward = 140 };

  // One round along d: send[s] goes to neighbour 2d + s (s = 0: low, 1:
  // high) with tag base + 2d + s; recv[s] comes from neighbour 2d + s,
  // which sent it the other way. Alone along d, the rank is its own
  // neighbour: recv[s] is send[1 - s].
  template <class T>
  void round(const Comm& comm, int d, int base, std::array<CommBuffer<T>, 2>& send,
             const std::array<std::int64_t, 2>& nsend, std::array<CommBuffer<T>, 2>& recv,
             const std::array<std::int64_t, 2>& nrecv) const {
    for (int s = 0; s < 2; ++s) recv[s].reserve(nrecv[s]);
    if (dom_.dims[d] == 1) {
      for (int s = 0; s < 2; ++s)
        if (nrecv[s] > 0)
          Kokkos::deep_copy(Kokkos::subview(recv[s].device(), std::make_pair(std::int64_t(0), nrecv[s])),
                            Kokkos::subview(send[1 - s].device(), std::make_pair(std::int64_t(0), nrecv[s])));
      Kokkos::fence();
      return;
    }
    std::vector<request_t<Comm>> reqs;
    reqs.reserve(4);
    for (int s = 0; s < 2; ++s)
      reqs.push_back(comm.irecv(recv[s].host_data(), static_cast<std::size_t>(nrecv[s]),
                                dom_.neighbour[2 * d + s], base + 2 * d + (1 - s)));
    for (int s = 0; s < 2; ++s) {
      send[s].to_host(nsend[s]);
      reqs.push_back(comm.isend(send[s].host_data(), static_cast<std::size_t>(nsend[s]),
                                dom_.neighbour[2 * d + s], base + 2 * d + s));
    }
    comm.wait_all(reqs);
    for (int s = 0; s < 2; ++s) recv[s].to_device(nrecv[s]);
  }

  // The counts the neighbours will send along d.
  std::array<std::int64_t, 2> counts(const Comm& comm, int d, int base,
                                     const std::array<std::int64_t, 2>& nsend) {
    std::array<std::int64_t, 2> nrecv{nsend[1], nsend[0]};
    if (dom_.dims[d] == 1) return nrecv;
    std::vector<request_t<Comm>> reqs;
    for (int s = 0; s < 2; ++s)
      reqs.push_back(comm.irecv(&nrecv[s], 1, dom_.neighbour[2 * d + s], base + 2 * d + (1 - s)));
    for (int s = 0; s < 2; ++s)
      reqs.push_back(comm.isend(&nsend[s], 1, dom_.neighbour[2 * d + s], base + 2 * d + s));
    comm.wait_all(reqs);
    return nrecv;
  }

 public:
  // The rounds' steps: public only because CUDA's extended lambdas
  // (KOKKOS_LAMBDA) may not sit in a private member function.
  void migrate_along(const Comm& comm, Atoms& atoms, int d);
  std::int64_t sort_out(const Atoms& atoms, int d, std::array<std::int64_t, 2>& nsend);
  void adopt(Atoms& atoms, std::int64_t nstay, const std::array<std::int64_t, 2>& nrecv);
  void borders_along(const Comm& comm, AllAtoms& all, int d);
  void forward_along(const Comm& comm, AllAtoms& all, int d);
  void copy_owned(const Atoms& atoms, AllAtoms& all, bool with_ids) const;

 private:
  Domain dom_;
  double cut_;
  // Migration scratch.
  Indices where_, stay_, leave_[2];
  std::array<CommBuffer<AtomRecord>, 2> atom_send_, atom_recv_;
  // The ghost plan, per dimension and side: send list, shift, received range.
  Indices list_[3][2];
  std::int64_t nsend_[3][2] = {}, nrecv_[3][2] = {}, first_[3][2] = {};
  double shift_[3][2] = {};
  std::array<CommBuffer<GhostRecord>, 2> ghost_send_, ghost_recv_;
  std::array<CommBuffer<Position>, 2> pos_send_[3], pos_recv_[3];
};

// Owned atoms into the first nlocal slots (ids and images only at a rebuild).
template <class Comm>
void Exchange<Comm>::copy_owned(const Atoms& atoms, AllAtoms& all, bool with_ids) const {
  const std::int64_t n = atoms.size();
  if (with_ids) {
    all.nlocal = all.nall = n;
    all.reserve(n);
  }
  const Vec3s src = atoms.x, dst = all.x;
  const Ids id = atoms.id, all_id = all.id;
  const Indices image = all.image;
  Kokkos::parallel_for(
      "md::copy_owned", Range(0, n), KOKKOS_LAMBDA(const std::int64_t i) {
        for (int e = 0; e < 3; ++e) dst(i, e) = src(i, e);
        if (with_ids) {
          all_id(i) = id(i);
          image(i) = image_code(0, 0, 0);
        }
      });
}

template <class Comm>
void Exchange<Comm>::migrate_along(const Comm& comm, Atoms& atoms, int d) {
  std::array<std::int64_t, 2> nsend{};
  const std::int64_t nstay = sort_out(atoms, d, nsend);
  for (int s = 0; s < 2; ++s) {
    atom_send_[s].reserve(nsend[s]);
    const auto buf = atom_send_[s].device();
    const Indices list = leave_[s];
    const Vec3s x = atoms.x, v = atoms.v;
    const Ids id = atoms.id;
    Kokkos::parallel_for(
        "md::migrate_pack", Range(0, nsend[s]), KOKKOS_LAMBDA(const std::int64_t k) {
          const int i = list(k);
          for (int e = 0; e < 3; ++e) {
            buf(k).x[e] = x(i, e);
            buf(k).v[e] = v(i, e);
          }
          buf(k).id = id(i);
        });
  }
  const std::array<std::int64_t, 2> nrecv = counts(comm, d, kMigrateCount, nsend);
  round(comm, d, kMigrate, atom_send_, nsend, atom_recv_, nrecv);
  adopt(atoms, nstay, nrecv);
}

// Which atoms stay (stay_) and which go to the low and the high neighbour
// along d (leave_), in their order; returns how many stay.
template <class Comm>
std::int64_t Exchange<Comm>::sort_out(const Atoms& atoms, int d, std::array<std::int64_t, 2>& nsend) {
  const std::int64_t n = atoms.size();
  const Domain dom = dom_;
  const int c = dom.coord[d], p = dom.dims[d];
  const int low = (c + p - 1) % p, high = (c + 1) % p;
  Kokkos::realloc(where_, n);
  const Indices where = where_;
  const Vec3s x = atoms.x;
  std::int64_t lost = 0;  // moved further than the next sub-box
  Kokkos::parallel_reduce(
      "md::migrate_where", Range(0, n),
      KOKKOS_LAMBDA(const std::int64_t i, std::int64_t& bad) {
        const int to = dom.coord_of(d, x(i, d));
        where(i) = to == c ? 0 : to == low ? 1 : to == high ? 2 : 3;
        bad += where(i) == 3 ? 1 : 0;
      },
      lost);
  if (lost > 0)
    throw std::runtime_error("md: " + std::to_string(lost) + " atom(s) on rank " + std::to_string(dom.rank) +
                             " moved further than the next sub-box along " + "xyz"[d] +
                             " between rebuilds (time step too large?)");
  for (int s = 0; s < 2; ++s)
    nsend[s] = select_indices(
        "md::migrate_leave", n, KOKKOS_LAMBDA(const std::int64_t i) { return where(i) == s + 1; }, leave_[s]);
  return select_indices(
      "md::migrate_stay", n, KOKKOS_LAMBDA(const std::int64_t i) { return where(i) == 0; }, stay_);
}

// The new owned arrays, exactly sized: the stayers in their order, then
// the arrivals from the low and from the high neighbour.
template <class Comm>
void Exchange<Comm>::adopt(Atoms& atoms, std::int64_t nstay, const std::array<std::int64_t, 2>& nrecv) {
  const Vec3s x = atoms.x, v = atoms.v;
  const Ids id = atoms.id;
  Atoms next;
  next.allocate(nstay + nrecv[0] + nrecv[1]);
  const Vec3s nx = next.x, nv = next.v;
  const Ids nid = next.id;
  const Indices stay = stay_;
  Kokkos::parallel_for(
      "md::migrate_keep", Range(0, nstay), KOKKOS_LAMBDA(const std::int64_t k) {
        const int i = stay(k);
        for (int e = 0; e < 3; ++e) {
          nx(k, e) = x(i, e);
          nv(k, e) = v(i, e);
        }
        nid(k) = id(i);
      });
  std::int64_t at = nstay;
  for (int s = 0; s < 2; ++s) {
    const auto buf = atom_recv_[s].device();
    const std::int64_t base = at;
    Kokkos::parallel_for(
        "md::migrate_unpack", Range(0, nrecv[s]), KOKKOS_LAMBDA(const std::int64_t k) {
          for (int e = 0; e < 3; ++e) {
            nx(base + k, e) = buf(k).x[e];
            nv(base + k, e) = buf(k).v[e];
          }
          nid(base + k) = buf(k).id;
        });
    at += nrecv[s];
  }
  Kokkos::fence();
  atoms.x = next.x;  // the registered Views are these members: same labels, new extent
  atoms.v = next.v;
  atoms.id = next.id;
}

template <class Comm>
void Exchange<Comm>::borders_along(const Comm& comm, AllAtoms& all, int d) {
  const std::int64_t n = all.nall;  // both sides choose among the atoms held before this round
  const Vec3s x = all.x;
  const Ids id = all.id;
  const Indices image = all.image;
  const double lo = dom_.lo[d] + cut_, hi = dom_.hi[d] - cut_;
  std::array<std::int64_t, 2> nsend{};
  for (int s = 0; s < 2; ++s) {
    // Leaving the box through its low face, a ghost reappears at the top.
    const bool crosses = s == 0 ? dom_.coord[d] == 0 : dom_.coord[d] == dom_.dims[d] - 1;
    const double shift = crosses ? (s == 0 ? dom_.length[d] : -dom_.length[d]) : 0.0;
    const int image_shift = crosses ? (s == 0 ? image_step(d) : -image_step(d)) : 0;
    shift_[d][s] = shift;
    nsend[s] = nsend_[d][s] = select_indices(
        "md::border_list", n,
        KOKKOS_LAMBDA(const std::int64_t i) { return s == 0 ? x(i, d) < lo : x(i, d) >= hi; }, list_[d][s]);
    ghost_send_[s].reserve(nsend[s]);
    const auto buf = ghost_send_[s].device();
    const Indices list = list_[d][s];
    Kokkos::parallel_for(
        "md::border_pack", Range(0, nsend[s]), KOKKOS_LAMBDA(const std::int64_t k) {
          const int i = list(k);
          for (int e = 0; e < 3; ++e) buf(k).x[e] = e == d ? x(i, e) + shift : x(i, e);
          buf(k).id = id(i);
          buf(k).image = image(i) + image_shift;
          buf(k).pad = 0;
        });
  }
  const std::array<std::int64_t, 2> nrecv = counts(comm, d, kBorderCount, nsend);
  round(comm, d, kBorder, ghost_send_, nsend, ghost_recv_, nrecv);
  all.reserve(n + nrecv[0] + nrecv[1]);
  std::int64_t at = n;
  for (int s = 0; s < 2; ++s) {
    first_[d][s] = at;
    nrecv_[d][s] = nrecv[s];
    const auto buf = ghost_recv_[s].device();
    const Vec3s ax = all.x;
    const Ids aid = all.id;
    const Indices aimage = all.image;
    const std::int64_t base = at;
    Kokkos::parallel_for(
        "md::border_unpack", Range(0, nrecv[s]), KOKKOS_LAMBDA(const std::int64_t k) {
          for (int e = 0; e < 3; ++e) ax(base + k, e) = buf(k).x[e];
          aid(base + k) = buf(k).id;
          aimage(base + k) = buf(k).image;
        });
    at += nrecv[s];
  }
  Kokkos::fence();
  all.nall = at;
  for (int s = 0; s < 2; ++s) pos_send_[d][s].reserve(nsend[s]);
}

template <class Comm>
void Exchange<Comm>::forward_along(const Comm& comm, AllAtoms& all, int d) {
  const Vec3s x = all.x;
  std::array<std::int64_t, 2> nsend{}, nrecv{};
  for (int s = 0; s < 2; ++s) {
    nsend[s] = nsend_[d][s];
    nrecv[s] = nrecv_[d][s];
    const auto buf = pos_send_[d][s].device();
    const Indices list = list_[d][s];
    const double shift = shift_[d][s];
    Kokkos::parallel_for(
        "md::forward_pack", Range(0, nsend[s]), KOKKOS_LAMBDA(const std::int64_t k) {
          const int i = list(k);
          for (int e = 0; e < 3; ++e) buf(k).x[e] = e == d ? x(i, e) + shift : x(i, e);
        });
  }
  round(comm, d, kForward, pos_send_[d], nsend, pos_recv_[d], nrecv);
  for (int s = 0; s < 2; ++s) {
    const auto buf = pos_recv_[d][s].device();
    const std::int64_t base = first_[d][s];
    Kokkos::parallel_for(
        "md::forward_unpack", Range(0, nrecv[s]), KOKKOS_LAMBDA(const std::int64_t k) {
          for (int e = 0; e < 3; ++e) x(base + k, e) = buf(k).x[e];
        });
  }
  Kokkos::fence();
}

}  // namespace miniapps::md
