#pragma once
/// \file
/// `backend_part_torso<Part, S>`: a user's torso written once, against the ComputeBackend
/// primitives, as a CPU agent's Torso. `Part<Backend, S>` is a BackendTorso
/// (seedrl/train/backend_torso.hpp): the backend trainer and inference step run it on any
/// backend, CUDA included (`cuda::agent_trainer` with a recipe naming it); this adapter runs the
/// same code on `host_backend` inside `actor_critic_agent`, so the CPU learner trains the very
/// arithmetic a GPU learner runs. Beyond BackendTorso the part provides
///   - `Part(Backend&, const Recipe&...)`: built from the adapter's recipe (its config types);
///   - `void init(seedrl::random_generator&, S* params)`: draws its initial parameters into
///     host memory (num_parameters() values), as a Torso's `init` does;
/// and optionally `seedrl::feature_layout input_layout() const` (vector by default). A part
/// with a recurrent state of its own (state_size() > 0) is refused: CPU torsos keep none.
///
/// Each copy of the adapter (agents are copied: one for inference, one for training) builds
/// its own backend and parts from the recipe, so copies share nothing. Inference and training
/// keep a part each, so `infer` never disturbs what `forward` kept.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "seedrl/backend/host_backend.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/detail/contiguous_rows.hpp"
#include "seedrl/net/parts/preprocess.hpp"
#include "seedrl/net/parts/torso.hpp"
#include "seedrl/net/tensor.hpp"
#include "seedrl/train/backend_torso.hpp"

namespace seedrl {

/// See the file comment.
template <template <class, class> class Part, std::floating_point S, class... Recipe>
class backend_part_torso {
  using backend_type = host_backend;
  using part_type = Part<backend_type, S>;
  static_assert(check_backend_torso<part_type, backend_type, S>());
  static_assert(std::constructible_from<part_type, backend_type&, const Recipe&...>,
                "seedrl::backend_part_torso: the part lacks a constructor "
                "`Part(Backend&, const Recipe&...)` for the adapter's recipe types");
  static_assert(
      requires(part_type & p, random_generator& rng, S* params) { p.init(rng, params); },
      "seedrl::backend_part_torso: the part lacks `void init(seedrl::random_generator&, "
      "S* params)` (the CPU agent draws its initial parameters)");

 public:
  /// The part of `recipe`; throws std::invalid_argument where the part does, or when it keeps
  /// a state of its own.
  explicit backend_part_torso(const Recipe&... recipe) : recipe_(recipe...) { build(); }
  backend_part_torso(const backend_part_torso& other) : recipe_(other.recipe_) { build(); }
  backend_part_torso& operator=(const backend_part_torso&) = delete;

  std::ptrdiff_t input_size() const noexcept {
    return static_cast<std::ptrdiff_t>(parts_->train.observation_size());
  }
  std::ptrdiff_t output_size() const noexcept {
    return static_cast<std::ptrdiff_t>(parts_->train.output_size());
  }
  feature_layout input_layout() const noexcept {
    if constexpr (requires(const part_type& p) {
                    { p.input_layout() } -> std::same_as<feature_layout>;
                  })
      return parts_->train.input_layout();
    else
      return feature_layout::vector;
  }
  std::size_t num_parameters() const noexcept { return parts_->train.num_parameters(); }
  /// The recipe the part was built from (e.g. for a GPU trainer's Recipe::shape_of).
  const std::tuple<Recipe...>& recipe() const noexcept { return recipe_; }

  void bind(S* params, S* grads) noexcept {
    params_ = params;
    grads_ = grads;
  }
  void init(random_generator& rng) { parts_->train.init(rng, params_); }

  void infer(const_matrix_view<S> x, matrix_view<S> y) { run(parts_->step, x, y, step_x_); }

  void forward(const_matrix_view<S> x, matrix_view<S> y) {
    x_ = run(parts_->train, x, y, parts_->x_copy);
    y_ = y.data();
    ld_ = view_stride(y);
    rows_ = view_rows(x);
  }

  /// The part's backward from dy, which shares y's row stride (the agent's core input); a
  /// dy of another stride is copied into that of y first.
  void backward(matrix_view<S> dy) {
    if (y_ == nullptr)
      throw std::logic_error("seedrl::backend_part_torso::backward: call forward first");
    const std::size_t width = parts_->train.output_size();
    const S* d = dy.data();
    if (view_stride(dy) != ld_) {
      parts_->dy_copy.assign(rows_ * ld_, S(0));
      for (std::size_t r = 0; r < rows_; ++r)
        for (std::size_t c = 0; c < width; ++c)
          parts_->dy_copy[r * ld_ + c] = dy.data()[r * view_stride(dy) + c];
      d = parts_->dy_copy.data();
    }
    parts_->train.backward(batch(x_, rows_), params_, grads_, y_, d, ld_);
  }

 private:
  /// The backend and the two parts, behind one pointer: the parts keep the backend's address.
  struct parts {
    backend_type backend;
    part_type step, train;
    std::vector<std::uint8_t> no_dones;  ///< [rows] zeros: every row is one step of its own
    std::vector<S> x_copy, dy_copy;      ///< strided inputs and gradients, made contiguous
    template <class... R>
    explicit parts(const R&... r) : backend(), step(backend, r...), train(backend, r...) {}
  };

  void build() {
    parts_ = std::apply([](const Recipe&... r) { return std::make_unique<parts>(r...); }, recipe_);
    if (parts_->train.state_size() != 0)
      throw std::invalid_argument(
          "seedrl::backend_part_torso: the part keeps a recurrent state of its own; a CPU "
          "agent's torso keeps none (put the state in the core)");
  }

  /// x's rows without gaps (the part reads observation_size() values per row).
  const S* contiguous(const_matrix_view<S> x, std::vector<S>& copy) const {
    const auto n = static_cast<std::ptrdiff_t>(parts_->train.observation_size());
    return detail::contiguous_rows(cview(x.data(), x.rows(), n, x.outerStride()), copy);
  }

  backend_torso_batch<S> batch(const S* x, std::size_t rows) {
    if (parts_->no_dones.size() < rows)
      parts_->no_dones.assign(rows, 0);
    backend_torso_batch<S> b;
    b.observations = x;
    b.dones = parts_->no_dones.data();
    b.steps = 1;
    b.B = rows;
    return b;
  }

  /// The part's forward on x into y; returns the input it read (x, or its contiguous copy).
  const S* run(part_type& part, const_matrix_view<S> x, matrix_view<S> y, std::vector<S>& copy) {
    const std::size_t rows = view_rows(x);
    if (rows > part.max_rows())
      throw std::length_error("seedrl::backend_part_torso: " + std::to_string(rows) +
                              " rows exceed what the part takes (" +
                              std::to_string(part.max_rows()) + ")");
    part.reserve(rows);
    const S* in = contiguous(x, copy);
    part.forward(batch(in, rows), params_, y.data(), view_stride(y));
    return in;
  }

  std::tuple<Recipe...> recipe_;
  std::unique_ptr<parts> parts_;
  std::vector<S> step_x_;  ///< inference's strided inputs, made contiguous
  S* params_ = nullptr;
  S* grads_ = nullptr;
  const S* x_ = nullptr;
  S* y_ = nullptr;
  std::size_t ld_ = 0, rows_ = 0;
};

}  // namespace seedrl
