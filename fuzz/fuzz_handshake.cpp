// libFuzzer target: the input describes a hello (not its wire bytes), so that the fuzzer spends
// its time on values near the learner's spec and the limits instead of on framing. Checks:
// encode_hello accepts exactly the hellos an independent rule check accepts; what it writes
// decodes to the same values and re-encodes to the same bytes; every cut or extended payload
// is refused; check_hello accepts only the learner's own spec, and it whenever the frames fit.
// See docs/fuzzing.md.
//
// Input layout, read front to back (missing bytes read as 0):
//   u8 learner (mod 3), u8 mask, u64 actor_id, count num_envs,
//   then for each mask bit set, in bit order, a replacement for the learner's value:
//     0 observation dtype (u8 mod 6), 1 observation shape, 2 action kind (u8 mod 4),
//     3 num_actions (int), 4 action shape, 5 low (real), 6 high (real),
//     7 per-element bounds: u8 count (mod 9), then count (low, high) real pairs,
//   u8 max_payload mode (mod 4) and its operand, u16 cut, then the name: all remaining bytes.
// count: u8 b < 0xF0 ? b : u32.  int: u8 b < 0xF0 ? b - 1 : i32.  real: u8 b < 0x80 ? a table
// entry : f64 bits.  shape: u8 rank (mod 7), then per dim a u8 selector (and operand).

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "seedrl/protocol/frame.hpp"

namespace {

namespace p = seedrl::protocol;
using seedrl::action_kind;
using seedrl::action_spec;
using seedrl::dtype;
using seedrl::observation_spec;
using seedrl::tensor_shape;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_handshake: invariant violated: %s\n", what);
    std::abort();
  }
}

/// Hands out the input front to back; reads past the end give zeros, so every input is usable.
class byte_source {
 public:
  byte_source(const std::uint8_t* data, std::size_t size) noexcept : data_(data), size_(size) {}
  std::uint8_t u8() noexcept { return at_ < size_ ? data_[at_++] : 0; }
  std::uint16_t u16() noexcept {
    const unsigned lo = u8();
    return static_cast<std::uint16_t>(lo | (unsigned{u8()} << 8));
  }
  std::uint32_t u32() noexcept {
    const std::uint32_t lo = u16();
    return lo | (std::uint32_t{u16()} << 16);
  }
  std::uint64_t u64() noexcept {
    const std::uint64_t lo = u32();
    return lo | (std::uint64_t{u32()} << 32);
  }
  std::string rest() {
    std::string s(reinterpret_cast<const char*>(data_ + at_), size_ - at_);
    at_ = size_;
    return s;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

std::uint32_t pick_count(byte_source& in) {
  const std::uint8_t b = in.u8();
  return b < 0xF0 ? b : in.u32();
}

std::int32_t pick_int(byte_source& in) {
  const std::uint8_t b = in.u8();
  return b < 0xF0 ? std::int32_t{b} - 1 : static_cast<std::int32_t>(in.u32());
}

double pick_real(byte_source& in) {
  static constexpr std::array<double, 12> table{0.0,
                                                -0.0,
                                                1.0,
                                                -1.0,
                                                2.0,
                                                -2.0,
                                                std::numeric_limits<double>::infinity(),
                                                -std::numeric_limits<double>::infinity(),
                                                std::numeric_limits<double>::quiet_NaN(),
                                                std::numeric_limits<double>::denorm_min(),
                                                std::numeric_limits<double>::max(),
                                                std::numeric_limits<double>::lowest()};
  const std::uint8_t b = in.u8();
  return b < 0x80 ? table[b % table.size()] : std::bit_cast<double>(in.u64());
}

// Dimensions are positive (tensor_shape refuses others) but may pass the wire's 2^32 - 1.
tensor_shape pick_shape(byte_source& in) {
  static constexpr std::array<std::int64_t, 8> table{
      1, 2, 3, 4, 84, 0xFFFFFFFF, std::int64_t{1} << 32, 1 << 16};
  tensor_shape s;
  const unsigned rank = in.u8() % (tensor_shape::max_rank + 1);
  for (unsigned i = 0; i < rank; ++i) {
    const std::uint8_t b = in.u8();
    std::int64_t d = 1;
    switch (b >> 6) {
      case 0:
        d = 1 + (b & 0x3F);
        break;
      case 1:
        d = table[b & 7];
        break;
      case 2:
        d = std::max<std::int64_t>(in.u32(), 1);
        break;
      default:
        d = std::max<std::int64_t>(static_cast<std::int64_t>(in.u64() >> 1), 1);
        break;
    }
    s.push_back(d);
  }
  return s;
}

struct learner_spec {
  observation_spec observation;
  action_spec action;
};

const std::array<learner_spec, 3>& learners() {
  static const std::array<learner_spec, 3> specs{{
      {{dtype::float32, tensor_shape{4}}, action_spec::discrete(2)},
      {{dtype::uint8, tensor_shape{84, 84, 1}}, action_spec::discrete(6)},
      {{dtype::float32, tensor_shape{3}}, action_spec::continuous(tensor_shape{1}, -2.0, 2.0)},
  }};
  return specs;
}

// --- the reference: the protocol's rules (docs/protocol.md), written apart from frame.hpp ---

// Printable UTF-8 by the textbook definition: decode, then refuse overlong forms, surrogates,
// code points past U+10FFFF and C0/DEL/C1 controls.
bool reference_printable_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto b = static_cast<unsigned char>(text[i]);
    // Sequence length from the count of leading one bits; 10xxxxxx and 11111xxx cannot lead.
    const int ones = std::countl_one(b);
    if (ones == 1 || ones > 4) {
      return false;
    }
    const std::size_t len = ones == 0 ? 1 : static_cast<std::size_t>(ones);
    static constexpr std::array<std::uint32_t, 5> smallest{0, 0, 0x80, 0x800, 0x10000};
    std::uint32_t cp = b & (0x7Fu >> ones);
    if (text.size() - i < len) {
      return false;
    }
    for (std::size_t k = 1; k < len; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      if ((c & 0xC0) != 0x80) {
        return false;
      }
      cp = (cp << 6) | (c & 0x3F);
    }
    if (cp < smallest[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) {
      return false;
    }
    if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0)) {
      return false;
    }
    i += len;
  }
  return true;
}

