// CartPole trained with the numerics core alone: one thread steps 32 environments, runs the
// MLP+LSTM agent for inference, builds [T+1, B] unrolls with SEED's one-step overlap and trains
// on each with the IMPALA loss and Adam. The learner runtime will split these stages across
// threads and processes; the math is the same.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <numeric>
#include <string>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/env/cartpole.hpp"
#include "seedrl/env/env_batch.hpp"
#include "seedrl/net/categorical.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/clip.hpp"

namespace {

struct options {
  std::size_t envs = 16;
  std::size_t unroll = 20;
  double learning_rate = 2e-3;
  double entropy_cost = 0.001;
  std::int64_t max_frames = 6'000'000;
  double target = 475.0;
  std::uint64_t seed = 1;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--envs")
      o.envs = std::strtoul(next(), nullptr, 10);
    else if (a == "--unroll-length")
      o.unroll = std::strtoul(next(), nullptr, 10);
    else if (a == "--learning-rate")
      o.learning_rate = std::atof(next());
    else if (a == "--entropy-cost")
      o.entropy_cost = std::atof(next());
    else if (a == "--total-frames")
      o.max_frames = std::atoll(next());
    else if (a == "--target-return")
      o.target = std::atof(next());
    else if (a == "--seed")
      o.seed = std::strtoull(next(), nullptr, 10);
    else {
      std::printf(
          "usage: seedrl_cartpole_train [--envs 16] [--unroll-length 20] [--learning-rate 2e-3]\n"
          "         [--entropy-cost 0.001] [--total-frames 6000000] [--target-return 475] [--seed "
          "1]\n"
          "Trains until the mean return of the last 100 episodes reaches the target.\n");
      std::exit(a == "--help" ? 0 : 2);
    }
  }
  if (o.envs == 0 || o.unroll == 0) {
    std::fprintf(stderr, "--envs and --unroll-length must be positive\n");
    std::exit(2);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const options opt = parse(argc, argv);
  const std::size_t B = opt.envs, T = opt.unroll, T1 = T + 1, A = 2, O = 4;

  seedrl::mlp_lstm_agent_config net_config;  // MLP 64-64, LSTM 64
  net_config.seed = opt.seed;
  seedrl::mlp_lstm_agent<float> net(net_config);
  seedrl::impala_loss_config<float> loss_config;
  loss_config.entropy_cost = static_cast<float>(opt.entropy_cost);
  const seedrl::impala_loss<float> loss(loss_config);
  seedrl::adam_config adam_config;
  adam_config.learning_rate = opt.learning_rate;
  seedrl::adam<float> optimizer(adam_config);

  auto envs = seedrl::env_batch<seedrl::cartpole>::create(
      B, [](std::size_t) { return seedrl::cartpole{}; }, opt.seed);
  seedrl::random_generator rng(opt.seed + 1);

  // The unroll, time-major [T+1, B]: row t holds the env output seen at step t and the action
  // the agent took on it; row 0 repeats the previous unroll's row T.
  std::vector<float> obs(T1 * B * O), rewards(T1 * B), behaviour(T1 * B), logits(T1 * B * A),
      values(T1 * B);
  std::vector<std::uint8_t> dones(T1 * B, 0), truncated(T1 * B, 0);
  std::vector<std::int32_t> actions(T1 * B, 0), prev_actions(T1 * B, 0);
  std::vector<float> d_logits(T1 * B * A), d_values(T1 * B);
  auto state = net.initial_state(B);
  std::vector<float> start_state(state.data), next_start(state.data);
  // What the environments last produced, and the action before it.
  std::vector<float> env_reward(B, 0.0f);
  std::vector<std::uint8_t> env_done(B, 1);       // the first observation starts an episode
  std::vector<std::uint8_t> env_truncated(B, 0);  // ... ended by a time limit
  std::vector<std::int32_t> last_action(B, 0);
  std::vector<float> step_logits(B * A), step_values(B), step_logp(B);
  std::vector<std::int32_t> step_actions(B);

  std::deque<double> recent;  // returns of the last 100 episodes
  std::int64_t frames = 0, episodes = 0, updates = 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto last_report = t0;
  bool first = true;
  while (frames < opt.max_frames) {
    if (!first) {  // one-step overlap: the new unroll starts with the old one's last step
      std::copy_n(obs.begin() + T * B * O, B * O, obs.begin());
      std::copy_n(rewards.begin() + T * B, B, rewards.begin());
      std::copy_n(dones.begin() + T * B, B, dones.begin());
      std::copy_n(truncated.begin() + T * B, B, truncated.begin());
      std::copy_n(actions.begin() + T * B, B, actions.begin());
      std::copy_n(prev_actions.begin() + T * B, B, prev_actions.begin());
      std::copy_n(behaviour.begin() + T * B, B, behaviour.begin());
      start_state = next_start;
    }
    for (std::size_t t = first ? 0 : 1; t < T1; ++t) {
      if (t == T)
        next_start = state.data;  // the state before step T starts the next unroll
      const std::size_t r = t * B;
      std::copy_n(envs.observations().begin(), B * O, obs.begin() + r * O);
      std::copy_n(env_reward.begin(), B, rewards.begin() + r);
      std::copy_n(env_done.begin(), B, dones.begin() + r);
      std::copy_n(env_truncated.begin(), B, truncated.begin() + r);
      for (std::size_t b = 0; b < B; ++b)
        prev_actions[r + b] = env_done[b] ? 0 : last_action[b];
      seedrl::agent_step_output<float> out{step_logits, step_values};
      net.infer({std::span<const float>(obs).subspan(r * O, B * O),
                 std::span<const float>(rewards).subspan(r, B),
                 std::span<const std::uint8_t>(dones).subspan(r, B),
                 std::span<const std::int32_t>(prev_actions).subspan(r, B)},
                state, out);
      seedrl::sample_actions<float>(step_logits, B, A, rng, step_actions);
      seedrl::categorical_log_probs<float>(step_logits, B, A, step_actions, step_logp);
      std::copy_n(step_actions.begin(), B, actions.begin() + r);
      std::copy_n(step_logp.begin(), B, behaviour.begin() + r);
      envs.step(step_actions);
      frames += static_cast<std::int64_t>(B);
      for (std::size_t b = 0; b < B; ++b) {
        env_reward[b] = envs.rewards()[b];
        env_done[b] = envs.dones()[b];
        env_truncated[b] = envs.truncated()[b];
        last_action[b] = step_actions[b];
      }
      for (const auto& e : envs.finished_episodes()) {
        recent.push_back(e.episode_return);
        if (recent.size() > 100)
          recent.pop_front();
        ++episodes;
      }
    }
    first = false;

    // Train on the unroll.
    seedrl::agent_unroll_output<float> out{logits, values};
    net.forward_unroll({T1, B, obs, rewards, dones, prev_actions, start_state}, out);
    seedrl::impala_gradients<float> grads{d_logits, d_values};
    // A time-limit end leaves its transition out of the loss (seedrl/algo/impala_loss.hpp).
    const auto terms =
        loss({T, B, A, logits, values, actions, behaviour, rewards, dones, truncated}, grads);
    net.zero_gradients();
    net.backward_unroll({d_logits, d_values});
    const double grad_norm = seedrl::clip_by_global_norm<float>(net.gradients(), 40.0);
    optimizer.step(net.parameters(), net.gradients());
    ++updates;

    const double mean =
        recent.empty() ? 0.0 : std::accumulate(recent.begin(), recent.end(), 0.0) / recent.size();
    const auto now = std::chrono::steady_clock::now();
    const bool solved = recent.size() == 100 && mean >= opt.target;
    if (solved || now - last_report > std::chrono::seconds(2)) {
      const double secs = std::chrono::duration<double>(now - t0).count();
      std::printf(
          "frames %9lld  %7.0f frames/s  episodes %6lld  mean return (last 100) %6.1f  "
          "loss %.3f (policy %.3f baseline %.3f entropy %.4f)  grad norm %.2f\n",
          static_cast<long long>(frames), frames / secs, static_cast<long long>(episodes), mean,
          terms.total, terms.policy, terms.baseline, terms.entropy, grad_norm);
      std::fflush(stdout);
      last_report = now;
    }
    if (solved) {
      std::printf("solved: mean return %.1f >= %.1f after %lld frames, %lld updates\n", mean,
                  opt.target, static_cast<long long>(frames), static_cast<long long>(updates));
      return 0;
    }
  }
  std::printf("not solved within %lld frames\n", static_cast<long long>(opt.max_frames));
  return 1;
}
