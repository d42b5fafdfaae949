#pragma once
/// \file
/// Descriptions of observations and actions: element type, shape, discrete or continuous.
/// Specs are plain values so that they can be compared, sent in a handshake and checked at
/// start-up; only an action spec with per-element bounds allocates (its two bound vectors).

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace seedrl {

/// Element type of a tensor as it travels between actor and learner. The numeric values are
/// part of the wire protocol: never renumber them.
enum class dtype : std::uint8_t {
  uint8 = 1,
  int32 = 2,
  float32 = 3,
  float64 = 4,
};

/// Bytes taken by one element of `t`.
constexpr std::size_t size_of(dtype t) noexcept {
  switch (t) {
    case dtype::uint8:
      return 1;
    case dtype::int32:
      return 4;
    case dtype::float32:
      return 4;
    case dtype::float64:
      return 8;
  }
  return 0;
}

/// A readable name, for error messages and logs.
constexpr const char* to_string(dtype t) noexcept {
  switch (t) {
    case dtype::uint8:
      return "uint8";
    case dtype::int32:
      return "int32";
    case dtype::float32:
      return "float32";
    case dtype::float64:
      return "float64";
  }
  return "unknown";
}

/// The `dtype` that describes the C++ type `T`; a compile error for types with no dtype.
template <class T>
constexpr dtype dtype_of() noexcept {
  if constexpr (std::is_same_v<T, std::uint8_t>) {
    return dtype::uint8;
  } else if constexpr (std::is_same_v<T, std::int32_t>) {
    return dtype::int32;
  } else if constexpr (std::is_same_v<T, float>) {
    return dtype::float32;
  } else if constexpr (std::is_same_v<T, double>) {
    return dtype::float64;
  } else {
    static_assert(std::is_same_v<T, void>,
                  "seedrl: observation and action elements must be std::uint8_t, std::int32_t, "
                  "float or double");
    return dtype::float32;
  }
}

/// A tensor shape of at most `max_rank` dimensions, stored inline (no allocation).
class tensor_shape {
 public:
  static constexpr std::size_t max_rank = 6;

  constexpr tensor_shape() noexcept = default;

  /// Builds a shape from its dimensions, outermost first; every dimension must be positive.
  constexpr tensor_shape(std::initializer_list<std::int64_t> dims) {
    if (dims.size() > max_rank) {
      throw std::invalid_argument("seedrl::tensor_shape: rank exceeds tensor_shape::max_rank (6)");
    }
    for (std::int64_t d : dims) {
      push_back(d);
    }
  }

  /// Appends a dimension; throws std::invalid_argument on a non-positive size or a full shape.
  constexpr void push_back(std::int64_t d) {
    if (d <= 0) {
      throw std::invalid_argument("seedrl::tensor_shape: dimensions must be positive");
    }
    if (rank_ == max_rank) {
      throw std::invalid_argument("seedrl::tensor_shape: rank exceeds tensor_shape::max_rank (6)");
    }
    dims_[rank_++] = d;
  }

  constexpr std::size_t rank() const noexcept { return rank_; }
  constexpr std::int64_t operator[](std::size_t i) const noexcept { return dims_[i]; }
  constexpr const std::int64_t* begin() const noexcept { return dims_.data(); }
  constexpr const std::int64_t* end() const noexcept { return dims_.data() + rank_; }

  /// Number of elements; 1 for a scalar (rank 0).
  constexpr std::int64_t num_elements() const noexcept {
    std::int64_t n = 1;
    for (std::size_t i = 0; i < rank_; ++i) {
      n *= dims_[i];
    }
    return n;
  }

  friend constexpr bool operator==(const tensor_shape& a, const tensor_shape& b) noexcept {
    return a.rank_ == b.rank_ && std::equal(a.begin(), a.end(), b.begin());
  }

  /// "[84, 84, 1]", for messages.
  std::string to_string() const {
    std::string s = "[";
    for (std::size_t i = 0; i < rank_; ++i) {
      s += (i ? ", " : "") + std::to_string(dims_[i]);
    }
    return s + "]";
  }

 private:
  std::array<std::int64_t, max_rank> dims_{};
  std::size_t rank_ = 0;
};

/// What one observation looks like: element type and shape.
struct observation_spec {
  dtype type = dtype::float32;
  tensor_shape shape;

  constexpr std::int64_t num_elements() const noexcept { return shape.num_elements(); }
  constexpr std::size_t num_bytes() const noexcept {
    return static_cast<std::size_t>(num_elements()) * size_of(type);
  }
  friend constexpr bool operator==(const observation_spec&, const observation_spec&) = default;
};

/// Whether actions are indices into a finite set or real vectors.
enum class action_kind : std::uint8_t { discrete = 1, continuous = 2 };

/// What one action looks like. Discrete actions are a single int32 in [0, num_actions);
/// continuous actions are float32 vectors of `shape` with element i in [low_at(i), high_at(i)].
///
/// Bounds are either one pair broadcast over every element (`continuous(shape, low, high)`,
/// stored inline, no allocation) or one pair per element (`continuous(shape, lows, highs)`,
/// as gymnasium's Box has them; two vectors). A bound may be -inf or +inf: that side is
/// unbounded, so there is nothing to clip to and every finite value passes it. NaN never is a
/// bound. Two specs are equal when kind, count, shape and every element's bounds are equal,
/// whichever way the bounds are stored.
struct action_spec {
  action_kind kind = action_kind::discrete;
  std::int32_t num_actions = 0;  ///< discrete only
  tensor_shape shape;            ///< continuous only; empty for discrete

  /// A discrete action space of `n` actions (n >= 1).
  static action_spec discrete(std::int32_t n) {
    if (n < 1) {
      throw std::invalid_argument("seedrl::action_spec::discrete: needs at least one action");
    }
    action_spec s;
    s.kind = action_kind::discrete;
    s.num_actions = n;
    return s;
  }

  /// A continuous action space of the given shape, every element bounded by [low, high].
  /// Throws std::invalid_argument on a NaN bound or unless low < high (infinite bounds pass).
  static action_spec continuous(tensor_shape shape, double low, double high) {
    check_pair(low, high, "seedrl::action_spec::continuous: ");
    action_spec s;
    s.kind = action_kind::continuous;
    s.shape = shape;
    s.low_ = low;
    s.high_ = high;
    return s;
  }

  /// A continuous action space with per-element bounds: element i (row-major over `shape`) in
  /// [lows[i], highs[i]]. Both spans need shape.num_elements() entries; no bound may be NaN and
  /// lows[i] < highs[i] for every i (infinite bounds pass). Throws std::invalid_argument
  /// naming the first bad element.
  static action_spec continuous(tensor_shape shape, std::span<const double> lows,
                                std::span<const double> highs) {
    // Counted with saturation: a shape no bounds list can match must not overflow int64.
    std::uint64_t n = 1;
    for (const std::int64_t d : shape) {
      const auto u = static_cast<std::uint64_t>(d);
      n = n > std::numeric_limits<std::uint64_t>::max() / u
              ? std::numeric_limits<std::uint64_t>::max()
              : n * u;
    }
    if (lows.size() != n || highs.size() != n) {
      throw std::invalid_argument("seedrl::action_spec::continuous: shape " + shape.to_string() +
                                  " has " + std::to_string(n) + " elements, got " +
                                  std::to_string(lows.size()) + " low and " +
                                  std::to_string(highs.size()) + " high bounds");
    }
    for (std::size_t i = 0; i < lows.size(); ++i) {
      check_pair(lows[i], highs[i],
                 "seedrl::action_spec::continuous: element " + std::to_string(i) + ": ");
    }
    action_spec s;
    s.kind = action_kind::continuous;
    s.shape = shape;
    s.lows_.assign(lows.begin(), lows.end());
    s.highs_.assign(highs.begin(), highs.end());
    return s;
  }
  /// Overload for braced lists and vectors: `continuous({2}, {-1.0, -2.0}, {1.0, 2.0})`.
  static action_spec continuous(tensor_shape shape, const std::vector<double>& lows,
                                const std::vector<double>& highs) {
    return continuous(shape, std::span<const double>(lows), std::span<const double>(highs));
  }

  constexpr bool is_discrete() const noexcept { return kind == action_kind::discrete; }

  /// Whether the bounds are one pair per element (false: one pair for all, or discrete).
  bool per_element_bounds() const noexcept { return !lows_.empty(); }
  /// Stored bounds pairs: shape.num_elements() when per element, else 1.
  std::size_t bound_pairs() const noexcept { return lows_.empty() ? 1 : lows_.size(); }
  /// Lower bound of element i (row-major); -inf when unbounded below. Continuous only, and
  /// i < shape.num_elements().
  double low_at(std::size_t i) const noexcept { return lows_.empty() ? low_ : lows_[i]; }
  /// Upper bound of element i (row-major); +inf when unbounded above.
  double high_at(std::size_t i) const noexcept { return highs_.empty() ? high_ : highs_[i]; }
  /// Whether every element has the same bounds (then low_at(0)/high_at(0) are all of them).
  /// Compared bit for bit, so that one pair can stand for all of them exactly (-0.0 included).
  bool uniform_bounds() const noexcept {
    const auto bits = [](double v) { return std::bit_cast<std::uint64_t>(v); };
    for (std::size_t i = 0; i < lows_.size(); ++i) {
      if (bits(lows_[i]) != bits(lows_[0]) || bits(highs_[i]) != bits(highs_[0])) {
        return false;
      }
    }
    return true;
  }
  /// "[-1, 1]" for uniform bounds, "[[-1, 1], [-2, inf]]" per element, for messages.
  std::string bounds_to_string() const {
    // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) on "[" + std::string.
    const auto pair = [](double lo, double hi) {
      std::string p(1, '[');
      p += num(lo);
      p += ", ";
      p += num(hi);
      p += ']';
      return p;
    };
    if (uniform_bounds()) {
      return pair(low_at(0), high_at(0));
    }
    std::string s = "[";
    for (std::size_t i = 0; i < lows_.size(); ++i) {
      if (i > 0)
        s += ", ";
      s += pair(lows_[i], highs_[i]);
    }
    return s + "]";
  }

  /// The whole space, for messages: "discrete (2 actions)", "continuous [6] in [-1, 1]", or
  /// "continuous [2] with per-element bounds".
  std::string to_string() const {
    // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) on "..." + std::string.
    std::string d;
    if (kind == action_kind::discrete) {
      d = "discrete (";
      d += std::to_string(num_actions);
      d += " actions)";
    } else if (kind == action_kind::continuous) {
      d = "continuous ";
      d += shape.to_string();
      if (uniform_bounds()) {
        d += " in ";
        d += bounds_to_string();
      } else {
        d += " with per-element bounds";
      }
    } else {
      d = "unknown";
    }
    return d;
  }

  friend bool operator==(const action_spec& a, const action_spec& b) noexcept {
    if (a.kind != b.kind || a.num_actions != b.num_actions || !(a.shape == b.shape)) {
      return false;
    }
    // Both with one pair: compare it, not every one of up to 2^28 elements.
    if (a.kind != action_kind::continuous || (!a.per_element_bounds() && !b.per_element_bounds())) {
      return a.low_ == b.low_ && a.high_ == b.high_;
    }
    const auto n = static_cast<std::size_t>(a.shape.num_elements());
    if ((a.per_element_bounds() && a.lows_.size() != n) ||
        (b.per_element_bounds() && b.lows_.size() != n)) {
      // Only after `shape` was reassigned behind the factory's back: no element-wise meaning.
      return a.low_ == b.low_ && a.high_ == b.high_ && a.lows_ == b.lows_ && a.highs_ == b.highs_;
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (a.low_at(i) != b.low_at(i) || a.high_at(i) != b.high_at(i)) {
        return false;
      }
    }
    return true;
  }

 private:
  static void check_pair(double low, double high, const std::string& where) {
    if (std::isnan(low) || std::isnan(high)) {
      throw std::invalid_argument(where + "a bound is NaN");
    }
    if (!(low < high)) {
      throw std::invalid_argument(where + "needs low < high, got [" + num(low) + ", " + num(high) +
                                  "]");
    }
  }
  // Shortest text that reads back to the same double; "inf", "-inf" as such.
  static std::string num(double v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
  }

  double low_ = 0.0;  // the broadcast pair, used while lows_/highs_ are empty
  double high_ = 0.0;
  std::vector<double> lows_;  // per-element bounds, shape.num_elements() each, or empty
  std::vector<double> highs_;
};

}  // namespace seedrl