// Rank 1..6, dims 1..2^32-1, and at most `limit` elements (limit <= 2^31, so no overflow).
bool reference_shape(const tensor_shape& s, std::uint64_t limit) {
  if (s.rank() == 0 || s.rank() > 6) {
    return false;
  }
  std::uint64_t n = 1;
  for (const std::int64_t d : s) {
    if (d < 1 || d > 0xFFFFFFFF) {
      return false;
    }
    n *= static_cast<std::uint64_t>(d);
    if (n > limit) {
      return false;
    }
  }
  return true;
}

// The bounds the input asks for, kept raw: action_spec refuses bad ones, so they are checked
// here before a spec can hold them.
struct raw_bounds {
  double low = 0.0;
  double high = 0.0;
  bool per_element = false;
  std::vector<double> lows;
  std::vector<double> highs;
};

// Rules for the bounds of a continuous action of `elements` elements: one pair (hello
// version 1) or one pair per element, at most 1024 (version 2); never NaN, low < high.
bool reference_bounds(const raw_bounds& b, std::uint64_t elements) {
  const auto pair_ok = [](double lo, double hi) { return lo == lo && hi == hi && lo < hi; };
  if (!b.per_element) {
    return pair_ok(b.low, b.high);
  }
  if (b.lows.size() != elements || elements > 1024) {
    return false;
  }
  for (std::size_t i = 0; i < b.lows.size(); ++i) {
    if (!pair_ok(b.lows[i], b.highs[i])) {
      return false;
    }
  }
  return true;
}

