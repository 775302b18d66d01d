#pragma once
// A member's extents as they are now (not installed): a resizable member
// (fx::resizable) changes size between commits, so the store, TryBlocks and
// fault injection read its shape before they size anything after it.
#include <fx/data_store/member.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace fx::detail {

// `extents` and `bytes` from m.shape() (a fixed member is left as it is).
void refresh(Member& m);
// A copy of `m` as it is now (refresh()ed).
Member current(const Member& m);
// Give a resizable member the extents `extents` (reshape() when they
// differ, then refresh()); a fixed member is left as it is. Throws
// CheckpointError (naming `what`) when the member cannot take them.
void fit(Member& m, const std::vector<std::uint64_t>& extents, const std::string& what);

}  // namespace fx::detail
