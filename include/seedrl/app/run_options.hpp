#pragma once
/// \file
/// The flags every seedrl training program shares, and the mode it runs in. A program fills a
/// `run_options` with its own defaults, registers the flags with `add_run_flags` (every flag
/// shows its default in `--help`), adds flags of its own, and parses (app/cli.hpp).
///
/// The defaults are one set per observation kind, for every program: a `run_options` as
/// constructed holds the vector-observation set (PPO, entropy 0.01, rewards scaled; with
/// `mlp_recipe`'s Adam 1e-3 and 64-64 MLP), and `use_pixel_defaults` (app/pixel_recipe.hpp)
/// turns it into the image set (SEED's IMPALA). A continuous action space changes a few of the
/// vector set's settings once the spec is known (`use_continuous_action_defaults`, with
/// `mlp_recipe::use_action_kind_defaults`). docs/learning.md says how they were chosen and
/// what they reach beside Stable-Baselines3.
///
///   local    a learner plus --actors actor processes on loopback
///   learner  a learner listening on --host:--port for actors
///   actor    one actor process connecting to --learner
///   eval     plays a checkpoint's policy (--checkpoint-dir or --init-checkpoint)

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "seedrl/algo/ppo_loss_config.hpp"
#include "seedrl/app/cli.hpp"
#include "seedrl/app/compiled.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/action_sampler.hpp"

