#pragma once
// The runtime's way into fx::Comm (not installed): a Comm that reports its
// failures to the runtime's handler, one that follows a slot the runtime
// swaps after a repair, and those two read back.
#include <fx/comm.hpp>

#include <memory>
#include <utility>

namespace fx::detail {

struct CommAccess {
  static Comm reporting(MPI_Comm raw, FailureHandler* handler) { return Comm(raw, handler); }
  static Comm tracked(std::shared_ptr<CommSlot> slot) { return Comm(std::move(slot)); }
  static FailureHandler* handler(const Comm& c) { return c.handler(); }
  static const std::shared_ptr<CommSlot>& slot(const Comm& c) { return c.slot(); }
};

}  // namespace fx::detail
