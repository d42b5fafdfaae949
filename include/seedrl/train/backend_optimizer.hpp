#pragma once
/// \file
/// What the backend-generic trainers (`backend_mlp_lstm_trainer`, `backend_pixel_lstm_trainer`)
/// share after their backward pass: `backend_optimizer`, Adam or RMSProp state kept on a
/// ComputeBackend and stepped with the per-element functors of
/// seedrl/train/detail/optimizer_kernels.hpp (seedrl::adam's and seedrl::rmsprop's arithmetic),
/// and `clip_gradients_on_backend`, `clip_by_global_norm`'s rule on backend gradients. It
/// includes no Eigen, so nvcc compiles it together with a CUDA backend.

#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/detail/optimizer_math.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/clip.hpp"
#include "seedrl/optim/lr_schedule.hpp"
#include "seedrl/optim/rmsprop.hpp"
#include "seedrl/runtime/training_batch.hpp"
#include "seedrl/train/detail/optimizer_kernels.hpp"

namespace seedrl {

/// Adam or RMSProp over n parameters whose arrays live on a ComputeBackend, as the CPU classes
/// `seedrl::adam<S>` and `seedrl::rmsprop<S>` would hold and apply them. Keeps a pointer to the
/// backend, which must outlive it. `owner` (e.g. "seedrl::backend_mlp_lstm_trainer", a string
/// that must outlive it too) prefixes every error message, which reads as the owner's own.
/// Nothing is chosen until `set`.
template <ComputeBackend Backend, std::floating_point S>
class backend_optimizer {
  template <class T>
  using buffer = typename Backend::template buffer<T>;

 public:
  backend_optimizer(Backend& backend, const char* owner, std::size_t n)
      : backend_(&backend), owner_(owner), n_(n) {}

  /// Adam as `seedrl::adam<S>(config)` would be after `step_count` steps; `state` is {m, v},
  /// each of n elements, or empty (or two empty arrays) for zeros, the only state allowed with
  /// step_count 0. Throws std::invalid_argument (`<owner>::set_optimizer(adam): ...`, or adam's
  /// own message on a bad config) and then changes nothing.
  void set(const adam_config& config, std::int64_t step_count,
           std::span<const std::span<const S>> state) {
    static_cast<void>(adam<S>(config));  // validates the config with adam's own messages
    const bool given = check_state("adam", step_count, state, 2, "m and v");
    load(kind::adam, config.schedule(), step_count, state, given, 2);
    adam_ = config;
  }

  /// RMSProp as `seedrl::rmsprop<S>(config)` would be after `step_count` steps; `state` is {v}
  /// or, when config.momentum > 0, {v, momentum buffer}; otherwise as the Adam overload.
  void set(const rmsprop_config& config, std::int64_t step_count,
           std::span<const std::span<const S>> state) {
    static_cast<void>(rmsprop<S>(config));  // validates the config with rmsprop's own messages
    const bool momentum = config.momentum > 0.0;
    const std::size_t count = momentum ? 2 : 1;
    const bool given = check_state(
        "rmsprop", step_count, state, count,
        momentum ? "v and the momentum buffer, since momentum > 0" : "v only, since momentum = 0");
    load(kind::rmsprop, config.schedule(), step_count, state, given, count);
    rmsprop_ = config;
  }

  /// Steps done so far (0 before set).
  std::int64_t step_count() const noexcept { return step_count_; }

  /// The arrays in the CPU class's order (adam: m, v; rmsprop: v [, momentum buffer]); each
  /// empty at step count 0, as the CPU classes hold them; {} before set.
  std::vector<std::vector<S>> state() const {
    std::vector<std::vector<S>> out;
    if (kind_ == kind::none)
      return out;
    const buffer<S>* arrays[] = {&state_a_, &state_b_};
    for (std::size_t k = 0; k < state_count_; ++k) {
      out.emplace_back(step_count_ == 0 ? 0 : n_);
      if (step_count_ != 0)
        backend_->download(static_cast<const S*>(arrays[k]->data()), std::span<S>(out.back()));
    }
    return out;
  }

  /// The learning rate the next step will use; throws std::logic_error before set.
  double learning_rate() const {
    require("learning_rate");
    return schedule_.at(step_count_);
  }

  /// Throws std::logic_error (`<owner>::<who>: no optimizer yet; ...`) before set.
  void require(const char* who) const {
    if (kind_ == kind::none) {
      throw std::logic_error(std::string(owner_) + "::" + who +
                             ": no optimizer yet; call set_optimizer first");
    }
  }

