#pragma once
/// \file
/// Learner and local modes: a `seedrl::learner` on TCP with checkpoints (--checkpoint-dir,
/// --resume, --init-checkpoint), optional actor processes (local mode), and a progress loop
/// that prints `progress_line` every `progress_seconds`, writes TensorBoard metrics
/// (--logdir) and stops when the mean return reaches --target-return (exit 0), after
/// --total-frames (exit 1 below a target, 0 without one), when training fails or every actor
/// of a local run is gone (exit 1), or on SIGINT/SIGTERM (exit 130). A checkpoint that cannot
/// be used exits 2.
///
/// Under `mpirun -np K` (or `srun`), K learner ranks train one policy together
/// (app/learner_ranks.hpp, docs/scaling.md): each serves its own actors (local mode: --actors
/// each) on its own port, every step averages the ranks' gradients, rank 0 prints the progress
/// line of all ranks together and writes checkpoints and metrics, and the ranks stop together,
/// each with the exit status of the reason that stopped them.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/app/agent_parts.hpp"
#include "seedrl/app/auth.hpp"
#include "seedrl/app/checkpoint_network.hpp"
#include "seedrl/app/checkpoint_settings.hpp"
#include "seedrl/app/learner_ranks.hpp"
#include "seedrl/app/link_transport.hpp"
#include "seedrl/app/processes.hpp"
#include "seedrl/app/run_loss.hpp"
#include "seedrl/app/run_options.hpp"
#include "seedrl/app/signals.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/io/checkpoint.hpp"
#include "seedrl/metrics/metrics_log.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/any_inference_engine.hpp"
#include "seedrl/runtime/input_normalizer.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/runtime/progress.hpp"
#include "seedrl/transport/tcp.hpp"

