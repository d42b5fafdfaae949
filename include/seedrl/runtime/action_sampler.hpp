#pragma once
/// \file
/// The ActionSampler plug point: how the learner's inference loop turns a batch of policy
/// outputs into the actions it sends and the behaviour log-probabilities it records for the
/// loss. The learner takes it as a type parameter so that other policies (e.g. Gaussian ones)
/// plug in without a copy of the inference loop.
///
/// A type `P` models `seedrl::ActionSampler<P, S>` for scalar `S` when it provides:
///   - `void check(const seedrl::action_spec&) const;` throws std::invalid_argument, saying
///     why, for an action space it cannot serve (the learner calls it at construction);
///   - `std::size_t outputs_per_row(const seedrl::action_spec&) const;` how many policy
///     outputs the network writes per environment (the logits buffer's row width);
///   - `void sample(std::span<const S> outputs, std::size_t rows, std::size_t width,
///      seedrl::random_generator& rng, seedrl::action_buffers<S> actions,
///      std::span<S> log_probs) const;` one action per row of `outputs` ([rows, width]) and
///     its log-probability under the same distribution; must not allocate (it runs per batch).
///
/// Discrete actions are `std::int32_t` indices (`action_buffers::discrete`); continuous ones
/// are D values per row in the arrays beside them, chosen at run time by the action spec's
/// kind, so the discrete path is the same with or without continuous support.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "seedrl/core/random.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/net/categorical.hpp"
#include "seedrl/net/diag_gaussian.hpp"

namespace seedrl {

/// Action elements per environment that travel as floats: D for a continuous spec, 0 for a
/// discrete one (whose actions are one int32 each).
inline std::size_t continuous_action_size(const action_spec& spec) {
  return spec.is_discrete() ? 0 : static_cast<std::size_t>(spec.shape.num_elements());
}

/// Where a sampler writes one batch's actions, `rows` of them. A discrete sampler writes
/// `discrete`; a continuous one writes `env_actions` and `raw_actions` (`dim` = D values per
/// row each) and reads the bounds. The arrays of the other kind are empty.
template <std::floating_point S>
struct action_buffers {
  std::span<std::int32_t> discrete;  ///< [rows] action indices (discrete spaces)
  std::span<S> env_actions;          ///< [rows * dim] what the env gets, within the bounds
  std::span<S> raw_actions;          ///< [rows * dim] the sample the loss evaluates (pre-squash u)
  std::span<const S> low;            ///< [dim] per-element lower bounds
  std::span<const S> high;           ///< [dim] per-element upper bounds
  std::size_t dim = 0;               ///< D; 0 for discrete spaces
};

/// A way to choose actions from policy outputs; see the file comment.
template <class P, class S>
concept ActionSampler = std::floating_point<S> && std::copy_constructible<P> &&
    requires(const P& p, const action_spec& spec, std::span<const S> outputs, std::size_t n,
             random_generator& rng, action_buffers<S> actions, std::span<S> log_probs) {
  p.check(spec);
  { p.outputs_per_row(spec) } -> std::convertible_to<std::size_t>;
  p.sample(outputs, n, n, rng, actions, log_probs);
};

/// How a policy's outputs become actions.
enum class action_selection : std::uint8_t {
  greedy,  ///< the most probable action (evaluation)
  sample,  ///< a draw from the policy's distribution (what actors do in training)
};

/// Draws from the categorical distribution over each row of logits (the default; SEED's
/// discrete policies), or takes its most probable action when `selection` is greedy (a
/// learner that evaluates a policy). The log-probability is the chosen action's under the
/// distribution either way.
struct categorical_sampler {
  action_selection selection = action_selection::sample;

  void check(const action_spec& spec) const {
    if (!spec.is_discrete()) {
      throw std::invalid_argument(
          "seedrl::categorical_sampler: serves discrete action spaces only, the action spec is "
          "continuous of shape " +
          spec.shape.to_string() + "; use seedrl::gaussian_sampler for it");
    }
  }

