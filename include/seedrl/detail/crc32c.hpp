#pragma once
/// \file
/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the checksum of TensorBoard's record
/// format and of seedrl's checkpoint files. Table-driven, byte at a time: checksums run once
/// per record or file, far from any hot path.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace seedrl::detail {

/// The 256-entry lookup table, built at compile time.
inline constexpr std::array<std::uint32_t, 256> crc32c_table = [] {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k)
      c = (c & 1u) != 0 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}();

/// Continues a CRC-32C over `bytes`: pass the previous result as `crc` to checksum data in
/// pieces; start with 0. crc32c("123456789") == 0xE3069283.
constexpr std::uint32_t crc32c(std::span<const std::byte> bytes, std::uint32_t crc = 0) noexcept {
  crc = ~crc;
  for (const std::byte b : bytes)
    crc = crc32c_table[(crc ^ std::to_integer<std::uint32_t>(b)) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

}  // namespace seedrl::detail
