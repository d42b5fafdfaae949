#pragma once
/// \file
/// The Preprocess part of an agent (`actor_critic_agent`, seedrl/net/actor_critic_agent.hpp):
/// what happens to an observation row before the torso sees it. It is a visible part of every
/// agent's type, so that scaling and layout changes are never a hidden default.
///
/// Observations reach the network as rows of scalars: the learner converts the wire dtype
/// (uint8, int32, float) to the network's scalar type S value for value, so 0..255 pixels
/// arrive as 0..255. Anything beyond that (scaling, channels-last to channels-first) is the
/// Preprocess part's job.
///
/// A type `P` models `seedrl::Preprocess<P, S>` when it provides:
///   - `std::ptrdiff_t input_size() const;` scalars per observation row the agent is fed;
///   - `std::ptrdiff_t output_size() const;` scalars per row handed to the torso;
///   - `seedrl::feature_layout output_layout() const;` what those rows are: flat feature
///     vectors or C x H x W images (the agent checks it against the torso's `input_layout()`);
///   - `const_matrix_view<S> apply(const_matrix_view<S> observations, std::vector<S>& workspace)
///     const;` rows [N, input_size()] to rows [N, output_size()]. It may return `observations`
///     itself (no copy) or a view of `workspace`, which it may grow; the agent keeps one
///     workspace for inference and one for training, so `apply` does not allocate in steady
///     state. Preprocessing has no parameters and no gradient (its input is data).
///
/// Ready parts: `vector_observations` (rows used as they are) and `image_observations` (pixels
/// scaled, moved to channels-first, optionally flattened into vectors).

#include <concepts>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/detail/part_members.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// What rows of features are: flat vectors, or C x H x W images (channels first).
enum class feature_layout { vector, image };

/// The name `feature_layout` goes by in messages.
constexpr const char* to_string(feature_layout l) noexcept {
  return l == feature_layout::vector ? "flat feature vectors" : "C x H x W images";
}

namespace detail::preprocess_parts {
using namespace part_members;
template <class P>
concept has_output_layout = requires(const P& p) {
  { p.output_layout() } -> std::same_as<feature_layout>;
};
template <class P, class S>
concept has_apply = requires(const P& p, const_matrix_view<S> x, std::vector<S>& ws) {
  { p.apply(x, ws) } -> std::same_as<const_matrix_view<S>>;
};
}  // namespace detail::preprocess_parts

/// An observation preprocessing part over scalar type S; see the file comment.
template <class P, class S>
concept Preprocess =
    detail::preprocess_parts::has_input_size<P> && detail::preprocess_parts::has_output_size<P> &&
    detail::preprocess_parts::has_output_layout<P> && detail::preprocess_parts::has_apply<P, S> &&
    std::copy_constructible<P>;

/// Fails to compile, naming each missing member, unless `P` models Preprocess<P, S>.
template <class P, class S>
consteval bool check_preprocess() {
  using namespace detail::preprocess_parts;
  static_assert(has_input_size<P>,
                "seedrl: this type is not a seedrl::Preprocess part: it lacks "
                "`std::ptrdiff_t input_size() const`");
  static_assert(has_output_size<P>,
                "seedrl: this type is not a seedrl::Preprocess part: it lacks "
                "`std::ptrdiff_t output_size() const`");
  static_assert(has_output_layout<P>,
                "seedrl: this type is not a seedrl::Preprocess part: it lacks "
                "`seedrl::feature_layout output_layout() const`");
  static_assert(has_apply<P, S>,
                "seedrl: this type is not a seedrl::Preprocess part: it lacks "
                "`const_matrix_view<S> apply(const_matrix_view<S> observations, "
                "std::vector<S>& workspace) const`");
  static_assert(std::copy_constructible<P>,
                "seedrl: this type is not a seedrl::Preprocess part: it must be copy "
                "constructible (agents are copied for inference and training)");
  return Preprocess<P, S>;
}

/// Rows of `size` features, handed to the torso as they are (no copy).
struct vector_observations {
  std::ptrdiff_t size = 0;

  std::ptrdiff_t input_size() const noexcept { return size; }
  std::ptrdiff_t output_size() const noexcept { return size; }
  feature_layout output_layout() const noexcept { return feature_layout::vector; }
  template <std::floating_point S>
  const_matrix_view<S> apply(const_matrix_view<S> observations, std::vector<S>&) const {
    return observations;
  }
};

/// Images of `height` x `width` x `channels` pixels, multiplied by `scale` (1/255 turns
/// 0..255 pixels into [0, 1]) and moved to channels-first if they come channels-last. With
/// `flatten`, the torso gets them as flat vectors (e.g. an MLP torso on small images);
/// otherwise as C x H x W images.
struct image_observations {
  std::ptrdiff_t height = 0;
  std::ptrdiff_t width = 0;
  std::ptrdiff_t channels = 0;
  bool channels_last = false;  ///< rows are H x W x C (else C x H x W)
  double scale = 1.0;          ///< pixels times this go to the torso
  bool flatten = false;        ///< hand the torso flat vectors instead of images

  std::ptrdiff_t input_size() const noexcept { return height * width * channels; }
  std::ptrdiff_t output_size() const noexcept { return input_size(); }
  feature_layout output_layout() const noexcept {
    return flatten ? feature_layout::vector : feature_layout::image;
  }

  /// Pixels times `scale`, as CHW rows (transposed from HWC if channels_last), in `workspace`.
  template <std::floating_point S>
  const_matrix_view<S> apply(const_matrix_view<S> observations, std::vector<S>& workspace) const {
    const std::ptrdiff_t N = observations.rows(), n = input_size();
    if (workspace.size() < static_cast<std::size_t>(N * n))
      workspace.resize(static_cast<std::size_t>(N * n));
    const auto s = static_cast<S>(scale);
    if (!channels_last || channels == 1) {
      view(workspace.data(), N, n) = observations * s;
    } else {
      const std::ptrdiff_t P = height * width;
      for (std::ptrdiff_t r = 0; r < N; ++r) {
        // Row r as [P, C] (HWC) into [C, P] (CHW).
        view(workspace.data() + r * n, channels, P) =
            cview(observations.data() + r * observations.outerStride(), P, channels).transpose() *
            s;
      }
    }
    return cview(workspace.data(), N, n);
  }
};

static_assert(Preprocess<vector_observations, float>);
static_assert(Preprocess<image_observations, double>);

}  // namespace seedrl