namespace seedrl::app {

/// What a program run does.
enum class run_mode { local, learner, actor, eval };

/// R2D2's settings (--algo r2d2, --r2d2-* and --replay-* flags; docs/r2d2.md). The defaults
/// serve the small environments (CartPole, Catch, MinAtar); SEED's Atari configuration is
/// burn-in 40, target period 2500, 100,000 sequences, Adam 1e-4 (docs/r2d2.md gives the flags).
struct r2d2_options {
  std::size_t burn_in = 10;                ///< steps before each --unroll-length trained ones
  std::size_t n_step = 5;                  ///< rewards before the target bootstraps
  std::size_t target_update_period = 100;  ///< training steps between target copies
  bool value_rescaling = true;             ///< h(x) = sign(x)(sqrt(|x|+1)-1) + 1e-3 x
  std::size_t replay_sequences = 20000;    ///< replay capacity in sequences
  double replay_megabytes = 0.0;           ///< and in MB (0: no bound beyond sequences)
  double replay_ratio = 1.0;               ///< sequences trained per sequence inserted; 0: free
  std::size_t replay_min_size = 100;       ///< sequences stored before training starts
  bool checkpoint_replay = false;          ///< the replay saved with checkpoints, restored
  double priority_exponent = 0.9;          ///< alpha
  double importance_exponent = 0.6;        ///< beta
  double priority_eta = 0.9;               ///< eta max |TD| + (1 - eta) mean |TD|
  double epsilon_base = 0.4;               ///< explorer i: base^(1 + alpha i / (N - 1))
  double epsilon_alpha = 7.0;
  std::size_t explorers = 0;  ///< N; 0: --actors x --envs-per-actor
};

/// Flags shared by the training programs; defaults are the vector-observation set (see the
/// file comment).
struct run_options {
  run_mode mode = run_mode::local;
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  /// Actor mode with several learner ranks (`--learner A,B,...`): their addresses in rank
  /// order (host and port hold the first); the actor goes to rank --actor-index mod K and
  /// moves on when that rank cannot be reached (distributed/learner_failover.hpp).
  std::vector<host_port> learners;
  /// Which rank an actor belongs to: unset takes the launcher's rank (srun, mpirun), else a
  /// hash of the host name.
  std::optional<std::size_t> actor_index;
  /// Seconds an actor that has not reached any rank yet waits for its home rank before trying
  /// the next (actors often start before their learners).
  double home_rank_wait = 30.0;
  int actors = 4;
  std::size_t envs_per_actor = 4;
  std::size_t max_envs = 4096;  ///< env slots; local mode: at least actors x envs
  std::size_t unroll_length = 20;
  std::size_t batch_size = 16;
  std::size_t queue_batches = 2;
  std::size_t inference_batch = 16;
  /// learner_config::inference_workers and ::trainer_threads; 0 ("auto" on the command line):
  /// default_stage_threads for this machine's cores and --device.
  std::size_t inference_workers = 0;
  std::size_t trainer_threads = 0;
  std::size_t io_threads = 1;           ///< learner_config::io_threads
  std::optional<double> learning_rate;  ///< unset: the agent recipe's default
  std::optional<double> adam_epsilon;   ///< unset: Adam's 1e-8 (SEED's R2D2 uses 1e-3)
  bool lr_decay = false;                ///< decay the learning rate linearly to 0 by --total-frames
  /// Learner-side input normalization (learner_config::normalize_observations, ::scale_rewards;
  /// reward scaling discounts with the agent's discount).
  bool normalize_observations = false;
  bool scale_rewards = true;
  /// The entropy bonus's weight; for continuous actions per action dimension (the bonus is the
  /// mean of the D dimensions' entropies: `loss_entropy_cost`).
  double entropy_cost = 0.01;
  std::optional<double> discount;  ///< unset: the agent recipe's (IMPALA and PPO alike)
  /// Global gradient-norm clip (learner_config::max_grad_norm), for PPO and IMPALA alike: 40,
  /// SEED's. With raw advantages PPO's usual 0.5 starved a state-independent log-std's mean
  /// updates (Pendulum stopped learning; docs/learning.md); continuous actions, whose
  /// advantages are standardised, take 0.5 (use_continuous_action_defaults).
  double max_grad_norm = 40.0;
  /// Continuous actions: tanh squashing into the bounds, or clipping (gaussian_sampler).
  bounds_handling action_bounds = bounds_handling::squash;
  std::int64_t total_frames = 8'000'000;
  std::optional<double> target_return = 475.0;  ///< unset: train for --total-frames
  std::string logdir;
  std::uint64_t seed = 1;
  /// Where the learner trains and infers (--device); --train-device and --inference-device
  /// split it (empty: as --device). Read them through train_device() / inference_device().
  std::string device = "cpu";
  std::string train_device;
  std::string inference_device;
  std::string checkpoint_dir;
  std::int64_t checkpoint_every_steps = 500;  ///< 0: off
  double checkpoint_every_seconds = 60.0;     ///< 0: off
  bool resume = false;
  std::string init_checkpoint;
  std::string auth_secret_file;
  bool no_auth = false;
  /// TLS 1.3 on the link (app/link_transport.hpp): certificate files (--tls-cert, --tls-key,
  /// --tls-ca; the actor checks the learner's name, or --tls-server-name), or --tls-psk (a key
  /// derived from the link's shared secret).
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;
  std::string tls_server_name;
  bool tls_psk = false;
  int eval_episodes = 100;
  bool eval_sample = false;
  /// The learning algorithm: "impala" (V-trace actor-critic, SEED's), "ppo" or "r2d2"
  /// (value-based, from a prioritized replay).
  std::string algorithm = "ppo";
  r2d2_options r2d2;  ///< --algo r2d2's settings
  /// PPO's settings (--ppo-*); its discount comes from the agent recipe, its entropy cost from
  /// --entropy-cost, as IMPALA's do.
  ppo_loss_config<double> ppo = [] {
    ppo_loss_config<double> c;
    // Raw advantages: with Adam the loss's scale matters little, and standardising each
    // minibatch turned the noise of a return-less plateau (Acrobot's first swing-up) into
    // full-size policy steps that collapsed the policy's entropy (docs/learning.md).
    c.normalize_advantages = false;
    return c;
  }();
  /// Seconds between progress lines (not a flag: a program's choice).
  double progress_seconds = 2.0;
  /// Which of the settings a checkpoint keeps (app/checkpoint_settings.hpp) came from the
  /// command line rather than defaults: resume and eval adopt the checkpoint's others and
  /// refuse these where they differ.
  struct given_flags {
    bool normalize_observations = false, scale_rewards = false, action_bounds = false;
  } given;
};

/// Which modes a program offers; all four by default.
struct mode_set {
  bool local = true, learner = true, actor = true, eval = true;
};

namespace detail {
/// Whether `flag` is one of `cli`'s options and was given (a program may lack some flags).
inline bool flag_given(const CLI::App& cli, const std::string& flag) {
  const CLI::Option* o = cli.get_option_no_throw(flag);
  return o != nullptr && o->count() > 0;
}

inline std::string format_number(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.')
    s.pop_back();
  return s;
}
}  // namespace detail

/// Registers the shared flags and the MODE positional on `cli`, writing into `o` on parse.
/// The values `o` holds now are the defaults `--help` shows.
SEEDRL_APP_API void add_run_flags(CLI::App& cli, run_options& o, mode_set modes = {});

/// Where the learner trains: --train-device, else --device.
inline const std::string& train_device(const run_options& o) {
  return o.train_device.empty() ? o.device : o.train_device;
}

/// Where the learner infers: --inference-device, else --device.
inline const std::string& inference_device(const run_options& o) {
  return o.inference_device.empty() ? o.device : o.inference_device;
}

/// The flag and value that chose the training (or, with `inference`, the inference) device,
/// e.g. "--device cuda" or "--inference-device cuda": messages about a device start with it.
inline std::string device_flag(const run_options& o, bool inference) {
  const std::string& own = inference ? o.inference_device : o.train_device;
  if (own.empty())
    return "--device " + o.device;
  return (inference ? "--inference-device " : "--train-device ") + own;
}

/// The optimizer steps --lr-decay spreads its decay over: one per training batch (unroll
/// length x batch size frames), epochs x minibatches per batch for PPO; none without the flag.
inline std::optional<std::int64_t> lr_decay_steps(const run_options& o) {
  if (!o.lr_decay)
    return std::nullopt;
  // R2D2 trains batch_size sequences per step and inserts one per unroll_length new frames of
  // an env: at r samples per insert a step stands for batch x unroll_length / r frames.
  double frames_per_batch = static_cast<double>(o.unroll_length * o.batch_size);
  if (o.algorithm == "r2d2" && o.r2d2.replay_ratio > 0.0)
    frames_per_batch /= o.r2d2.replay_ratio;
  std::int64_t steps = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(static_cast<double>(o.total_frames) / frames_per_batch));
  if (o.algorithm == "ppo")
    steps *= static_cast<std::int64_t>(o.ppo.epochs * o.ppo.minibatches);
  return steps;
}

