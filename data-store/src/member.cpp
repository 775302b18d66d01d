#include <fx/data_store/member.hpp>
#include <fx/data_store/member_shape.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <cstring>

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
                                   "{}; register it as fx::resizable(...) when its size changes",
                                   name, registered, now));
}

Member resizable_host_member(std::string name, std::string type, std::string layout, std::size_t element,
                             const std::function<std::byte*()>& host,
                             std::function<std::vector<std::size_t>()> shape,
                             std::function<void(const std::vector<std::size_t>&)> reshape) {
  auto bytes_now = [shape, element] {
    std::size_t n = element;
    for (auto e : shape()) n *= e;
    return n;
  };
  Member m = host_member(std::move(name), std::move(type), shape(), std::move(layout), bytes_now(), host);
  m.save = [host, bytes_now](std::byte* out) {
    if (const std::size_t n = bytes_now()) std::memcpy(out, host(), n);
  };
  m.load = [host, bytes_now](const std::byte* in) {
    if (const std::size_t n = bytes_now()) std::memcpy(host(), in, n);
  };
  m.shape = std::move(shape);
  m.reshape = std::move(reshape);
  return m;
}

void throw_reshape(const std::string& name, const std::vector<std::size_t>& extents, const std::string& why) {
  FX_THROW(CheckpointError,
           fmt::format("data store: member '{}' cannot take the checkpoint's extents [{}]: {}", name,
                       fmt::join(extents, ", "), why));
}

void throw_padded(const std::string& name, std::size_t span, std::size_t size) {
  FX_THROW(UsageError, fmt::format("data store: resizable View '{}' spans {} elements for its {} (padded): "
                                   "register an unpadded View",
                                   name, span, size));
}

void refresh(Member& m) {
  if (!m.shape) return;
  m.extents = m.shape();
  std::size_t n = type_size(m.type);
  for (auto e : m.extents) n *= e;
  m.bytes = n;
}

Member current(const Member& m) {
  Member c = m;
  refresh(c);
  return c;
}

void fit(Member& m, const std::vector<std::uint64_t>& extents, const std::string& what) {
  if (!m.reshape) return;
  const std::vector<std::size_t> want(extents.begin(), extents.end());
  try {
    if (m.shape() != want) m.reshape(want);
  } catch (const CheckpointError& e) {
    FX_THROW(CheckpointError, fmt::format("{}: {}", what, e.what()));
  }
  refresh(m);
}

}  // namespace fx::detail
