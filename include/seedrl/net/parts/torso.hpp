#pragma once
/// \file
/// The Torso part of an agent (`actor_critic_agent`, seedrl/net/actor_critic_agent.hpp): the
/// trainable feature extractor between the preprocessed observation and the core. The user
/// builds it (it knows the observation's shape); the agent binds it to its slice of the flat
/// parameter buffer and initialises it.
///
/// A type `T` models `seedrl::Torso<T, S>` when it provides:
///   - `std::ptrdiff_t input_size() const;` scalars per input row;
///   - `std::ptrdiff_t output_size() const;` features per output row;
///   - `seedrl::feature_layout input_layout() const;` whether it reads flat vectors or C x H x W
///     images (seedrl/net/parts/preprocess.hpp);
///   - `std::size_t num_parameters() const;` and `void bind(S* params, S* grads);` its slice of
///     the agent's flat parameter and gradient buffers, laid out as the torso likes;
///   - `void init(seedrl::random_generator&);` draws its initial parameters;
///   - `void infer(const_matrix_view<S> x, matrix_view<S> y);` inference: x [N, input_size()]
///     to y [N, output_size()]. `y` may be a block of columns of a wider buffer (the agent
///     writes the torso's output straight into the core's input). Must not allocate once it has
///     seen a batch as large, and must not disturb what `forward` kept;
///   - `void forward(const_matrix_view<S> x, matrix_view<S> y);` the same for training, keeping
///     what `backward` needs; the caller keeps x and y alive and unchanged until then;
///   - `void backward(matrix_view<S> dy);` given d loss / d y of the last `forward`, ADDS the
///     parameter gradients into the bound gradient buffer. `dy` may be overwritten (scratch).
///     No input gradient: the input is data.
///   - copy construction: agents are copied (learner: one for inference, one for training);
///     the agent rebinds the copy to its own buffers.
///
/// `FeatureStack<F, S>` is the smaller contract of a convolutional stack (`nature_cnn`,
/// `impala_resnet`, `small_conv`) that returns its features in a buffer of its own;
/// `dense_torso<S, F>` (seedrl/net/parts/dense_torso.hpp) puts a dense layer on top of one and
/// so makes it a Torso. A `FeatureStack` provides `input_size()`, `output_size()`,
/// `num_parameters()`, `bind`, `init` as above and
///   - `const_matrix_view<S> infer(const_matrix_view<S> x);` features for x, in a buffer of its
///     own valid until the next `infer`;
///   - `const_matrix_view<S> forward(const_matrix_view<S> x);` the same for training, keeping x
///     (the caller keeps it alive) and what `backward` needs;
///   - `void backward(matrix_view<S> dy);` adds parameter gradients given d loss / d features.
///
/// Ready torsos: `mlp_torso` (seedrl/net/parts/mlp_torso.hpp), and `nature_cnn_torso`,
/// `impala_resnet_torso`, `small_conv_torso` (seedrl/net/parts/dense_torso.hpp).

#include <concepts>
#include <cstddef>

#include "seedrl/core/random.hpp"
#include "seedrl/detail/part_members.hpp"
#include "seedrl/net/parts/preprocess.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

namespace detail::torso_parts {
using namespace part_members;
template <class T>
concept has_input_layout = requires(const T& t) {
  { t.input_layout() } -> std::same_as<feature_layout>;
};
template <class T, class S>
concept has_infer = requires(T& t, const_matrix_view<S> x, matrix_view<S> y) {
  t.infer(x, y);
};
template <class T, class S>
concept has_forward = requires(T& t, const_matrix_view<S> x, matrix_view<S> y) {
  t.forward(x, y);
};
template <class T, class S>
concept has_backward = requires(T& t, matrix_view<S> dy) {
  t.backward(dy);
};
}  // namespace detail::torso_parts

/// A torso over scalar type S; see the file comment.
template <class T, class S>
concept Torso = detail::torso_parts::has_input_size<T> && detail::torso_parts::has_output_size<T> &&
    detail::torso_parts::has_input_layout<T> && detail::torso_parts::has_num_parameters<T> &&
    detail::torso_parts::has_bind<T, S> && detail::torso_parts::has_init<T> &&
    detail::torso_parts::has_infer<T, S> && detail::torso_parts::has_forward<T, S> &&
    detail::torso_parts::has_backward<T, S> && std::copy_constructible<T>;

/// Fails to compile, naming each missing member, unless `T` models Torso<T, S>.
template <class T, class S>
consteval bool check_torso() {
  using namespace detail::torso_parts;
  static_assert(has_input_size<T>,
                "seedrl: this type is not a seedrl::Torso: it lacks "
                "`std::ptrdiff_t input_size() const`");
  static_assert(has_output_size<T>,
                "seedrl: this type is not a seedrl::Torso: it lacks "
                "`std::ptrdiff_t output_size() const`");
  static_assert(has_input_layout<T>,
                "seedrl: this type is not a seedrl::Torso: it lacks "
                "`seedrl::feature_layout input_layout() const`");
  static_assert(has_num_parameters<T>,
                "seedrl: this type is not a seedrl::Torso: it lacks "
                "`std::size_t num_parameters() const`");
  static_assert(has_bind<T, S>,
                "seedrl: this type is not a seedrl::Torso: it lacks "
                "`void bind(S* params, S* grads)`");
  static_assert(has_init<T>,
                "seedrl: this type is not a seedrl::Torso: it lacks "
                "`void init(seedrl::random_generator&)`");
  static_assert(has_infer<T, S>,
                "seedrl: this type is not a seedrl::Torso: it lacks "
                "`void infer(const_matrix_view<S> x, matrix_view<S> y)`");
  static_assert(has_forward<T, S>,
                "seedrl: this type is not a seedrl::Torso: it lacks "
                "`void forward(const_matrix_view<S> x, matrix_view<S> y)`");
  static_assert(has_backward<T, S>,
                "seedrl: this type is not a seedrl::Torso: it lacks "
                "`void backward(matrix_view<S> dy)`");
  static_assert(std::copy_constructible<T>,
                "seedrl: this type is not a seedrl::Torso: it must be copy constructible "
                "(agents are copied for inference and training)");
  return Torso<T, S>;
}

/// A convolutional feature stack a dense layer turns into a Torso; see the file comment.
template <class F, class S>
concept FeatureStack = requires(F& f, const F& cf, const_matrix_view<S> x, matrix_view<S> dy,
                                random_generator& rng, S* p) {
  { cf.input_size() } -> std::convertible_to<std::ptrdiff_t>;
  { cf.output_size() } -> std::convertible_to<std::ptrdiff_t>;
  { cf.num_parameters() } -> std::convertible_to<std::size_t>;
  f.bind(p, p);
  f.init(rng);
  { f.infer(x) } -> std::same_as<const_matrix_view<S>>;
  { f.forward(x) } -> std::same_as<const_matrix_view<S>>;
  f.backward(dy);
};

}  // namespace seedrl
