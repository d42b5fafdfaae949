#pragma once
/// \file
/// The definition of `add_run_flags` (app/run_options.hpp): inline in header-only use, in the
/// library's src/app/flags.cpp in compiled use (app/compiled.hpp).

#include <CLI/CLI.hpp>

#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/app/cli.hpp"
#include "seedrl/app/run_options.hpp"
#include "seedrl/distributed/actor_placement.hpp"

namespace seedrl::app {

SEEDRL_APP_API void add_run_flags(CLI::App& cli, run_options& o, mode_set modes) {
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
           std::vector<std::string> items;
           try {
             items = distributed::split_learner_list(v);
           } catch (const std::invalid_argument& e) {
             throw CLI::ValidationError("--learner", e.what());
           }
           o.learners.clear();
           for (const auto& item : items) {
             const auto hp = parse_host_port(item);
             if (!hp)
               throw CLI::ValidationError("--learner",
                                          "needs HOST:PORT[,HOST:PORT...], got '" + item + "'");
             o.learners.push_back(*hp);
           }
           o.host = o.learners.front().host;
           o.port = o.learners.front().port;
         },
         "learner address (actor mode); several learner ranks: HOST:PORT,HOST:PORT,... in rank "
         "order")
      ->option_text("HOST:PORT[,...]");
  cli.add_option_function<std::size_t>(
      "--actor-index", [&o](std::size_t v) { o.actor_index = v; },
      "actor mode with several learners: this actor's index; it goes to rank index mod K "
      "(default: the launcher's rank, else a hash of the host name)");
  cli.add_option("--home-rank-wait", o.home_rank_wait,
                 "actor mode with several learners: seconds to wait for its own rank at start "
                 "before trying the next")
      ->check(CLI::NonNegativeNumber);
  cli.add_option("--host", o.host, "where the learner listens");
  cli.add_option("--port", o.port, "the learner's port (0: any free port)");
  cli.add_option("--actors", o.actors, "actor processes in local mode")->check(positive_number);
  cli.add_option("--envs-per-actor", o.envs_per_actor, "environments per actor")
      ->check(positive_number);
  cli.add_option("--max-envs", o.max_envs,
                 "environments the learner holds state for (local mode: at least actors x envs)")
      ->check(positive_number);
  cli.add_option("--unroll-length", o.unroll_length, "steps per unroll (64 for continuous actions)")
      ->check(positive_number);
  cli.add_option("--batch-size", o.batch_size,
                 "unrolls per training step (32 for continuous actions)")
      ->check(positive_number);
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
  cli.add_option_function<double>(
         "--adam-epsilon", [&o](double v) { o.adam_epsilon = v; },
         "Adam's epsilon, added to sqrt(v) (default 1e-8; SEED's R2D2 on Atari: 1e-3)")
      ->check(positive_number);
  cli.add_flag("--lr-decay", o.lr_decay,
               "decay the learning rate linearly to 0 by --total-frames (counted in optimizer "
               "steps: frames / (unroll length x batch size), times PPO's epochs x minibatches; on "
               "for continuous actions)");
  cli.add_flag("--normalize-observations", o.normalize_observations,
               "normalize observations on the learner by their running mean and variance, "
               "clipped to +-10 (float observations; the statistics are saved in checkpoints; "
               "on for continuous actions; =false turns off a program's default)")
      ->each([&o](const std::string&) { o.given.normalize_observations = true; });
  cli.add_flag("--scale-rewards", o.scale_rewards,
               "divide rewards on the learner by the running standard deviation of the "
               "discounted return, clipped to +-10 (episode returns stay raw; =false turns off a "
               "program's default)")
      ->each([&o](const std::string&) { o.given.scale_rewards = true; });
  cli.add_option("--entropy-cost", o.entropy_cost, "entropy bonus weight")
      ->check(non_negative_number);
  cli.add_option("--max-grad-norm", o.max_grad_norm,
                 "clip the gradient's global norm to this (0.5 for continuous actions)")
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
         "continuous actions: clip the Gaussian's samples into the bounds (the default, set "
         "once the action spec is known) or squash them with tanh")
      ->check(CLI::IsMember({"squash", "clip"}));
  cli.add_option("--algo", o.algorithm,
                 "learning algorithm: impala (V-trace actor-critic), ppo (clipped surrogate, "
                 "--ppo-* flags) or r2d2 (Q-learning from a prioritized replay, --r2d2-* and "
                 "--replay-* flags; docs/r2d2.md)")
      ->check(CLI::IsMember({"impala", "ppo", "r2d2"}))
      ->each([&o, &cli](const std::string& v) {
        if (v == "r2d2")
          use_r2d2_defaults(o, cli);
      });
  auto& r = o.r2d2;
  cli.add_option("--r2d2-burn-in", r.burn_in,
                 "R2D2: steps that only warm the LSTM before each sequence's --unroll-length "
                 "trained ones (no gradient)");
  cli.add_option("--r2d2-n-step", r.n_step, "R2D2: rewards summed before the target bootstraps")
      ->check(positive_number);
  cli.add_option("--target-update-period", r.target_update_period,
                 "R2D2: training steps between copies of the network into the target network")
      ->check(positive_number);
  cli.add_flag("--value-rescaling,!--no-value-rescaling", r.value_rescaling,
               "R2D2: learn h(return), h(x) = sign(x)(sqrt(|x|+1)-1) + 0.001x");
  cli.add_option("--replay-sequences", r.replay_sequences, "R2D2: replay capacity in sequences")
      ->check(positive_number);
  cli.add_option("--replay-megabytes", r.replay_megabytes,
                 "R2D2: replay capacity in MB as well (0: no bound beyond --replay-sequences)")
      ->check(non_negative_number);
  cli.add_option("--replay-ratio", r.replay_ratio,
                 "R2D2: sequences trained per sequence inserted, held both ways (0: no bound)")
      ->check(non_negative_number);
  cli.add_option("--replay-min-size", r.replay_min_size,
                 "R2D2: sequences stored before training starts")
      ->check(positive_number);
  cli.add_flag("--checkpoint-replay", r.checkpoint_replay,
               "R2D2: save the replay beside each checkpoint (ckpt-<step>.replay, the newest "
               "kept) and restore it on --resume; without it a resumed replay refills");
  cli.add_option("--priority-exponent", r.priority_exponent, "R2D2: priority exponent alpha")
      ->check(non_negative_number);
  cli.add_option("--importance-exponent", r.importance_exponent,
                 "R2D2: importance-sampling exponent beta")
      ->check(non_negative_number);
  cli.add_option("--priority-eta", r.priority_eta,
                 "R2D2: a sequence's priority is eta max|TD| + (1 - eta) mean|TD|")
      ->check(CLI::Range(0.0, 1.0));
  cli.add_option("--epsilon-base", r.epsilon_base,
                 "R2D2: explorer i of N acts at random with probability base^(1 + alpha i/(N-1))")
      ->check(CLI::Range(0.0, 1.0));
  cli.add_option("--epsilon-alpha", r.epsilon_alpha, "R2D2: see --epsilon-base")
      ->check(non_negative_number);
  cli.add_option("--explorers", r.explorers,
                 "R2D2: N of --epsilon-base, one explorer per environment in the order actors "
                 "first connect (default --actors x --envs-per-actor)");
  cli.add_option("--ppo-epochs", o.ppo.epochs,
                 "PPO: passes over each training batch (10 for continuous actions)")
      ->check(positive_number);
  cli.add_option("--ppo-minibatches", o.ppo.minibatches,
                 "PPO: minibatches of whole unrolls per pass (must divide --batch-size; continuous "
                 "actions: --batch-size, one unroll each)")
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
  cli.add_flag(
      "--ppo-normalize-advantages", o.ppo.normalize_advantages,
      "PPO: standardise each minibatch's advantages (on for continuous actions; =false: use "
      "them as they are)");
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
  auto* no_auth = cli.add_flag("--no-auth", o.no_auth, "run the link without authentication");
  // TLS 1.3 for links that leave the host (docs/security.md).
  auto* cert = cli.add_option("--tls-cert", o.tls_cert,
                              "TLS: this end's certificate chain (PEM); with --tls-key and "
                              "--tls-ca, both ends present and check certificates")
                   ->check(CLI::ExistingFile);
  auto* key = cli.add_option("--tls-key", o.tls_key, "TLS: the private key of --tls-cert (PEM)")
                  ->check(CLI::ExistingFile);
  auto* ca = cli.add_option("--tls-ca", o.tls_ca,
                            "TLS: the CA certificates (PEM) the other end's certificate must "
                            "chain to")
                 ->check(CLI::ExistingFile);
  cert->needs(key)->needs(ca);
  key->needs(cert);
  ca->needs(cert);
  cli.add_option("--tls-server-name", o.tls_server_name,
                 "TLS, actors: the name the learner's certificate must carry (default: the host "
                 "in --learner)")
      ->needs(cert);
  cli.add_flag("--tls-psk", o.tls_psk,
               "TLS with a pre-shared key derived from the link's shared secret, instead of "
               "certificates")
      ->excludes(cert)
      ->excludes(no_auth);
  if (modes.eval) {
    cli.add_option("--episodes", o.eval_episodes, "episodes to play (eval mode)")
        ->check(positive_number);
    cli.add_flag("--sample", o.eval_sample,
                 "eval mode: sample actions from the policy instead of taking the argmax");
  }
}

}  // namespace seedrl::app
