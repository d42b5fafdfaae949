// triple_buffer_index: the writer and the reader never hold the same buffer, the reader always
// gets the newest complete set, and under two threads a reader never sees a set the writer is
// still filling (each buffer holds a version stamped into every element; a torn read mixes two).

#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "seedrl/runtime/triple_buffer.hpp"

TEST_CASE("triple_buffer_index rotates without handing one buffer to both sides",
          "[triple_buffer]") {
  seedrl::triple_buffer_index t;
  CHECK_FALSE(t.acquire().has_value());  // nothing published yet
  const int w0 = t.write_index();
  CHECK(t.publish() == 1);
  const auto a = t.acquire();
  REQUIRE(a.has_value());
  CHECK(a->index == w0);  // the reader gets exactly what was written
  CHECK(a->version == 1);
  CHECK_FALSE(t.acquire().has_value());  // not newer
  // Two publishes before the reader looks: it gets the second, never the first again.
  const int w1 = t.write_index();
  CHECK(w1 != a->index);
  t.publish();
  const int w2 = t.write_index();
  CHECK(w2 != a->index);
  CHECK(w2 != w1);  // the writer does not overwrite the newest set
  t.publish();
  const auto b = t.acquire();
  REQUIRE(b.has_value());
  CHECK(b->index == w2);
  CHECK(b->version == 3);
  CHECK(t.write_index() != b->index);
}

TEST_CASE("triple_buffer_index: a concurrent reader never reads a half-written set",
          "[triple_buffer]") {
  constexpr std::size_t width = 256;
  constexpr std::uint64_t sets = 20000;
  std::array<std::vector<std::atomic<std::uint64_t>>, 3> buffers{
      std::vector<std::atomic<std::uint64_t>>(width),
      std::vector<std::atomic<std::uint64_t>>(width),
      std::vector<std::atomic<std::uint64_t>>(width)};
  seedrl::triple_buffer_index t;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (std::uint64_t v = 1; v <= sets; ++v) {
      auto& buf = buffers[static_cast<std::size_t>(t.write_index())];
      for (auto& x : buf)
        x.store(v, std::memory_order_relaxed);
      t.publish();
    }
    done = true;
  });
  std::uint64_t last = 0, torn = 0, backwards = 0, reads = 0;
  while (!done || last < sets) {
    const auto a = t.acquire();
    if (!a)
      continue;
    ++reads;
    const auto& buf = buffers[static_cast<std::size_t>(a->index)];
    for (const auto& x : buf)
      torn += x.load(std::memory_order_relaxed) != a->version ? 1 : 0;
    backwards += a->version <= last ? 1 : 0;
    last = a->version;
  }
  writer.join();
  CHECK(torn == 0);
  CHECK(backwards == 0);
  CHECK(last == sets);
  CHECK(reads > 0);
}