/// A run's Adam settings: --learning-rate, else the recipe's `learning_rate`; --lr-decay's
/// steps; --adam-epsilon, else Adam's default.
inline adam_config run_adam(const run_options& o, double learning_rate) {
  adam_config adam;
  adam.learning_rate = o.learning_rate.value_or(learning_rate);
  adam.lr_decay_steps = lr_decay_steps(o);
  if (o.adam_epsilon)
    adam.epsilon = *o.adam_epsilon;
  return adam;
}

/// The algorithm and its main settings, for a configuration line: "IMPALA (V-trace)" or e.g.
/// "PPO (GAE advantages, lambda 0.95), 4 epochs x 4 minibatches, clip 0.2".
inline std::string algorithm_summary(const run_options& o) {
  if (o.algorithm == "r2d2") {
    const auto& r = o.r2d2;
    return "R2D2 (" + std::to_string(r.n_step) + "-step double Q" +
           (r.value_rescaling ? ", value rescaling" : "") + ", burn-in " +
           std::to_string(r.burn_in) + ", target every " + std::to_string(r.target_update_period) +
           " steps), replay of " + std::to_string(r.replay_sequences) + " sequences" +
           (r.replay_megabytes > 0 ? " or " + detail::format_number(r.replay_megabytes) + " MB"
                                   : std::string()) +
           ", " + detail::format_number(r.replay_ratio) + " samples per insert, priority " +
           detail::format_number(r.priority_exponent) + "/" +
           detail::format_number(r.importance_exponent) + ", epsilon " +
           detail::format_number(r.epsilon_base) + "^(1+" + detail::format_number(r.epsilon_alpha) +
           "i/(N-1))";
  }
  if (o.algorithm != "ppo")
    return "IMPALA (V-trace)";
  const auto& p = o.ppo;
  std::string s = std::string("PPO (") +
                  (p.advantage == ppo_advantage::vtrace ? "V-trace" : "GAE") +
                  " advantages, lambda " + detail::format_number(p.lambda) + "), " +
                  std::to_string(p.epochs) + " epochs x " + std::to_string(p.minibatches) +
                  " minibatches, clip " + detail::format_number(p.clip_epsilon);
  if (p.value_clip)
    s += ", value clip " + detail::format_number(*p.value_clip);
  if (p.normalize_advantages)
    s += ", advantages standardised";
  return s;
}

