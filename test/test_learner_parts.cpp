// The learner's plug points of its own: which networks it takes (LearnerNetwork, checked at
// compile time with a type that misses one piece each), and that the loss and the action
// sampler given as type parameters are the ones that run (a sampler that always picks the last
// action, a loss that counts its calls), end to end over the in-process transport.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <thread>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/env/cartpole.hpp"
#include "seedrl/net/categorical.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/action_sampler.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/runtime/learner_network.hpp"
#include "seedrl/transport/in_process.hpp"

namespace {

using namespace std::chrono_literals;

// --- LearnerNetwork ----------------------------------------------------------------------
static_assert(seedrl::LearnerNetwork<seedrl::mlp_lstm_agent<float>>);
static_assert(seedrl::LearnerNetwork<seedrl::mlp_lstm_agent<double>>);
static_assert(seedrl::LearnerNetwork<seedrl::frame_stacked<seedrl::nature_cnn_lstm_agent<float>>>);

/// Forwards everything to an mlp_lstm_agent; the types below hide one piece each.
struct agent_ok {
  using inner = seedrl::mlp_lstm_agent<float>;
  using scalar_type = float;
  using state_type = inner::state_type;
  using inference_input = inner::inference_input;
  using inference_output = inner::inference_output;
  using unroll_input = inner::unroll_input;
  using unroll_output = inner::unroll_output;
  using output_gradient = inner::output_gradient;
  std::ptrdiff_t state_size() const;
  state_type initial_state(std::size_t) const;
  void infer(const inference_input&, state_type&, inference_output&);
  void forward_unroll(const unroll_input&, unroll_output&);
  void zero_gradients();
  void backward_unroll(const output_gradient&);
  std::span<float> parameters();
  std::span<float> gradients();
};
struct agent_no_state_size : agent_ok {
  void state_size() = delete;
};
struct agent_no_zero_gradients : agent_ok {
  void zero_gradients(int) = delete;  // hides agent_ok::zero_gradients()
};
struct agent_foreign_state : agent_ok {
  struct state_type {};
  state_type initial_state(std::size_t) const;
  void infer(const inference_input&, state_type&, inference_output&);
};
struct agent_foreign_inputs : agent_ok {
  struct inference_input {};
  void infer(const inference_input&, state_type&, inference_output&);
};
struct agent_not_copyable : agent_ok {
  agent_not_copyable() = default;
  agent_not_copyable(const agent_not_copyable&) = delete;
};
static_assert(seedrl::LearnerNetwork<agent_ok>);
static_assert(!seedrl::LearnerNetwork<agent_no_state_size>);
static_assert(!seedrl::LearnerNetwork<agent_no_zero_gradients>);
static_assert(!seedrl::LearnerNetwork<agent_foreign_state>);
static_assert(!seedrl::LearnerNetwork<agent_foreign_inputs>);
static_assert(!seedrl::LearnerNetwork<agent_not_copyable>);
static_assert(!seedrl::LearnerNetwork<int>);

// --- ActionSampler ------------------------------------------------------------------------
/// Always the last action, with its log-probability under the policy (what V-trace needs).
struct last_action_sampler {
  void check(const seedrl::action_spec& spec) const {
    if (!spec.is_discrete())
      throw std::invalid_argument("last_action_sampler: discrete actions only");
  }
  std::size_t outputs_per_row(const seedrl::action_spec& spec) const {
    return static_cast<std::size_t>(spec.num_actions);
  }
  template <class S>
  void sample(std::span<const S> logits, std::size_t rows, std::size_t width,
              seedrl::random_generator&, std::span<std::int32_t> actions,
              std::span<S> log_probs) const {
    for (std::size_t r = 0; r < rows; ++r)
      actions[r] = static_cast<std::int32_t>(width - 1);
    seedrl::categorical_log_probs<S>(logits, rows, width,
                                     std::span<const std::int32_t>(actions).first(rows),
                                     log_probs.first(rows));
  }
};
struct sampler_no_check {
  std::size_t outputs_per_row(const seedrl::action_spec&) const;
  void sample(std::span<const float>, std::size_t, std::size_t, seedrl::random_generator&,
              std::span<std::int32_t>, std::span<float>) const;
};
static_assert(seedrl::ActionSampler<seedrl::categorical_sampler, float>);
static_assert(seedrl::ActionSampler<last_action_sampler, float>);
static_assert(!seedrl::ActionSampler<sampler_no_check, float>);
static_assert(!seedrl::ActionSampler<last_action_sampler, int>);

// --- Loss as a type parameter --------------------------------------------------------------
/// The IMPALA loss, counting its calls.
struct counting_loss {
  using scalar_type = float;
  using batch_type = seedrl::impala_batch<float>;
  using gradient_type = seedrl::impala_gradients<float>;
  seedrl::loss_terms operator()(const batch_type& batch, gradient_type& grad) const {
    ++*calls;
    return inner(batch, grad);
  }
  seedrl::impala_loss<float> inner;
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
};
static_assert(seedrl::Loss<counting_loss>);
static_assert(seedrl::Trainer<seedrl::host_trainer, seedrl::mlp_lstm_agent<float>,
                              seedrl::adam<float>, counting_loss>);
static_assert(seedrl::Trainer<seedrl::host_trainer, seedrl::mlp_lstm_agent<float>,
                              seedrl::adam<float>>);  // the IMPALA loss unless told

/// CartPole that counts the actions it was sent.
struct counting_cartpole : seedrl::cartpole {
  std::shared_ptr<std::atomic<int>[]> counts;
  explicit counting_cartpole(std::shared_ptr<std::atomic<int>[]> c) : counts(std::move(c)) {}
  seedrl::step_result step(action_type action, std::span<float> observation) {
    ++counts[static_cast<std::size_t>(action)];
    return seedrl::cartpole::step(action, observation);
  }
};

}  // namespace