  std::size_t outputs_per_row(const action_spec& spec) const {
    return static_cast<std::size_t>(spec.num_actions);
  }

  template <std::floating_point S>
  void sample(std::span<const S> logits, std::size_t rows, std::size_t num_actions,
              random_generator& rng, action_buffers<S> out, std::span<S> log_probs) const {
    const std::span<std::int32_t> actions = out.discrete;
    if (selection == action_selection::greedy)
      argmax_actions<S>(logits, rows, num_actions, actions);
    else
      sample_actions<S>(logits, rows, num_actions, rng, actions);
    categorical_log_probs<S>(logits, rows, num_actions, std::span<const std::int32_t>(actions),
                             log_probs);
  }
};

/// R2D2's exploration (Horgan et al.'s Ape-X schedule, as SEED's R2D2): each environment acts
/// greedily on the policy outputs (a dueling head's advantages, whose argmax is Q's:
/// seedrl/algo/r2d2_loss.hpp) except with probability epsilon_i, when it takes a uniform action.
/// Explorer i of N has epsilon_i = base^(1 + alpha i / (N - 1)) (base 0.4, alpha 7: from 0.4 down
/// to 0.4^8 = 0.00066); N = 1 gives base. The recorded log-probability is the epsilon-greedy
/// policy's. With `selection` greedy (evaluation) every row acts greedily.
///
/// The learner's inference loop gives each row its environment's explorer index (stable across
/// an actor's reconnects: seedrl/runtime/inference_loop.hpp) through the overload that takes
/// them; the other spreads the rows of a batch over the schedule by position.
struct epsilon_greedy_sampler {
  double base = 0.4;
  double alpha = 7.0;
  std::size_t explorers = 1;  ///< N; an index i >= N uses i mod N
  action_selection selection = action_selection::sample;

  void check(const action_spec& spec) const {
    if (!spec.is_discrete()) {
      throw std::invalid_argument(
          "seedrl::epsilon_greedy_sampler: serves discrete action spaces only (Q values per "
          "action), the action spec is continuous of shape " +
          spec.shape.to_string());
    }
    if (!(base >= 0.0 && base <= 1.0) || !(alpha >= 0.0) || !std::isfinite(alpha) ||
        explorers == 0) {
      throw std::invalid_argument(
          "seedrl::epsilon_greedy_sampler: needs base in [0, 1], a finite alpha >= 0 and at "
          "least one explorer, got base " +
          std::to_string(base) + ", alpha " + std::to_string(alpha) + ", " +
          std::to_string(explorers) + " explorers");
    }
  }

  std::size_t outputs_per_row(const action_spec& spec) const {
    return static_cast<std::size_t>(spec.num_actions);
  }

  /// epsilon of explorer `i`.
  double epsilon(std::size_t i) const {
    const std::size_t n = explorers == 0 ? 1 : explorers;
    if (n == 1)
      return base;
    return std::pow(base, 1.0 + alpha * static_cast<double>(i % n) / static_cast<double>(n - 1));
  }

  /// Row r is explorer explorer_of_row[r].
  template <std::floating_point S>
  void sample(std::span<const S> outputs, std::size_t rows, std::size_t num_actions,
              random_generator& rng, action_buffers<S> out, std::span<S> log_probs,
              std::span<const std::uint32_t> explorer_of_row) const {
    const std::span<std::int32_t> actions = out.discrete;
    argmax_actions<S>(outputs, rows, num_actions, actions);
    const double A = static_cast<double>(num_actions);
    for (std::size_t r = 0; r < rows; ++r) {
      const double eps = selection == action_selection::greedy ? 0.0 : epsilon(explorer_of_row[r]);
      const std::int32_t greedy = actions[r];
      if (eps > 0.0 && rng.uniform() < eps) {
        const auto a = static_cast<std::size_t>(rng.uniform() * A);
        actions[r] = static_cast<std::int32_t>(a < num_actions ? a : num_actions - 1);
      }
      const double p = eps / A + (actions[r] == greedy ? 1.0 - eps : 0.0);
      log_probs[r] = static_cast<S>(std::log(p));
    }
  }