  /// One update of the n backend parameters `params` from the gradients `grads` (call after
  /// set).
  void step(S* params, const S* grads) {
    const double lr = schedule_.at(step_count_);
    if (kind_ == kind::adam) {
      const auto k = detail::make_adam_coefficients<S>(adam_.beta1, adam_.beta2, adam_.epsilon, lr,
                                                       step_count_ + 1);
      backend_->for_each(
          n_, detail::adam_step_kernel<S>{k, params, grads, state_a_.data(), state_b_.data()});
    } else {
      const auto k = detail::make_rmsprop_coefficients<S>(rmsprop_.decay, rmsprop_.momentum,
                                                          rmsprop_.epsilon, lr);
      if (state_count_ == 2) {
        backend_->for_each(n_, detail::rmsprop_momentum_step_kernel<S>{
                                   k, params, grads, state_a_.data(), state_b_.data()});
      } else {
        backend_->for_each(n_, detail::rmsprop_step_kernel<S>{k, params, grads, state_a_.data()});
      }
    }
    ++step_count_;
  }

 private:
  enum class kind { none, adam, rmsprop };

  /// Checks a state for set; returns whether it holds values (false: zeros).
  bool check_state(const char* name, std::int64_t step_count,
                   std::span<const std::span<const S>> state, std::size_t count,
                   const char* hint) const {
    const std::string who = std::string(owner_) + "::set_optimizer(" + name + "): ";
    if (step_count < 0)
      throw std::invalid_argument(who + "negative step count " + std::to_string(step_count));
    if (state.empty())
      return false;
    if (state.size() != count) {
      throw std::invalid_argument(who + "got " + std::to_string(state.size()) +
                                  " state arrays, expected " + std::to_string(count) + " (" + hint +
                                  ")");
    }
    bool all_empty = true;
    for (const auto& a : state)
      all_empty = all_empty && a.empty();
    if (all_empty)
      return false;
    if (step_count == 0) {
      throw std::invalid_argument(who +
                                  "step count 0 with a non-empty state (an optimizer holds none "
                                  "before its first step)");
    }
    for (const auto& a : state) {
      if (a.size() != n_) {
        throw std::invalid_argument(who + "a state array holds " + std::to_string(a.size()) +
                                    " values, expected " + std::to_string(n_) +
                                    " (one per parameter)");
      }
    }
    return true;
  }

  void load(kind k, const lr_schedule& schedule, std::int64_t step_count,
            std::span<const std::span<const S>> state, bool given, std::size_t count) {
    buffer<S>* arrays[] = {&state_a_, &state_b_};
    for (std::size_t i = 0; i < count; ++i) {
      if (arrays[i]->size() != n_)
        *arrays[i] = backend_->template allocate<S>(n_);  // zeros
      if (given)
        backend_->upload(state[i], arrays[i]->data());
      else
        backend_->fill(arrays[i]->data(), n_, S(0));
    }
    kind_ = k;
    schedule_ = schedule;
    step_count_ = step_count;
    state_count_ = count;
  }

  Backend* backend_;
  const char* owner_;
  std::size_t n_;
  kind kind_ = kind::none;
  adam_config adam_;
  rmsprop_config rmsprop_;
  lr_schedule schedule_;
  std::int64_t step_count_ = 0;
  std::size_t state_count_ = 0;
  buffer<S> state_a_, state_b_;  ///< adam: m, v; rmsprop: v, momentum buffer
};

/// `clip_by_global_norm` on the n backend gradients `grads`: norm = sqrt(sum g^2) in double,
/// scaled by coef = max_grad_norm / (norm + clip_norm_epsilon) when coef < 1. Sets
/// `r.grad_norm`; returns whether to apply the update. A non-finite sum (a NaN or infinite
/// gradient, or, in double only, squares that overflow) is rare, so the CPU function decides
/// on a host copy, with its exact semantics and message: when it refuses, `r.applied` is false,
/// `r.skipped` says why, and this returns false.
template <ComputeBackend Backend, std::floating_point S>
bool clip_gradients_on_backend(Backend& be, S* grads, std::size_t n, double max_grad_norm,
                               train_step_result& r) {
  const double sum = be.sum_of_squares(static_cast<const S*>(grads), n);
  if (std::isfinite(sum)) {
    const double norm = std::sqrt(sum);
    const double coef = max_grad_norm / (norm + clip_norm_epsilon);
    if (coef < 1.0)
      be.for_each(n, detail::scale_kernel<S>{grads, static_cast<S>(coef)});
    r.grad_norm = norm;
    return true;
  }
  std::vector<S> host(n);
  be.download(static_cast<const S*>(grads), std::span<S>(host));
  try {
    r.grad_norm = clip_by_global_norm<S>(std::span<S>(host), max_grad_norm);
  } catch (const std::domain_error& e) {
    r.applied = false;
    r.skipped = e.what();
    return false;
  }
  be.upload(std::span<const S>(host), grads);
  return true;
}

}  // namespace seedrl
