#pragma once
/// \file
/// The flags every seedrl training program shares, and the mode it runs in. A program fills a
/// `run_options` with its own defaults, registers the flags with `add_run_flags` (every flag
/// shows its default in `--help`), adds flags of its own, and parses (app/cli.hpp).
///
/// The defaults are one set per observation kind, for every program: a `run_options` as
/// constructed holds the vector-observation set (PPO, entropy 0.01, rewards scaled; with
/// `mlp_recipe`'s Adam 1e-3 and 64-64 MLP), and `use_pixel_defaults` (app/pixel_recipe.hpp)
/// turns it into the image set (SEED's IMPALA). docs/learning.md says how they were chosen and
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
#include "seedrl/runtime/action_sampler.hpp"

namespace seedrl::app {

/// What a program run does.
enum class run_mode { local, learner, actor, eval };

/// Flags shared by the training programs; defaults are the vector-observation set (see the
/// file comment).
struct run_options {
  run_mode mode = run_mode::local;
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
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
  bool lr_decay = false;                ///< decay the learning rate linearly to 0 by --total-frames
  /// Learner-side input normalization (learner_config::normalize_observations, ::scale_rewards;
  /// reward scaling discounts with the agent's discount).
  bool normalize_observations = false;
  bool scale_rewards = true;
  double entropy_cost = 0.01;
  std::optional<double> discount;  ///< unset: the agent recipe's (IMPALA and PPO alike)
  /// Global gradient-norm clip (learner_config::max_grad_norm), for PPO and IMPALA alike: 40,
  /// SEED's. PPO's usual 0.5 starves a state-independent log-std's mean updates (Pendulum
  /// stopped learning; docs/learning.md).
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
  int eval_episodes = 100;
  bool eval_sample = false;
  /// The learning algorithm: "impala" (V-trace actor-critic, SEED's) or "ppo".
  std::string algorithm = "ppo";
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
inline void add_run_flags(CLI::App& cli, run_options& o, mode_set modes = {}) {
  cli.option_defaults()->always_capture_default();
  std::map<std::string, run_mode> names;
  std::string mode_help = "what to run:";
  const auto offer = [&](bool on, const char* name, run_mode m, const char* what) {
    if (!on)
      return;
    names.emplace(name, m);
    mode_help += std::string("\n  ") + name + std::string(9 - std::string(name).size(), ' ') + what;
  };
  offer(modes.local, "local", run_mode::local,
        "a learner plus --actors actor processes on loopback");
  offer(modes.learner, "learner", run_mode::learner, "a learner listening on --host:--port");
  offer(modes.actor, "actor", run_mode::actor, "one actor process connecting to --learner");
  offer(modes.eval, "eval", run_mode::eval,
        "play the policy of a checkpoint (--checkpoint-dir or --init-checkpoint)");
  cli.add_option("mode", o.mode, mode_help)
      ->required()
      ->transform(CLI::CheckedTransformer(names))
      ->option_text("MODE");

  cli.add_option_function<std::string>(
         "--learner",
         [&o](const std::string& v) {
           const auto hp = parse_host_port(v);
           if (!hp)
             throw CLI::ValidationError("--learner", "needs HOST:PORT, got '" + v + "'");
           o.host = hp->host;
           o.port = hp->port;
         },
         "learner address (actor mode)")
      ->option_text("HOST:PORT");
  cli.add_option("--host", o.host, "where the learner listens");
  cli.add_option("--port", o.port, "the learner's port (0: any free port)");
  cli.add_option("--actors", o.actors, "actor processes in local mode")->check(positive_number);
  cli.add_option("--envs-per-actor", o.envs_per_actor, "environments per actor")
      ->check(positive_number);
  cli.add_option("--max-envs", o.max_envs,
                 "environments the learner holds state for (local mode: at least actors x envs)")
      ->check(positive_number);
  cli.add_option("--unroll-length", o.unroll_length, "steps per unroll")->check(positive_number);
  cli.add_option("--batch-size", o.batch_size, "unrolls per training step")->check(positive_number);
  cli.add_option("--inference-batch", o.inference_batch, "largest inference batch, in envs")
      ->check(positive_number);
  // A positive count, or "auto" (stored as 0); a transform, since a check sees a copy.
  const CLI::Validator count_or_auto(
      [](std::string& s) -> std::string {
        if (s == "auto") {
          s = "0";
          return {};
        }
        const bool digits = !s.empty() && std::all_of(s.begin(), s.end(),
                                                      [](char c) { return c >= '0' && c <= '9'; });
        if (!digits || s.find_first_not_of('0') == std::string::npos)
          return "a positive count or auto, got " + s;
        return {};
      },
      "N|auto");
  cli.add_option("--inference-workers", o.inference_workers,
                 "threads the learner's CPU inference splits each batch over (1: the inference "
                 "thread alone; auto, the default: from the core count, docs/performance.md)")
      ->transform(count_or_auto)
      ->option_text("N|auto");
  cli.add_option("--train-threads", o.trainer_threads,
                 "threads the learner's CPU trainer splits each gradient step's unrolls over "
                 "(auto, the default: from the core count and --device, docs/performance.md)")
      ->transform(count_or_auto)
      ->option_text("N|auto");
  cli.add_option("--io-threads", o.io_threads,
                 "threads that serve the actors' sockets (asynchronous I/O; 1 holds thousands of "
                 "connections)")
      ->check(positive_number);
  cli.add_option("--queue-batches", o.queue_batches,
                 "training queue, in training batches (hold an unroll burst: actors x envs per "
                 "actor / batch size)")
      ->check(positive_number);
  cli.add_option_function<double>(
         "--learning-rate", [&o](double v) { o.learning_rate = v; },
         o.learning_rate
             ? "Adam learning rate (default " + detail::format_number(*o.learning_rate) + ")"
             : std::string("Adam learning rate (default: the network's)"))
      ->check(positive_number);
  cli.add_flag("--lr-decay", o.lr_decay,
               "decay the learning rate linearly to 0 by --total-frames (counted in optimizer "
               "steps: frames / (unroll length x batch size), times PPO's epochs x minibatches)");
  cli.add_flag("--normalize-observations", o.normalize_observations,
               "normalize observations on the learner by their running mean and variance, "
               "clipped to +-10 (float observations; the statistics are saved in checkpoints; "
               "=false turns off a program's default)")
      ->each([&o](const std::string&) { o.given.normalize_observations = true; });
  cli.add_flag("--scale-rewards", o.scale_rewards,
               "divide rewards on the learner by the running standard deviation of the "
               "discounted return, clipped to +-10 (episode returns stay raw; =false turns off a "
               "program's default)")
      ->each([&o](const std::string&) { o.given.scale_rewards = true; });
  cli.add_option("--entropy-cost", o.entropy_cost, "entropy bonus weight")
      ->check(non_negative_number);
  cli.add_option("--max-grad-norm", o.max_grad_norm, "clip the gradient's global norm to this")
      ->check(positive_number);
  cli.add_option_function<double>(
         "--discount", [&o](double v) { o.discount = v; },
         "reward discount gamma (default: the network recipe's, 0.99)")
      ->check(CLI::Range(0.0, 1.0));
  cli.add_option_function<std::string>(
         "--action-bounds",
         [&o](const std::string& v) {
           o.action_bounds = v == "clip" ? bounds_handling::clip : bounds_handling::squash;
           o.given.action_bounds = true;
         },
         std::string("continuous actions: squash (tanh into the bounds) or clip (default ") +
             (o.action_bounds == bounds_handling::clip ? "clip" : "squash") + ")")
      ->check(CLI::IsMember({"squash", "clip"}));
  cli.add_option("--algo", o.algorithm,
                 "learning algorithm: impala (V-trace actor-critic) or ppo (clipped surrogate, "
                 "--ppo-* flags; trains on the CPU)")
      ->check(CLI::IsMember({"impala", "ppo"}));
  cli.add_option("--ppo-epochs", o.ppo.epochs, "PPO: passes over each training batch")
      ->check(positive_number);
  cli.add_option("--ppo-minibatches", o.ppo.minibatches,
                 "PPO: minibatches of whole unrolls per pass (must divide --batch-size)")
      ->check(positive_number);
  cli.add_option("--ppo-clip", o.ppo.clip_epsilon, "PPO: probability ratio clip epsilon")
      ->check(CLI::Range(0.0, 1.0).description("in (0, 1)"));
  cli.add_option_function<double>(
         "--ppo-value-clip", [&o](double v) { o.ppo.value_clip = v; },
         "PPO: clip value updates to +-C around the values before each batch (default off)")
      ->check(positive_number);
  cli.add_option_function<std::string>(
         "--ppo-advantage",
         [&o](const std::string& v) {
           o.ppo.advantage = v == "vtrace" ? ppo_advantage::vtrace : ppo_advantage::gae;
         },
         std::string("PPO: advantages from gae (GAE lambda) or vtrace (corrects for policy lag; "
                     "default ") +
             (o.ppo.advantage == ppo_advantage::vtrace ? "vtrace" : "gae") + ")")
      ->check(CLI::IsMember({"gae", "vtrace"}));
  cli.add_option("--ppo-lambda", o.ppo.lambda, "PPO: GAE (or V-trace) lambda")
      ->check(CLI::Range(0.0, 1.0));
  cli.add_flag("--ppo-normalize-advantages", o.ppo.normalize_advantages,
               "PPO: standardise each minibatch's advantages (=false: use them as they are)");
  cli.add_option("--total-frames", o.total_frames, "stop after this many env frames")
      ->check(positive_number);
  cli.add_option_function<double>(
      "--target-return", [&o](double v) { o.target_return = v; },
      "stop when the mean of the last 100 episodes reaches R (default " +
          (o.target_return ? detail::format_number(*o.target_return) : std::string("none")) + ")");
  cli.add_option("--logdir", o.logdir,
                 "write metrics there: metrics.jsonl and TensorBoard event files");
  cli.add_option("--seed", o.seed, "random seed");
  cli.add_option("--device", o.device,
                 "where the learner trains and runs its actors' inference (cuda: the first GPU); "
                 "--train-device and --inference-device split them")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cli.add_option("--train-device", o.train_device, "where the learner trains (default: --device)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->option_text("cpu|cuda");
  cli.add_option("--inference-device", o.inference_device,
                 "where the learner runs its actors' inference (default: --device)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->option_text("cpu|cuda");

  auto* dir = cli.add_option("--checkpoint-dir", o.checkpoint_dir,
                             "save checkpoints there (one directory per run: a new run refuses "
                             "one that holds checkpoints; --resume continues it)");
  cli.add_option("--checkpoint-every-steps", o.checkpoint_every_steps,
                 "checkpoint every N training steps (0: off)")
      ->check(non_negative_number);
  cli.add_option("--checkpoint-every-seconds", o.checkpoint_every_seconds,
                 "checkpoint every S seconds (0: off); always at exit")
      ->check(non_negative_number);
  auto* init = cli.add_option("--init-checkpoint", o.init_checkpoint,
                              "start from a checkpoint's weights only (file or directory)");
  cli.add_flag("--resume", o.resume, "continue from the newest good checkpoint in --checkpoint-dir")
      ->needs(dir)
      ->excludes(init);
  cli.add_option("--auth-secret-file", o.auth_secret_file,
                 "the link's shared secret (mode 0600); otherwise SEEDRL_AUTH_SECRET, never the "
                 "command line. Local mode makes a random one for its actors when neither is "
                 "given")
      ->check(CLI::ExistingFile);
  cli.add_flag("--no-auth", o.no_auth, "run the link without authentication");
  if (modes.eval) {
    cli.add_option("--episodes", o.eval_episodes, "episodes to play (eval mode)")
        ->check(positive_number);
    cli.add_flag("--sample", o.eval_sample,
                 "eval mode: sample actions from the policy instead of taking the argmax");
  }
}

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
  const auto frames_per_batch = static_cast<std::int64_t>(o.unroll_length * o.batch_size);
  std::int64_t steps = std::max<std::int64_t>(1, o.total_frames / frames_per_batch);
  if (o.algorithm == "ppo")
    steps *= static_cast<std::int64_t>(o.ppo.epochs * o.ppo.minibatches);
  return steps;
}

/// The algorithm and its main settings, for a configuration line: "IMPALA (V-trace)" or e.g.
/// "PPO (GAE advantages, lambda 0.95), 4 epochs x 4 minibatches, clip 0.2".
inline std::string algorithm_summary(const run_options& o) {
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

/// Settles what depends on more than one flag, after parsing: local mode (and eval, which
/// may start actors too) gives the learner's env table room for all its actors' environments.
inline void finish_run_options(run_options& o) {
  if (o.mode == run_mode::local || o.mode == run_mode::eval)
    o.max_envs = std::max(o.max_envs, static_cast<std::size_t>(o.actors) * o.envs_per_actor);
}

}  // namespace seedrl::app