TEST_CASE("the learner runs the loss and the action sampler it is given", "[learner][parts]") {
  using net_t = seedrl::mlp_lstm_agent<float>;
  using learner_t = seedrl::learner<net_t, seedrl::adam<float>, seedrl::in_process_transport,
                                    seedrl::host_trainer, counting_loss, last_action_sampler>;
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {8};
  nc.lstm_size = 0;
  seedrl::learner_config lc;
  lc.unroll_length = 4;
  lc.batch_size = 2;
  lc.batching.max_batch = 4;
  lc.batching.deadline = 1ms;
  lc.batching.max_request_rows = 8;
  counting_loss loss;
  const auto calls = loss.calls;
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"learner-parts"};
  learner_t learner(lc, net_t(nc), seedrl::adam<float>(), loss,
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  learner.start();
  learner.serve(transport.listen(endpoint));
  std::shared_ptr<std::atomic<int>[]> counts(new std::atomic<int>[2] {});
  std::atomic<bool> stop{false};
  std::thread actor([&] {
    seedrl::actor_config ac;
    ac.num_envs = 2;
    seedrl::actor<counting_cartpole, std::function<seedrl::in_process_connection()>> a(
        ac, [&](std::size_t) { return counting_cartpole(counts); },
        [&] { return transport.connect(endpoint); });
    a.run(stop);
  });
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (learner.stats().train_steps < 3 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  stop = true;
  actor.join();
  learner.stop();
  const auto s = learner.stats();
  CHECK(s.train_steps >= 3);
  CHECK(*calls == s.train_steps);  // every training step ran the given loss, once
  CHECK(counts[1] > 0);
  CHECK(counts[0] == 0);  // categorical sampling would have sent action 0 about half the time
}

TEST_CASE("the learner refuses a network whose action count differs from the spec",
          "[learner][parts]") {
  using net_t = seedrl::mlp_lstm_agent<float>;
  using learner_t = seedrl::learner<net_t, seedrl::adam<float>, seedrl::in_process_transport>;
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {8};
  nc.lstm_size = 0;
  nc.num_actions = 3;
  CHECK_THROWS_WITH(learner_t(seedrl::learner_config{}, net_t(nc), seedrl::adam<float>(),
                              seedrl::impala_loss<float>(), seedrl::cartpole::observation_spec(),
                              seedrl::cartpole::action_spec()),
                    Catch::Contains("the network has 3 actions, the action spec 2"));
  CHECK_THROWS_WITH(learner_t(seedrl::learner_config{}, net_t(nc), seedrl::adam<float>(),
                              seedrl::impala_loss<float>(), seedrl::cartpole::observation_spec(),
                              seedrl::action_spec::continuous({1}, -1.0f, 1.0f)),
                    Catch::Contains("only discrete action spaces"));
}
