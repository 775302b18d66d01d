#pragma once
// Targets that are no regular file, for the tests of what fx refuses to
// write over: in `dir`, `dev` (a /dev/full-like character device, 1:7;
// made only as root), `fifo`, `sock` (a bound Unix socket), and `link`, a
// symbolic link to the regular file `target` ("keep me\n"). Returns whether
// `dev` was made; throws std::runtime_error when another could not be.
#include <string>

namespace fx_test {
bool make_special_files(const std::string& dir);
// "fifo is a FIFO" etc.: whether every one is still what it was made as
// (and `target` still holds its text); "" when all are, else what changed.
std::string special_files_changed(const std::string& dir);
}  // namespace fx_test