bool reference_valid(const p::hello& h, const raw_bounds& bounds) {
  std::uint64_t element = 0;
  switch (static_cast<unsigned>(h.observation.type)) {
    case 1:
      element = 1;
      break;
    case 2:
    case 3:
      element = 4;
      break;
    case 4:
      element = 8;
      break;
    default:
      return false;
  }
  if (h.num_envs == 0 || !reference_shape(h.observation.shape, (1ull << 31) / element)) {
    return false;
  }
  switch (static_cast<unsigned>(h.action.kind)) {
    case 1:
      if (h.action.num_actions < 1) {
        return false;
      }
      break;
    case 2:
      if (!reference_shape(h.action.shape, 1ull << 28) ||
          !reference_bounds(bounds, static_cast<std::uint64_t>(h.action.shape.num_elements()))) {
        return false;
      }
      break;
    default:
      return false;
  }
  return h.name.size() <= 256 && reference_printable_utf8(h.name);
}

// The fields the wire carries: a discrete spec has no shape or bounds, a continuous one no
// count. Bounds compare by bits, so that -0.0 must come back as -0.0.
bool same_on_wire(const p::hello& a, const p::hello& b) {
  if (a.actor_id != b.actor_id || a.num_envs != b.num_envs || a.name != b.name ||
      !(a.observation == b.observation) || a.action.kind != b.action.kind) {
    return false;
  }
  if (a.action.kind == action_kind::discrete) {
    return a.action.num_actions == b.action.num_actions;
  }
  // Storage may differ (one pair per element that are all alike travels as version 1), the
  // bits of every element's bounds may not.
  if (!(a.action.shape == b.action.shape)) {
    return false;
  }
  // Over the stored pairs, not the elements: one pair stands for all of up to 2^28 elements
  // (a loop over those took 16 s per input here); per-element bounds are one per element.
  const auto bits = [](double v) { return std::bit_cast<std::uint64_t>(v); };
  const std::size_t pairs = std::max(a.action.bound_pairs(), b.action.bound_pairs());
  for (std::size_t i = 0; i < pairs; ++i) {
    if (bits(a.action.low_at(i)) != bits(b.action.low_at(i)) ||
        bits(a.action.high_at(i)) != bits(b.action.high_at(i))) {
      return false;
    }
  }
  return true;
}

bool same_spec(const p::hello& h, const learner_spec& l) {
  if (!(h.observation == l.observation) || h.action.kind != l.action.kind) {
    return false;
  }
  if (h.action.kind == action_kind::discrete) {
    return h.action.num_actions == l.action.num_actions;
  }
  if (!(h.action.shape == l.action.shape)) {
    return false;
  }
  const std::size_t pairs = std::max(h.action.bound_pairs(), l.action.bound_pairs());
  for (std::size_t i = 0; i < pairs; ++i) {  // the stored pairs, as in same_on_wire
    if (h.action.low_at(i) != l.action.low_at(i) || h.action.high_at(i) != l.action.high_at(i)) {
      return false;
    }
  }
  return true;
}

// Payload bytes of the step and actions frames `h` implies; only called for specs that match
// a learner's, whose sizes are small.
std::uint64_t largest_frame(const p::hello& h) {
  const auto obs = static_cast<std::uint64_t>(h.observation.num_bytes());
  const std::uint64_t step = 4 + std::uint64_t{h.num_envs} * (20 + obs);
  const std::uint64_t acts = 4 + std::uint64_t{h.num_envs} * 4 * p::action_elements(h.action);
  return std::max(step, acts);
}

