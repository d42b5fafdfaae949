#pragma once
/// \file
/// Eval mode for programs whose environments live in actor processes (gymnasium and ALE
/// through the Python actor): the learner of a training run, restored from the newest good
/// checkpoint of --checkpoint-dir (or --init-checkpoint), serving greedy actions (--sample:
/// sampled) with each environment's recurrent state kept as in training, but inference only:
/// no unroll is built, no training step taken, no checkpoint written. --actors actor processes
/// play on loopback, and actors started by hand may join on --host:--port. Once --episodes
/// episodes have ended it prints the line the in-process eval mode prints (app/run_eval.hpp),
/// "greedy policy: mean return M over N episodes (min A, max B)", and exits 0. Exit 2 without a
/// usable checkpoint, 1 when every actor is gone first, 130 on SIGINT/SIGTERM.
///
/// The first N episodes to end are counted, as in the in-process eval: with many environments
/// at once, short episodes end first, so use enough episodes that this does not matter.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "seedrl/app/auth.hpp"
#include "seedrl/app/checkpoint_network.hpp"
#include "seedrl/app/checkpoint_settings.hpp"
#include "seedrl/app/link_transport.hpp"
#include "seedrl/app/processes.hpp"
#include "seedrl/app/run_eval.hpp"
#include "seedrl/app/run_learner.hpp"
#include "seedrl/app/run_options.hpp"
#include "seedrl/app/signals.hpp"
#include "seedrl/runtime/action_sampler.hpp"
#include "seedrl/runtime/input_normalizer.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/transport/tcp.hpp"

namespace seedrl::app {

namespace detail {

/// Returns of the first `wanted` episodes reported to it (from the inference thread).
class episode_tally {
 public:
  explicit episode_tally(int wanted) : wanted_(wanted), result_{0, 0.0, 1e300, -1e300} {}

  void add(double episode_return) {
    std::lock_guard lock(mutex_);
    if (result_.episodes == wanted_)
      return;
    ++result_.episodes;
    total_ += episode_return;
    result_.lowest = std::min(result_.lowest, episode_return);
    result_.highest = std::max(result_.highest, episode_return);
  }

  bool complete() const {
    std::lock_guard lock(mutex_);
    return result_.episodes == wanted_;
  }

  eval_result result() const {
    std::lock_guard lock(mutex_);
    eval_result r = result_;
    r.mean = r.episodes > 0 ? total_ / r.episodes : 0.0;
    return r;
  }

 private:
  mutable std::mutex mutex_;
  int wanted_;
  eval_result result_;
  double total_ = 0.0;
};

}  // namespace detail

/// See the file comment. `agent` gives the architecture (its parameters are replaced by the
/// checkpoint's) and `env` the specs and the actor command, as for run_learner.
template <class Net, class Opt>
int run_actor_eval(const run_options& flags, secret_ptr secret, const agent_parts<Net, Opt>& agent,
                   const environment_info& env) {
  const auto c = load_eval_checkpoint(flags, agent.description, env.checkpoint_hint);
  if (!c)
    return 2;
  // The policy plays as it was trained: normalized observations, scaled rewards (both
  // network inputs, with the checkpoint's statistics, frozen in an inference-only learner) and
  // its action bounds, with or without the flags (app/checkpoint_settings.hpp).
  run_options o = flags;
  if (!adopt_checkpoint_settings(o, *c, env.actions, "eval"))
    return 2;
  const auto how = o.eval_sample ? action_selection::sample : action_selection::greedy;
  detail::episode_tally tally(o.eval_episodes);
  learner_config lc = make_learner_config(o);
  lc.inference_only = true;
  lc.checkpoint_dir.clear();
  lc.auth_secret = std::move(secret);
  lc.on_episode = [&tally](double episode_return, std::int64_t) { tally.add(episode_return); };
  // The CPU training learner's type: eval compiles no learner of its own.
  using loss_type = run_loss_t<host_trainer, typename Net::scalar_type>;
  using sampler_type = run_sampler_t<host_trainer>;
  learner<Net, Opt, tcp_transport, host_trainer, loss_type, sampler_type> l(
      lc, agent.network, agent.optimizer, loss_type(), env.observations, env.actions,
      host_trainer{}, make_run_sampler<sampler_type>(o, how));
  l.restore(*c, /*weights_only=*/true);
  std::printf("%s: training step %lld, %s\n", c->source.c_str(), static_cast<long long>(c->step),
              agent.description.c_str());
  l.start();
  tcp_transport transport = make_link_transport(o, lc.auth_secret);
  auto listener = transport.listen({o.host, o.port});
  const auto port = listener.local_port();
  std::printf("eval learner listening on %s:%u (inference only)\n", o.host.c_str(),
              static_cast<unsigned>(port));
  std::fflush(stdout);
  l.serve(std::move(listener));
  child_processes kids;
  spawn_local_actors(kids, o, env, port);
  std::fflush(stdout);

  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  auto& stop = stop_requested();
  auto last_frames = l.stats().frames;
  auto last_change = t0;
  int rc = 1;
  while (!stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (tally.complete()) {
      print_eval_result(tally.result(), how);
      std::fflush(stdout);
      rc = 0;
      break;
    }
    // Actors that all died (e.g. a Python package missing) would leave eval waiting forever.
    const auto s = l.stats();
    const auto now = clock::now();
    if (s.frames != last_frames) {
      last_frames = s.frames;
      last_change = now;
    }
    if (s.connected_actors == 0 && now - last_change > std::chrono::seconds(60)) {
      std::fprintf(stderr,
                   "no actor connected for a minute: giving up after %d of %d episodes (see "
                   "their errors above)\n",
                   tally.result().episodes, o.eval_episodes);
      break;
    }
  }
  return end_run(rc, kids, l);
}

}  // namespace seedrl::app