namespace seedrl::app {

/// The argv of a local-mode actor that re-runs this program in actor mode; `extra` is appended
/// (e.g. the program's own flags that actors need).
inline std::vector<std::string> self_actor_command(const run_options& o, const std::string& address,
                                                   std::uint64_t seed,
                                                   const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args{"/proc/self/exe",   "actor",
                                "--learner",        address,
                                "--envs-per-actor", std::to_string(o.envs_per_actor),
                                "--seed",           std::to_string(seed)};
  if (o.no_auth)
    args.emplace_back("--no-auth");
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

/// Starts --actors actor processes (env.actor_command, or this program in actor mode) for a
/// learner on --host:`port`, actor i with seed `first_seed` + i (by default --seed x 1000 + 1;
/// learner ranks give each rank's actors their own: app/learner_ranks.hpp), and says so. The
/// --tls-* flags go to every actor (the Python actor takes the same names).
inline void spawn_local_actors(child_processes& kids, const run_options& o,
                               const environment_info& env, std::uint16_t port,
                               std::optional<std::uint64_t> first_seed = std::nullopt) {
  const std::string address = o.host + ":" + std::to_string(port);
  const std::uint64_t first = first_seed.value_or(o.seed * 1000 + 1);
  for (int i = 0; i < o.actors; ++i) {
    const std::uint64_t seed = first + static_cast<std::uint64_t>(i);
    auto command = env.actor_command ? env.actor_command(address, i, seed)
                                     : self_actor_command(o, address, seed);
    const auto tls = tls_flags(o);
    command.insert(command.end(), tls.begin(), tls.end());
    kids.add(spawn(command));
  }
  std::printf("started %d %sactor processes with %zu envs each\n", o.actors,
              env.actor_kind.empty() ? "" : (env.actor_kind + " ").c_str(), o.envs_per_actor);
}

/// Ends a run of learner `l` and its local actors `kids`: terminates the actors, stops the
/// learner (which answers what is batched and saves its checkpoint at exit), reaps the actors.
/// Returns `rc`, or 130 when a signal asked the run to stop.
template <class Learner>
int end_run(int rc, child_processes& kids, Learner& l) {
  const bool signalled = stop_requested();
  kids.terminate();
  l.stop();
  kids.wait();
  return signalled ? 130 : rc;
}

/// The learner's settings from the flags.
inline learner_config make_learner_config(const run_options& o) {
  learner_config lc;
  lc.max_envs = o.max_envs;
  lc.unroll_length = o.unroll_length;
  lc.batch_size = o.batch_size;
  lc.max_grad_norm = o.max_grad_norm;
  lc.queue_batches = o.queue_batches;
  lc.batching.max_batch = o.inference_batch;
  const stage_threads automatic = default_stage_threads(
      std::thread::hardware_concurrency(), inference_device(o) == "cpu", train_device(o) == "cpu");
  lc.inference_workers = o.inference_workers != 0 ? o.inference_workers : automatic.inference;
  lc.trainer_threads = o.trainer_threads != 0 ? o.trainer_threads : automatic.trainer;
  lc.io_threads = o.io_threads;
  lc.inference_device = inference_device(o) == "cuda" ? compute_device::cuda : compute_device::cpu;
  lc.batching.max_request_rows = std::max<std::size_t>(o.envs_per_actor, 256);
  lc.seed = o.seed;
  lc.normalize_observations.enabled = o.normalize_observations;
  lc.scale_rewards.enabled = o.scale_rewards;
  lc.log = [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); };
  lc.checkpoint_dir = o.checkpoint_dir;
  lc.checkpointing.every_steps = o.checkpoint_every_steps > 0
                                     ? std::optional<std::int64_t>(o.checkpoint_every_steps)
                                     : std::nullopt;
  lc.checkpointing.every_seconds = o.checkpoint_every_seconds > 0
                                       ? std::optional<double>(o.checkpoint_every_seconds)
                                       : std::nullopt;
  if (o.algorithm == "r2d2") {
    // Sequences of burn-in + trained steps + one that only bootstraps, each repeating the last
    // burn-in + 1 steps of the one before: every step is trained once, after a burn-in.
    const auto& r = o.r2d2;
    lc.unroll_length = r.burn_in + o.unroll_length;
    lc.unroll_overlap = r.burn_in + 1;
    lc.replay.max_sequences = r.replay_sequences;
    lc.replay.max_bytes = static_cast<std::size_t>(r.replay_megabytes * 1e6);
    lc.replay.priority_exponent = r.priority_exponent;
    lc.replay.importance_exponent = r.importance_exponent;
    lc.replay.ratio.samples_per_insert = r.replay_ratio;
    lc.replay.ratio.min_size = r.replay_min_size;
    lc.checkpoint_replay = r.checkpoint_replay;
  }
  return lc;
}

namespace detail {

/// --resume / --init-checkpoint: restores `l`. Returns an exit status when the run must stop.
template <class Learner>
std::optional<int> restore_from_flags(const run_options& o, Learner& l,
                                      const std::string& description, const std::string& hint) {
  if (!o.resume && o.init_checkpoint.empty())
    return std::nullopt;
  const auto report = [](const std::filesystem::path& f, const std::string& why) {
    std::fprintf(stderr, "skipping checkpoint %s: %s\n", f.c_str(), why.c_str());
  };
  std::optional<checkpoint> c;
  const std::filesystem::path from = o.resume ? o.checkpoint_dir : o.init_checkpoint;
  if (std::filesystem::is_directory(from))
    c = read_latest_checkpoint(from, report);
  else if (!o.resume)
    c = read_checkpoint(from);
  if (!c && !o.resume) {
    std::fprintf(stderr, "no valid checkpoint in %s\n", from.c_str());
    return 2;
  }
  if (!c) {
    std::printf("no checkpoint in %s yet: starting afresh\n", from.c_str());
    return std::nullopt;
  }
  if (!holds_network(*c, description, hint))
    return 2;
  // A network trained on normalized observations reads raw ones as noise: restoring it
  // without the normalizer would silently undo its training.
  using normalizer = input_normalizer<float>;  // the names do not depend on the scalar
  const bool has_obs_stats = c->tensors.contains(normalizer::obs_mean_name);
  if (has_obs_stats && !o.normalize_observations) {
    std::fprintf(stderr,
                 "%s was trained with --normalize-observations; its network expects "
                 "normalized observations: pass --normalize-observations (its statistics are "
                 "restored)\n",
                 c->source.c_str());
    return 2;
  }
  if (!has_obs_stats && o.normalize_observations) {
    std::fprintf(stderr,
                 "warning: %s was trained without --normalize-observations; its network "
                 "will now see normalized observations, from fresh statistics\n",
                 c->source.c_str());
  }
  if (o.scale_rewards != c->counters.contains(normalizer::return_var_name)) {
    std::fprintf(stderr,
                 "warning: %s was trained %s --scale-rewards, this run %s: the value "
                 "function's scale changes\n",
                 c->source.c_str(), o.scale_rewards ? "without" : "with",
                 o.scale_rewards ? "scales them (from fresh statistics)" : "does not");
  }
  l.restore(*c, !o.resume);
  std::printf("%s %s: training step %lld, %lld frames\n",
              o.resume ? "resumed from" : "initial weights from", c->source.c_str(),
              static_cast<long long>(c->step),
              static_cast<long long>(o.resume ? c->int_counter("frames") : 0));
  return std::nullopt;
}

}  // namespace detail

/// Runs learner or local mode (see the file comment) with `trainer` doing the training steps.
/// Inference runs where --inference-device (else --device) says: on the CPU, or with `GpuEngine`
/// (app::gpu_engine_for_t of the program's GPU trainer; void: none), both behind one
/// any_inference_engine so that the learner type does not depend on the choice. A GPU engine
/// that cannot start (no usable device, too little memory) exits 2 with its message on a line
/// starting with the flag that asked for it ("--device cuda: ...").
template <class GpuEngine = void, class Net, class Opt, class Trainer = host_trainer>
int run_learner(const run_options& flags, secret_ptr secret, const agent_parts<Net, Opt>& agent,
                const environment_info& env, Trainer trainer = Trainer()) {
  // A resumed run trains as the run that saved the checkpoint did: it adopts the settings the
  // checkpoint keeps, or stops when a flag contradicts them (app/checkpoint_settings.hpp).
  run_options o = flags;
  if (o.resume && std::filesystem::is_directory(o.checkpoint_dir)) {
    const auto quiet = [](const std::filesystem::path&, const std::string&) {};
    if (const auto c = read_latest_checkpoint(o.checkpoint_dir, quiet);
        c && !adopt_checkpoint_settings(o, *c, env.actions, "resume"))
      return 2;
  }
  learner_config lc = make_learner_config(o);
  record_checkpoint_settings(o, env.actions, lc);
  // The return the loss sees: --discount, else the recipe's.
  lc.scale_rewards.gamma = o.discount ? *o.discount : static_cast<double>(agent.loss.discount);
  const bool loopback = o.host == "127.0.0.1" || o.host == "localhost" || o.host == "::1";
  if (!secret && !loopback) {
    std::fprintf(stderr,
                 "warning: listening on %s without authentication: anyone who reaches it can "
                 "join; set SEEDRL_AUTH_SECRET or --auth-secret-file\n",
                 o.host.c_str());
  }
  lc.auth_secret = std::move(secret);
  // Before anything starts: a TLS file that cannot be used stops the run here.
  tcp_transport transport = make_link_transport(o, lc.auth_secret);
  if (!transport.uses_tls() && !loopback) {
    std::fprintf(stderr,
                 "warning: the links to %s are not encrypted; across machines use TLS "
                 "(--tls-cert, --tls-key and --tls-ca, or --tls-psk)\n",
                 o.host.c_str());
  }
  lc.checkpoint_meta["network"] = agent.description;
  lc.checkpoint_meta["environment"] = env.name;
  // Several learner ranks (mpirun, srun, RANK / WORLD_SIZE): they train together; see
  // app/learner_ranks.hpp.
  const distributed::world_place place = distributed::world_place_from_environment();
  const std::shared_ptr<distributed::gradient_reducer> world =
      join_learner_ranks(o, run_settings_hash(o, lc, algorithm_summary(o)));
  const int rank = world ? world->rank() : 0;
  const rank_seed_plan seeds = rank_seeds(o, rank);
  if (world) {
    if constexpr (requires { trainer.set_gradient_reducer(world); }) {
      trainer.set_gradient_reducer(world);
    } else {
      std::fprintf(stderr, "%s trains on one rank only; run it without mpirun or srun\n",
                   device_flag(o, false).c_str());
      return 2;
    }
    lc.seed = seeds.action_sampling;
    lc.run_hash = run_settings_hash(o, lc, algorithm_summary(o));
  }
  using S = typename Net::scalar_type;
  using loss_type = run_loss_t<Trainer, S>;
  using sampler_type = run_sampler_t<Trainer>;
  using engine_type = any_inference_engine<Net, GpuEngine>;
  using learner_type =
      learner<Net, Opt, tcp_transport, Trainer, loss_type, sampler_type, engine_type>;
  std::optional<learner_type> built;
  try {
    built.emplace(lc, agent.network, agent.optimizer,
                  make_run_loss<loss_type>(o, agent.loss, env.actions), env.observations,
                  env.actions, std::move(trainer), make_run_sampler<sampler_type>(o));
  } catch (const std::exception& e) {
    if (lc.inference_device != compute_device::cuda)
      throw;
    std::fprintf(stderr, "%s: %s\n", device_flag(o, true).c_str(), e.what());
    return 2;
  }
  learner_type& l = *built;
  if (const auto rc = detail::restore_from_flags(o, l, agent.description, env.checkpoint_hint))
    return *rc;
  // Before listening: start() refuses a checkpoint directory that holds another run's.
  l.start();
  auto listener = transport.listen({o.host, rank_port(o.port, place.local_rank)});
  const auto port = listener.local_port();
  if (world) {
    std::printf("learner listening on %s:%u (rank %d of %d, %s)\n", o.host.c_str(),
                static_cast<unsigned>(port), rank, world->ranks(), world->describe().c_str());
  } else {
    std::printf("learner listening on %s:%u\n", o.host.c_str(), static_cast<unsigned>(port));
  }
  if (env.announce_network) {
    // A count for discrete actions, the shape for continuous ones (which have no count).
    // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) on "..." + std::string.
    std::string actions;
    if (env.actions.is_discrete()) {
      actions = std::to_string(env.actions.num_actions);
    } else {
      actions = "continuous ";
      actions += env.actions.shape.to_string();
    }
    std::printf("actions: %s; network: %s\n", actions.c_str(), agent.description.c_str());
  }
  std::printf("algorithm: %s\n", algorithm_summary(o).c_str());
  std::fflush(stdout);
  l.serve(std::move(listener));

  child_processes kids;
  if (o.mode == run_mode::local)
    spawn_local_actors(kids, o, env, port, seeds.first_actor);
  std::unique_ptr<metrics_log> metrics;
  if (!o.logdir.empty() && rank == 0)  // rank 0 logs the ranks' totals
    metrics = std::make_unique<metrics_log>(o.logdir);

  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  learner_stats last = over_all_ranks(l.stats());  // a resumed run starts from its counters
  std::int64_t last_local_frames = l.stats().frames;
  // A policy's entropy only: R2D2's epsilon-greedy actions have none to watch.
  entropy_collapse_watch collapse(
      env.actions.is_discrete() && o.algorithm != "r2d2" ? env.actions.num_actions : 0,
      o.target_return);
  auto last_time = t0;
  int rc = 1;
  auto& stop = stop_requested();
  while (!stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const learner_stats local = l.stats();
    const learner_stats s = over_all_ranks(local);  // this rank's own with one rank
    const auto now = clock::now();
    if (!s.trainer_error.empty()) {
      std::fprintf(stderr, "training failed: %s\n", s.trainer_error.c_str());
      break;
    }
    if (s.ranks_stopped != run_stop::none) {  // another rank's reason: every rank stops
      rc = exit_status_of(s.ranks_stopped, o);
      if (rank == 0)
        std::printf("%s\n",
                    ranks_stopped_line(s, std::chrono::duration<double>(now - t0).count()).c_str());
      break;
    }
    const bool solved =
        o.target_return && s.returns_counted == 100 && s.mean_return >= *o.target_return;
    const bool out_of_frames = s.frames >= o.total_frames;
    // Actors that all died (e.g. a Python package missing) would leave the learner waiting.
    const bool actors_gone = !kids.empty() && local.connected_actors == 0 &&
                             now - t0 > std::chrono::seconds(60) &&
                             local.frames == last_local_frames;
    if (rank == 0 && (now - last_time >= std::chrono::duration<double>(o.progress_seconds) ||
                      solved || out_of_frames || actors_gone)) {
      const double dt = std::chrono::duration<double>(now - last_time).count();
      const auto p = progress_between(last, s, dt, o.inference_batch);
      std::printf("%s\n", progress_line(p).c_str());
      if (const std::string warning = collapse.check(s); !warning.empty())
        std::fprintf(stderr, "%s\n", warning.c_str());
      std::fflush(stdout);
      if (metrics)
        log_progress(*metrics, p);
      last = s;
      last_local_frames = local.frames;
      last_time = now;
    } else if (rank != 0 && now - last_time >= std::chrono::duration<double>(o.progress_seconds)) {
      last_local_frames = local.frames;  // for actors_gone: frames since the last window
      last_time = now;
    }
    if (world && (solved || out_of_frames || actors_gone)) {
      // The ranks stop together: this rank's reason reaches the others at the next step.
      const run_stop why = solved          ? run_stop::solved
                           : out_of_frames ? run_stop::frames_done
                                           : run_stop::actors_gone;
      l.request_stop(why);
      if (rank != 0) {
        rc = exit_status_of(why, o);
        break;
      }
    }
    const double elapsed = std::chrono::duration<double>(now - t0).count();
    if (solved) {
      std::printf(
          "solved: mean return %.2f over the last 100 episodes after %lld frames in %.0f s\n",
          s.mean_return, static_cast<long long>(s.frames), elapsed);
      rc = 0;
      break;
    }
    if (out_of_frames) {
      if (o.target_return) {
        std::printf("stopped after %lld frames: mean return %.2f is below %.2f\n",
                    static_cast<long long>(s.frames), s.mean_return, *o.target_return);
        rc = 1;
      } else {
        std::printf(
            "done: %lld frames in %.0f s, %lld training steps, %lld episodes, mean return "
            "%.2f\n",
            static_cast<long long>(s.frames), elapsed, static_cast<long long>(s.train_steps),
            static_cast<long long>(s.episodes), s.mean_return);
        rc = 0;
      }
      break;
    }
    if (actors_gone) {
      std::fprintf(stderr, "no actor connected for a minute: giving up (see their errors above)\n");
      break;
    }
  }
  if (world && stop)
    l.request_stop(run_stop::signal);
  return end_run(rc, kids, l);
}

}  // namespace seedrl::app
