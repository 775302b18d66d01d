#pragma once
// Small helpers for the messages fx writes.
#include <string>

namespace fx::detail {
// "1 round", "2 rounds": `word` with an "s" unless `count` is 1.
inline std::string counted(long long count, const char* word) {
  std::string out = std::to_string(count) + ' ' + word;
  if (count != 1) out += 's';
  return out;
}
}  // namespace fx::detail
