// Without libFuzzer (GCC builds): a fuzz target replays its corpus, every
// file under each directory given (or the files given), as a plain test.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

void replay(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // A buffer of exactly the input's size, as libFuzzer gives: an overread is seen.
  std::vector<std::uint8_t> exact(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(exact.empty() ? nullptr : exact.data(), exact.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    if (!std::filesystem::is_directory(arg)) {
      replay(arg);
      ++count;
      continue;
    }
    for (const auto& e : std::filesystem::recursive_directory_iterator(arg)) {
      if (!e.is_regular_file()) continue;
      replay(e.path());
      ++count;
    }
  }
  std::cout << "replayed " << count << " input(s), none crashed\n";
  return count > 0 ? 0 : 1;
}
