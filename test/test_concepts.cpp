// Compile-time checks of the plug-point concepts: each has a type that models it and types
// that miss one requirement each. The static_asserts are the test: building seedrl_tests fails
// if any of them is wrong. (A run-time repeat of them could never fail, so there is none.)
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "seedrl/algo/loss.hpp"
#include "seedrl/env/cartpole.hpp"
#include "seedrl/env/environment.hpp"
#include "seedrl/net/network.hpp"
#include "seedrl/optim/optimizer.hpp"
#include "seedrl/transport/transport.hpp"

namespace {

// --- Environment -------------------------------------------------------------------------
struct env_ok {
  using observation_type = std::uint8_t;
  using action_type = std::int32_t;
  seedrl::observation_spec observation_spec() const { return {seedrl::dtype::uint8, {84, 84, 1}}; }
  seedrl::action_spec action_spec() const { return seedrl::action_spec::discrete(6); }
  void seed(std::uint64_t) {}
  void reset(std::span<std::uint8_t>) {}
  seedrl::step_result step(std::int32_t, std::span<std::uint8_t>) { return {}; }
};
struct env_no_step : env_ok {
  void step() = delete;  // hides env_ok::step
};
struct env_step_wrong_result : env_ok {
  double step(std::int32_t, std::span<std::uint8_t>) { return 0.0; }
};
struct env_no_observation_type {
  using action_type = std::int32_t;
};
struct env_no_specs {
  using observation_type = float;
  using action_type = std::int32_t;
  void seed(std::uint64_t) {}
  void reset(std::span<float>) {}
  seedrl::step_result step(std::int32_t, std::span<float>) { return {}; }
};
struct env_not_movable : env_ok {
  env_not_movable() = default;
  env_not_movable(env_not_movable&&) = delete;
};

static_assert(seedrl::Environment<env_ok>);
static_assert(seedrl::Environment<seedrl::cartpole>);
static_assert(!seedrl::Environment<env_no_step>);
static_assert(!seedrl::Environment<env_step_wrong_result>);
static_assert(!seedrl::Environment<env_no_observation_type>);
static_assert(!seedrl::Environment<env_no_specs>);
static_assert(!seedrl::Environment<env_not_movable>);
static_assert(!seedrl::Environment<int>);
static_assert(seedrl::has_discrete_actions<seedrl::cartpole>);

// --- Network -----------------------------------------------------------------------------
struct net_ok {
  using scalar_type = float;
  struct state_type {};
  struct inference_input {};
  struct inference_output {};
  struct unroll_input {};
  struct unroll_output {};
  struct output_gradient {};
  std::vector<float> params, grads;
  state_type initial_state(std::size_t) const { return {}; }
  void infer(const inference_input&, state_type&, inference_output&) {}
  void forward_unroll(const unroll_input&, unroll_output&) {}
  void backward_unroll(const output_gradient&) {}
  std::span<float> parameters() { return params; }
  std::span<float> gradients() { return grads; }
};
struct net_no_backward : net_ok {
  void backward_unroll() = delete;
};
struct net_int_scalar : net_ok {
  using scalar_type = int;
};
struct net_wrong_state : net_ok {
  int initial_state(std::size_t) const { return 0; }
};
static_assert(seedrl::Network<net_ok>);
static_assert(!seedrl::Network<net_no_backward>);
static_assert(!seedrl::Network<net_int_scalar>);
static_assert(!seedrl::Network<net_wrong_state>);

// --- Loss --------------------------------------------------------------------------------
struct loss_ok {
  using scalar_type = double;
  struct batch_type {};
  struct gradient_type {};
  seedrl::loss_terms operator()(const batch_type&, gradient_type&) const { return {}; }
};
struct loss_returns_double : loss_ok {
  double operator()(const batch_type&, gradient_type&) const { return 0.0; }
};
struct loss_mutating_call {  // operator() must be const: losses hold no per-call state
  using scalar_type = double;
  struct batch_type {};
  struct gradient_type {};
  seedrl::loss_terms operator()(const batch_type&, gradient_type&) { return {}; }
};
static_assert(seedrl::Loss<loss_ok>);
static_assert(!seedrl::Loss<loss_returns_double>);
static_assert(!seedrl::Loss<loss_mutating_call>);

// --- Optimizer ---------------------------------------------------------------------------
struct opt_ok {
  using scalar_type = float;
  void step(std::span<float>, std::span<const float>) {}
  std::int64_t step_count() const { return 0; }
  std::vector<std::byte> save_state() const { return {}; }
  void load_state(std::span<const std::byte>) {}
};
struct opt_no_state : opt_ok {
  void save_state() const = delete;
};
struct opt_wrong_scalar : opt_ok {
  using scalar_type = double;  // step() takes float spans, not double
};
static_assert(seedrl::Optimizer<opt_ok>);
static_assert(!seedrl::Optimizer<opt_no_state>);
static_assert(!seedrl::Optimizer<opt_wrong_scalar>);

// --- Transport ---------------------------------------------------------------------------
struct conn_ok {
  void write(std::span<const std::span<const std::byte>>) {}
  void read(std::span<std::byte>) {}
  void close() noexcept {}
  bool is_open() const noexcept { return true; }
};
struct conn_throwing_close : conn_ok {
  void close() {}  // may throw: not allowed, shutdown paths rely on it
};
struct transport_ok {
  using endpoint_type = int;
  using connection_type = conn_ok;
  struct listener_type {
    conn_ok accept() { return {}; }
  };
  conn_ok connect(const int&) { return {}; }
  listener_type listen(const int&) { return {}; }
};
struct transport_bad_connection : transport_ok {
  using connection_type = conn_throwing_close;
};
struct transport_no_listen {
  using endpoint_type = int;
  using connection_type = conn_ok;
  struct listener_type {};
  conn_ok connect(const int&) { return {}; }
};
static_assert(seedrl::Connection<conn_ok>);
static_assert(!seedrl::Connection<conn_throwing_close>);
static_assert(seedrl::Transport<transport_ok>);
static_assert(!seedrl::Transport<transport_bad_connection>);
static_assert(!seedrl::Transport<transport_no_listen>);

}  // namespace
