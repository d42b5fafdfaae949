#pragma once
/// \file
/// Descriptions of observations and actions: element type, shape, discrete or continuous.
/// Specs are plain values so that they can be compared, sent in a handshake and checked at
/// start-up; none of them allocates.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>

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
/// continuous actions are float32 vectors of `shape` with every element in [low, high].
struct action_spec {
  action_kind kind = action_kind::discrete;
  std::int32_t num_actions = 0;  ///< discrete only
  tensor_shape shape;            ///< continuous only; empty for discrete
  double low = 0.0;              ///< continuous only
  double high = 0.0;             ///< continuous only

  /// A discrete action space of `n` actions (n >= 1).
  static constexpr action_spec discrete(std::int32_t n) {
    if (n < 1) {
      throw std::invalid_argument("seedrl::action_spec::discrete: needs at least one action");
    }
    action_spec s;
    s.kind = action_kind::discrete;
    s.num_actions = n;
    return s;
  }

  /// A continuous action space of the given shape, bounded by [low, high] per element.
  static constexpr action_spec continuous(tensor_shape shape, double low, double high) {
    if (!(low < high)) {
      throw std::invalid_argument("seedrl::action_spec::continuous: needs low < high");
    }
    action_spec s;
    s.kind = action_kind::continuous;
    s.shape = shape;
    s.low = low;
    s.high = high;
    return s;
  }

  constexpr bool is_discrete() const noexcept { return kind == action_kind::discrete; }
  friend constexpr bool operator==(const action_spec&, const action_spec&) = default;
};

}  // namespace seedrl
