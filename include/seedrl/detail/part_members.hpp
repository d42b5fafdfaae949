#pragma once
/// \file
/// The members several agent part concepts share (seedrl/net/parts/: Preprocess, Torso, Core,
/// Head), each as its own concept so that a part's `check_*()` can name exactly what is missing.

#include <concepts>
#include <cstddef>

#include "seedrl/core/random.hpp"

namespace seedrl::detail::part_members {

template <class T>
concept has_input_size = requires(const T& t) {
  { t.input_size() } -> std::convertible_to<std::ptrdiff_t>;
};
template <class T>
concept has_output_size = requires(const T& t) {
  { t.output_size() } -> std::convertible_to<std::ptrdiff_t>;
};
template <class T>
concept has_num_parameters = requires(const T& t) {
  { t.num_parameters() } -> std::convertible_to<std::size_t>;
};
template <class T, class S>
concept has_bind = requires(T& t, S* p) {
  t.bind(p, p);
};
template <class T>
concept has_init = requires(T& t, random_generator& rng) {
  t.init(rng);
};
template <class T>
concept has_options_type = requires {
  typename T::options_type;
};
/// Built by the agent from the user's options and the width that feeds it.
template <class T>
concept has_options_constructor = has_options_type<T> &&
    std::constructible_from<T, const typename T::options_type&, std::ptrdiff_t>;

}  // namespace seedrl::detail::part_members
