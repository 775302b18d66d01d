#include <fx/data_store/member.hpp>

#include <fmt/format.h>

#include <cctype>

namespace fx::detail {

std::size_t type_size(std::string_view type) {
  std::size_t digits = type.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(type[digits - 1]))) --digits;
  const std::string_view stem = type.substr(0, digits);
  const std::size_t number = digits < type.size() ? std::stoul(std::string(type.substr(digits))) : 0;
  if (stem == "bool") return 1;
  if (stem == "bytes") return number > 0 ? number : 1;
  if ((stem == "float" || stem == "int" || stem == "uint" || stem == "complex") && number % 8 == 0 &&
      number > 0) {
    return number / 8;
  }
  return 1;
}

Member host_member(std::string name, std::string type, std::vector<std::size_t> extents, std::string layout,
                   std::size_t bytes, std::function<std::byte*()> host) {
  Member m;
  m.name = std::move(name);
  m.type = std::move(type);
  m.extents = std::move(extents);
  m.layout = std::move(layout);
  m.bytes = bytes;
  m.save = [host, bytes](std::byte* out) {
    if (bytes) std::memcpy(out, host(), bytes);
  };
  m.load = [host, bytes](const std::byte* in) {
    if (bytes) std::memcpy(host(), in, bytes);
  };
  m.host = std::move(host);
  return m;
}

void throw_resized(const std::string& name, std::size_t registered, std::size_t now) {
  FX_THROW(UsageError, fmt::format("data store: member '{}' was registered with {} elements and now has "
                                   "{}; register it again after resizing (clear() and add())",
                                   name, registered, now));
}

}  // namespace fx::detail