void run(byte_source& in) {
  const learner_spec& learner = learners()[in.u8() % learners().size()];
  const std::uint8_t mask = in.u8();
  p::hello h;
  h.actor_id = in.u64();
  h.num_envs = pick_count(in);
  h.observation = learner.observation;
  h.action = learner.action;
  if ((mask & 0x01) != 0) {
    h.observation.type = static_cast<dtype>(in.u8() % 6);
  }
  if ((mask & 0x02) != 0) {
    h.observation.shape = pick_shape(in);
  }
  if ((mask & 0x04) != 0) {
    h.action.kind = static_cast<action_kind>(in.u8() % 4);
  }
  if ((mask & 0x08) != 0) {
    h.action.num_actions = pick_int(in);
  }
  if ((mask & 0x10) != 0) {
    h.action.shape = pick_shape(in);
  }
  raw_bounds bounds;
  if (learner.action.kind == action_kind::continuous) {
    bounds.low = learner.action.low_at(0);
    bounds.high = learner.action.high_at(0);
  }
  if ((mask & 0x20) != 0) {
    bounds.low = pick_real(in);
  }
  if ((mask & 0x40) != 0) {
    bounds.high = pick_real(in);
  }
  if ((mask & 0x80) != 0) {
    bounds.per_element = true;
    const unsigned count = in.u8() % 9;
    for (unsigned i = 0; i < count; ++i) {
      bounds.lows.push_back(pick_real(in));
      bounds.highs.push_back(pick_real(in));
    }
  }
  const std::uint8_t limit_mode = in.u8() % 4;
  const std::uint8_t limit_operand = in.u8();
  const std::uint16_t cut = in.u16();
  h.name = in.rest();

  std::vector<std::byte> frame;
  bool encoded = true;
  try {
    // action_spec refuses bad bounds itself: that counts as the hello's refusal.
    if (h.action.kind == action_kind::continuous) {
      h.action = bounds.per_element
                     ? action_spec::continuous(h.action.shape, bounds.lows, bounds.highs)
                     : action_spec::continuous(h.action.shape, bounds.low, bounds.high);
    }
    p::encode_hello(h, frame);
  } catch (const std::invalid_argument&) {
    encoded = false;
  }
  const bool valid = reference_valid(h, bounds);
  check(encoded || !valid, "encode_hello refused a hello that follows the protocol's rules");
  check(!encoded || valid, "encode_hello accepted a hello that breaks the protocol's rules");
  if (!encoded) {
    return;
  }

  p::frame_header header;
  std::span<const std::byte> payload;
  check(p::decode_frame(frame, p::default_max_payload, header, payload) == p::error_code::none &&
            header.type == p::message_type::hello && payload.size() <= 350 + 16 * 8,
        "encode_hello wrote a frame that does not decode");
  p::hello decoded;
  std::string why;
  check(p::decode_hello(payload, decoded, &why) == p::error_code::none,
        "decode_hello refused what encode_hello wrote");
  check(same_on_wire(h, decoded), "hello round trip changed a value");
  std::vector<std::byte> again;
  p::encode_hello(decoded, again);
  check(again == frame, "decoded hello re-encodes to other bytes");

  // A hello payload delimits itself: any strict prefix ends inside a field, and any extra
  // byte is trailing data.
  p::hello ignored;
  check(p::decode_hello(payload.first(cut % payload.size()), ignored) ==
            p::error_code::truncated_frame,
        "decode_hello did not refuse a cut payload as truncated");
  std::vector<std::byte> longer(payload.begin(), payload.end());
  longer.push_back(std::byte{limit_operand});
  check(p::decode_hello(longer, ignored) == p::error_code::truncated_frame,
        "decode_hello did not refuse trailing bytes as truncated");

  for (const learner_spec& l : learners()) {
    const bool same = same_spec(decoded, l);
    std::uint32_t max_payload = 0;
    switch (limit_mode) {
      case 0:
        max_payload = p::default_max_payload;
        break;
      case 1:
        max_payload = 1u << 20;
        break;
      case 2: {
        // Around the exact size, where an off-by-one would show.
        const std::uint64_t exact = same ? largest_frame(decoded) : 64;
        max_payload = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(exact + limit_operand % 3 - 1, 0xFFFFFFFF));
        break;
      }
      default:
        max_payload = std::uint32_t{limit_operand} << (limit_operand % 24);
        break;
    }
    const p::error_code got = p::check_hello(decoded, l.observation, l.action, max_payload, &why);
    p::error_code want = p::error_code::none;
    if (!same) {
      want = p::error_code::spec_mismatch;
    } else if (largest_frame(decoded) > max_payload) {
      want = p::error_code::too_many_envs;
    }
    check(got == want, "check_hello gave another verdict than the protocol's rules");
    check(same == p::describe_spec_mismatch(l.observation, l.action, decoded.observation,
                                            decoded.action)
                      .empty(),
          "describe_spec_mismatch disagrees with the spec comparison");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    byte_source in(data, size);
    run(in);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_handshake: unexpected exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