  /// Without explorer indices: row r is explorer r.
  template <std::floating_point S>
  void sample(std::span<const S> outputs, std::size_t rows, std::size_t num_actions,
              random_generator& rng, action_buffers<S> out, std::span<S> log_probs) const {
    for (std::size_t r = 0; r < rows; ++r) {
      const std::uint32_t i = static_cast<std::uint32_t>(r);
      sample(outputs.subspan(r * num_actions, num_actions), 1, num_actions, rng,
             {out.discrete.subspan(r, 1), {}, {}, {}, {}, 0}, log_probs.subspan(r, 1),
             std::span<const std::uint32_t>(&i, 1));
    }
  }
};

/// Whether a sampler takes each row's explorer index (epsilon_greedy_sampler).
template <class P, class S>
concept ExplorerSampler = requires(const P& p, std::span<const S> outputs, std::size_t n,
                                   random_generator& rng, action_buffers<S> actions,
                                   std::span<S> log_probs, std::span<const std::uint32_t> rows) {
  p.sample(outputs, n, n, rng, actions, log_probs, rows);
};

/// How a Gaussian sample is brought within the action bounds (seedrl/net/diag_gaussian.hpp).
enum class bounds_handling : std::uint8_t {
  squash,  ///< tanh squashing (the log-prob carries its correction); needs finite bounds
  clip,    ///< clipping; the log-prob is the unclipped sample's
};

/// Samples each row's diagonal Gaussian (the row holds D means then D log-stds) with the
/// learner's seeded generator, or takes its mean when `selection` is greedy (evaluation).
/// The env gets the sample squashed or clipped into the bounds; the loss gets the pre-squash
/// sample u and its log-prob (diag_gaussian.hpp says why u and not the action).
struct gaussian_sampler {
  bounds_handling bounds = bounds_handling::squash;
  action_selection selection = action_selection::sample;

  void check(const action_spec& spec) const {
    if (spec.is_discrete()) {
      throw std::invalid_argument(
          "seedrl::gaussian_sampler: serves continuous action spaces only, the action spec is "
          "discrete with " +
          std::to_string(spec.num_actions) + " actions; use seedrl::categorical_sampler for it");
    }
    for (std::size_t i = 0; i < continuous_action_size(spec); ++i) {
      const double lo = spec.low_at(i), hi = spec.high_at(i);
      if (std::isnan(lo) || std::isnan(hi) || !(lo < hi) ||
          (bounds == bounds_handling::squash && (!std::isfinite(lo) || !std::isfinite(hi)))) {
        throw std::invalid_argument(
            "seedrl::gaussian_sampler: action element " + std::to_string(i) + " has bounds [" +
            std::to_string(lo) + ", " + std::to_string(hi) + "]; they need low < high" +
            (bounds == bounds_handling::squash ? ", both finite for tanh squashing" : ""));
      }
    }
  }

  /// D means then D log-stds (a state-dependent log-std).
  std::size_t outputs_per_row(const action_spec& spec) const {
    return 2 * continuous_action_size(spec);
  }