/// The entropy cost the loss gets: --entropy-cost, divided by D for a continuous action space of
/// D elements. The sum of D entropies grows with D while the policy term does not, so a weight
/// that keeps Pendulum's one log-std exploring drove HalfCheetah's six to the clamp
/// (docs/learning.md); per dimension, one weight serves both.
inline double loss_entropy_cost(const run_options& o, std::size_t continuous_dimensions) {
  return continuous_dimensions > 0 ? o.entropy_cost / static_cast<double>(continuous_dimensions)
                                   : o.entropy_cost;
}

/// The vector set's settings for continuous actions, each where the command line (`cli`, parsed)
/// left it: unrolls of 64 in batches of 32, PPO's 10 epochs over minibatches of one unroll with
/// standardised advantages, the learning rate decayed to 0, observations normalised, the
/// gradient norm clipped to 0.5 and Gaussian samples clipped into the bounds (the network's
/// part is `mlp_recipe::use_action_kind_defaults`). These are the usual settings of PPO for
/// continuous control (CleanRL's, Tianshou's); docs/learning.md has what each did. Call after
/// parsing, once the action spec is known, before the learner starts.
inline void use_continuous_action_defaults(run_options& o, const CLI::App& cli) {
  const auto left = [&cli](const char* flag) { return !detail::flag_given(cli, flag); };
  if (left("--unroll-length"))
    o.unroll_length = 64;
  if (left("--batch-size"))
    o.batch_size = 32;
  if (left("--ppo-epochs"))
    o.ppo.epochs = 10;
  if (left("--ppo-minibatches"))
    o.ppo.minibatches = o.batch_size;  // one unroll each, whatever the batch
  // Raw advantages let the bonus outgrow a converging policy's shrinking advantages (the
  // log-std rose late in HalfCheetah runs, and Pendulum took 5x the frames). The discrete set
  // keeps them raw for Acrobot's return-less plateau (docs/learning.md); a continuous task
  // with such a plateau may want =false.
  if (left("--ppo-normalize-advantages"))
    o.ppo.normalize_advantages = true;
  if (left("--lr-decay"))
    o.lr_decay = true;
  if (!o.given.normalize_observations)
    o.normalize_observations = true;
  if (left("--max-grad-norm"))
    o.max_grad_norm = 0.5;
  if (!o.given.action_bounds)
    o.action_bounds = bounds_handling::clip;
}

/// R2D2's settings for what it shares with the other algorithms, each where the command line
/// (`cli`) left it: batches of 32 sequences, no reward scaling (value rescaling takes its
/// place), gradients clipped to norm 80 (SEED's R2D2). Called when --algo r2d2 is parsed.
inline void use_r2d2_defaults(run_options& o, const CLI::App& cli) {
  const auto left = [&cli](const char* flag) { return !detail::flag_given(cli, flag); };
  if (left("--batch-size"))
    o.batch_size = 32;
  if (!o.given.scale_rewards)
    o.scale_rewards = false;
  if (left("--max-grad-norm"))
    o.max_grad_norm = 80.0;
}

/// Settles what depends on more than one flag, after parsing: local mode (and eval, which
/// may start actors too) gives the learner's env table room for all its actors' environments.
inline void finish_run_options(run_options& o) {
  if (o.mode == run_mode::local || o.mode == run_mode::eval)
    o.max_envs = std::max(o.max_envs, static_cast<std::size_t>(o.actors) * o.envs_per_actor);
  if (o.r2d2.explorers == 0)
    o.r2d2.explorers =
        std::max<std::size_t>(1, static_cast<std::size_t>(o.actors) * o.envs_per_actor);
}

}  // namespace seedrl::app

#if !SEEDRL_APP_COMPILED
#include "seedrl/app/detail/run_flags-inl.hpp"
#endif
