#pragma once
/// \file
/// The conv stack plug point of the pixel agents: `backend_conv_stack<Backend, S, Config>::type`
/// is the convolutional stack a torso config names, on a ComputeBackend.
/// `backend_pixel_torso` (seedrl/train/pixel_torso.hpp) runs it under its frame stacking and
/// dense layer, so `pixel_lstm_agent` (the CPU), the backend trainers and the CUDA engine all run
/// the one stack. The library's: `nature_cnn_config`, `impala_resnet_config`,
/// `small_conv_torso_config` (net/detail/*_torso.hpp).
///
/// A stack of your own is a class template over (Backend, S), written against the backend's
/// primitives (`conv2d_forward` / `conv2d_backward`, `for_each`, `gemm`), and a specialisation
///
///     template <class Backend, class S>
///     struct seedrl::backend_conv_stack<Backend, S, my_config> { using type = my_stack<Backend,
///     S>; };
///
/// beside it. The stack provides:
///   - `my_stack(Backend&, const my_config&, std::size_t channels, std::size_t height,
///     std::size_t width, const std::string& who)`: for CHW images; throws
///     std::invalid_argument (its message starting with `who`) for a shape it cannot take;
///   - `num_parameters()`, `output_size()` (features per image), `max_batch()` (the most images
///     its int-indexed tensors allow);
///   - `void init(seedrl::random_generator&, S* host_params) const`: its initial draws;
///   - `void reserve(std::size_t N)`, `const S* forward(const S* params, const S* input,
///     std::size_t N)` returning the features [N, output_size()] and keeping what backward needs,
///     `void backward(const S* params, S* grads, const S* d_features, std::size_t N)` adding the
///     parameter gradients into grads;
///   - `void reserve_inference(std::size_t N)` and `const S* infer(const S* params,
///     const S* input, std::size_t N)`: the features without what a backward needs.
/// The config type names the agent (`static constexpr std::string_view agent_name`), writes
/// its checkpoint fields (`std::string describe_fields() const`, keys in `static constexpr
/// std::array<std::string_view, n> field_keys`), as `nature_cnn_config` does.

namespace seedrl {

/// Which stack runs a torso config; specialised next to each stack (see the file comment).
template <class Backend, class S, class TorsoConfig>
struct backend_conv_stack;

}  // namespace seedrl