  template <std::floating_point S>
  void sample(std::span<const S> outputs, std::size_t rows, std::size_t width,
              random_generator& rng, action_buffers<S> out, std::span<S> log_probs) const {
    // The row functions, not the batch helpers: these check the bounds per call, building
    // strings, and a sampler must not allocate; check() has vetted the bounds.
    const std::size_t D = out.dim;
    const int d = static_cast<int>(D);
    const bool squashing = bounds == bounds_handling::squash;
    const S* low = out.low.data();
    const S* high = out.high.data();
    for (std::size_t r = 0; r < rows; ++r) {
      const S* mean = outputs.data() + r * width;
      const S* log_std = mean + D;
      S* u = out.raw_actions.data() + r * D;
      S* a = out.env_actions.data() + r * D;
      if (selection == action_selection::greedy) {
        std::copy_n(mean, D, u);
      } else {
        for (std::size_t i = 0; i < D; ++i)
          u[i] = static_cast<S>(rng.normal());
        diag_gaussian_sample(mean, log_std, u, d, u);  // the noise goes through u in place
      }
      if (squashing) {
        tanh_squash(u, low, high, d, a);
        log_probs[r] = squashed_diag_gaussian_log_prob(mean, log_std, u, low, high, d);
      } else {
        clip_to_bounds(u, low, high, d, a);
        log_probs[r] = diag_gaussian_log_prob(mean, log_std, u, d);
      }
    }
  }
};

/// The sampler the action spec calls for, chosen at run time: categorical_sampler for a
/// discrete spec, gaussian_sampler for a continuous one, or, with `epsilon_greedy` set (a
/// value-based loss's, R2D2), epsilon_greedy_sampler for a discrete one. A program that serves
/// environments of either kind (seedrl_gym, app::program) compiles one learner with it instead
/// of two. The samplers share `selection`; `bounds` is the Gaussian's.
struct spec_sampler {
  action_selection selection = action_selection::sample;
  bounds_handling bounds = bounds_handling::squash;
  std::optional<epsilon_greedy_sampler> epsilon_greedy = std::nullopt;

  void check(const action_spec& spec) const {
    if (epsilon_greedy)
      epsilon_greedy->check(spec);
    else if (!spec.is_discrete())
      gaussian().check(spec);
  }

  std::size_t outputs_per_row(const action_spec& spec) const {
    return spec.is_discrete() ? categorical().outputs_per_row(spec)
                              : gaussian().outputs_per_row(spec);
  }

  /// Whether a discrete draw is the policy's categorical one (an engine that samples on its
  /// device may then take it over): not with epsilon_greedy.
  bool samples_categorically() const noexcept { return !epsilon_greedy; }

  /// A continuous batch is one with `out.dim` > 0 (the learner's buffers say which); row r is
  /// explorer explorer_of_row[r] for epsilon_greedy.
  template <std::floating_point S>
  void sample(std::span<const S> outputs, std::size_t rows, std::size_t width,
              random_generator& rng, action_buffers<S> out, std::span<S> log_probs,
              std::span<const std::uint32_t> explorer_of_row) const {
    if (out.dim == 0 && epsilon_greedy)
      exploring().sample(outputs, rows, width, rng, out, log_probs, explorer_of_row);
    else
      sample(outputs, rows, width, rng, out, log_probs);
  }

  template <std::floating_point S>
  void sample(std::span<const S> outputs, std::size_t rows, std::size_t width,
              random_generator& rng, action_buffers<S> out, std::span<S> log_probs) const {
    if (out.dim == 0 && epsilon_greedy) {
      exploring().sample(outputs, rows, width, rng, out, log_probs);
    } else if (out.dim == 0) {
      categorical().sample(outputs, rows, width, rng, out, log_probs);
    } else {
      gaussian().sample(outputs, rows, width, rng, out, log_probs);
    }
  }

 private:
  categorical_sampler categorical() const { return {selection}; }
  gaussian_sampler gaussian() const { return {bounds, selection}; }
  epsilon_greedy_sampler exploring() const {
    epsilon_greedy_sampler e = *epsilon_greedy;
    e.selection = selection;
    return e;
  }
};

static_assert(ActionSampler<categorical_sampler, float>);
static_assert(ActionSampler<categorical_sampler, double>);
static_assert(ActionSampler<gaussian_sampler, float>);
static_assert(ActionSampler<gaussian_sampler, double>);
static_assert(ActionSampler<spec_sampler, float>);
static_assert(ActionSampler<epsilon_greedy_sampler, float>);
static_assert(ExplorerSampler<epsilon_greedy_sampler, float>);
static_assert(ExplorerSampler<spec_sampler, float>);

}  // namespace seedrl
