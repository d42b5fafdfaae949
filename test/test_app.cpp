// The program layer's flag handling (seedrl/app/): what each flag sets, the defaults a program
// chose, and exit status 2 with a message for every kind of bad input (CLI11's own codes
// differ per error kind). test/e2e/flags.sh checks the same through a built program.
#include "seedrl/app/run_options.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedrl/app/checkpoint_network.hpp"
#include "seedrl/app/checkpoint_settings.hpp"
#include "seedrl/app/cli.hpp"
#include "seedrl/app/gym_recipe.hpp"
#include "seedrl/app/learner_ranks.hpp"
#include "seedrl/app/mlp_recipe.hpp"
#include "seedrl/app/pixel_recipe.hpp"
#include "seedrl/app/python_actor.hpp"
#include "seedrl/app/run_eval.hpp"
#include "seedrl/app/run_learner.hpp"
#include "seedrl/app/run_loss.hpp"
#include "seedrl/app/trainer_choice.hpp"
#include "seedrl/env/cartpole.hpp"
#include "seedrl/io/checkpoint.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"

namespace {

using seedrl::app::make_run_sampler;
using seedrl::app::run_loss_t;
using seedrl::app::run_mode;
using seedrl::app::run_options;
using seedrl::app::run_sampler_t;

/// Parses `args` (after the program name) into `o` with the shared flags; returns what
/// parse_command_line returned.
std::optional<int> parse(run_options& o, std::vector<std::string> args,
                         seedrl::app::mode_set modes = {}) {
  CLI::App cli("test", "seedrl_test");
  seedrl::app::add_run_flags(cli, o, modes);
  args.insert(args.begin(), "seedrl_test");
  std::vector<const char*> argv;
  for (const auto& a : args)
    argv.push_back(a.c_str());
  const auto rc = seedrl::app::parse_command_line(cli, static_cast<int>(argv.size()), argv.data());
  if (!rc)
    seedrl::app::finish_run_options(o);
  return rc;
}

}  // namespace

TEST_CASE("parse_host_port splits at the last colon and checks the port", "[app]") {
  using seedrl::app::parse_host_port;
  const auto a = parse_host_port("10.0.0.7:5000");
  REQUIRE(a);
  CHECK(a->host == "10.0.0.7");
  CHECK(a->port == 5000);
  const auto v6 = parse_host_port("::1:65535");
  REQUIRE(v6);
  CHECK(v6->host == "::1");
  CHECK(v6->port == 65535);
  CHECK(parse_host_port("h:0")->port == 0);
  CHECK_FALSE(parse_host_port("localhost"));
  CHECK_FALSE(parse_host_port("localhost:"));
  CHECK_FALSE(parse_host_port("localhost:65536"));
  CHECK_FALSE(parse_host_port("localhost:99999999999"));
  CHECK_FALSE(parse_host_port("localhost:50x"));
  CHECK_FALSE(parse_host_port("localhost:-1"));
}

TEST_CASE("an actor takes the learner ranks' addresses in rank order, and its index", "[app]") {
  run_options o;
  REQUIRE_FALSE(parse(o, {"actor", "--learner", "10.0.0.1:9000,10.0.0.2:9000,[::1]:9001",
                          "--actor-index", "7", "--home-rank-wait", "2.5"}));
  REQUIRE(o.learners.size() == 3);
  CHECK(o.learners[0].host == "10.0.0.1");
  CHECK(o.learners[1].host == "10.0.0.2");
  CHECK(o.learners[2].host == "[::1]");
  CHECK(o.learners[2].port == 9001);
  CHECK(o.host == "10.0.0.1");  // the first, as with one learner
  CHECK(o.port == 9000);
  REQUIRE(o.actor_index);
  CHECK(*o.actor_index == 7);
  CHECK(o.home_rank_wait == 2.5);
}

TEST_CASE("flags set the run options, and unset ones keep the program's defaults", "[app]") {
  run_options o;
  o.entropy_cost = 0.01;  // a program's own default
  REQUIRE_FALSE(parse(o, {"actor", "--learner", "example.org:4000", "--envs-per-actor", "3",
                          "--seed", "9", "--no-auth"}));
  CHECK(o.mode == run_mode::actor);
  CHECK(o.host == "example.org");
  CHECK(o.port == 4000);
  CHECK(o.envs_per_actor == 3);
  CHECK(o.seed == 9);
  CHECK(o.no_auth);
  CHECK(o.entropy_cost == 0.01);
  CHECK(o.learners.size() == 1);
  CHECK_FALSE(o.actor_index);
  CHECK(o.home_rank_wait == 30.0);
  CHECK_FALSE(o.learning_rate);  // the recipe's default
  REQUIRE(o.target_return);
  CHECK(*o.target_return == 475.0);

  run_options l;
  REQUIRE_FALSE(parse(l, {"--learning-rate", "3e-4", "learner", "--target-return", "-100",
                          "--checkpoint-dir", "ckpt", "--resume", "--checkpoint-every-steps", "0",
                          "--inference-workers", "2", "--io-threads", "3"}));
  CHECK(l.mode == run_mode::learner);
  REQUIRE(l.learning_rate);
  CHECK(*l.learning_rate == 3e-4);
  CHECK(*l.target_return == -100.0);
  CHECK(l.checkpoint_dir == "ckpt");
  CHECK(l.resume);
  CHECK(l.checkpoint_every_steps == 0);
  CHECK(l.max_envs == 4096);
  CHECK(l.inference_workers == 2);
  CHECK(seedrl::app::make_learner_config(l).inference_workers == 2);
  // Unset: default_stage_threads for this machine, both stages on the CPU.
  const auto automatic =
      seedrl::default_stage_threads(std::thread::hardware_concurrency(), true, true);
  CHECK(o.inference_workers == 0);
  CHECK(seedrl::app::make_learner_config(o).inference_workers == automatic.inference);
  CHECK(seedrl::app::make_learner_config(o).trainer_threads == automatic.trainer);
  run_options zero;
  CHECK(parse(zero, {"local", "--inference-workers", "0"}) == 2);
  run_options bad;
  CHECK(parse(bad, {"local", "--train-threads", "two"}) == 2);
  run_options threads;
  REQUIRE_FALSE(parse(threads, {"local", "--train-threads", "3", "--inference-workers", "auto"}));
  CHECK(seedrl::app::make_learner_config(threads).trainer_threads == 3);
  CHECK(seedrl::app::make_learner_config(threads).inference_workers == automatic.inference);
  CHECK(seedrl::app::make_learner_config(l).io_threads == 3);
  CHECK(seedrl::app::make_learner_config(o).io_threads == 1);  // unset: one I/O thread
  run_options no_io;
  CHECK(parse(no_io, {"local", "--io-threads", "0"}) == 2);
}

TEST_CASE("default_stage_threads: the trainer gets the cores a GPU stage leaves", "[app]") {
  using seedrl::default_stage_threads;
  const auto both = [](unsigned cores, bool inference_cpu, bool trainer_cpu) {
    const auto t = default_stage_threads(cores, inference_cpu, trainer_cpu);
    return std::pair{t.inference, t.trainer};
  };
  CHECK(both(0, true, true) == std::pair<std::size_t, std::size_t>{1, 1});
  CHECK(both(2, true, true) == std::pair<std::size_t, std::size_t>{1, 2});
  CHECK(both(3, true, true) == std::pair<std::size_t, std::size_t>{1, 2});
  CHECK(both(4, true, true) == std::pair<std::size_t, std::size_t>{1, 2});
  CHECK(both(16, true, true) == std::pair<std::size_t, std::size_t>{7, 8});
  CHECK(both(2, false, true) == std::pair<std::size_t, std::size_t>{1, 1});
  CHECK(both(8, false, true) == std::pair<std::size_t, std::size_t>{1, 7});
  CHECK(both(8, true, false) == std::pair<std::size_t, std::size_t>{7, 1});
  CHECK(both(8, false, false) == std::pair<std::size_t, std::size_t>{1, 1});
}

TEST_CASE("the --algo and --ppo-* flags choose the loss a run trains with", "[app][ppo]") {
  const seedrl::impala_loss_config<float> recipe{.discount = 0.97f};
  const auto discrete = seedrl::action_spec::discrete(2);
  run_options defaults;  // the vector defaults: PPO
  REQUIRE_FALSE(parse(defaults, {"local"}));
  const auto by_default = make_run_loss<seedrl::loss_choice<float>>(defaults, recipe, discrete);
  REQUIRE(by_default.ppo() != nullptr);
  CHECK(by_default.ppo()->config().entropy_cost == 0.01f);
  CHECK(by_default.schedule() == seedrl::update_schedule{4, 4});
  CHECK(algorithm_summary(defaults) ==
        "PPO (GAE advantages, lambda 0.95), 4 epochs x 4 minibatches, clip 0.2");
  CHECK_FALSE(by_default.ppo()->config().normalize_advantages);  // raw advantages by default
  using any_action_loss = seedrl::loss_choice<float, seedrl::spec_distribution<float>>;
  CHECK(make_run_loss<any_action_loss>(defaults, recipe,
                                       seedrl::action_spec::continuous({1}, -1.0, 1.0))
            .ppo()
            ->config()
            .entropy_cost == 0.01f);  // one bonus for every action kind...
  CHECK(make_run_loss<any_action_loss>(defaults, recipe,
                                       seedrl::action_spec::continuous({6}, -1.0, 1.0))
            .ppo()
            ->config()
            .entropy_cost == Approx(0.01f / 6));  // ...per action dimension

  run_options o;
  REQUIRE_FALSE(parse(o, {"local", "--algo", "impala"}));
  auto impala = make_run_loss<seedrl::loss_choice<float>>(o, recipe, discrete);
  CHECK_FALSE(impala.is_ppo());
  REQUIRE(impala.impala() != nullptr);
  CHECK(impala.impala()->config().discount == 0.97f);
  CHECK(impala.schedule() == seedrl::update_schedule{});
  CHECK(algorithm_summary(o) == "IMPALA (V-trace)");

  run_options p;
  REQUIRE_FALSE(parse(p, {"local", "--algo", "ppo", "--ppo-epochs", "3", "--ppo-minibatches", "2",
                          "--ppo-clip", "0.1", "--ppo-value-clip", "0.5", "--ppo-advantage",
                          "vtrace", "--ppo-lambda", "0.9", "--entropy-cost", "0.02"}));
  CHECK(p.algorithm == "ppo");
  CHECK(p.ppo.epochs == 3);
  CHECK(p.ppo.minibatches == 2);
  CHECK(p.ppo.clip_epsilon == 0.1);
  REQUIRE(p.ppo.value_clip);
  CHECK(*p.ppo.value_clip == 0.5);
  CHECK(p.ppo.advantage == seedrl::ppo_advantage::vtrace);
  CHECK(p.ppo.lambda == 0.9);
  CHECK(algorithm_summary(p) ==
        "PPO (V-trace advantages, lambda 0.9), 3 epochs x 2 minibatches, clip 0.1, value clip 0.5");
  const auto ppo = make_run_loss<seedrl::loss_choice<float>>(p, recipe, discrete);
  CHECK(ppo.is_ppo());
  REQUIRE(ppo.ppo() != nullptr);
  CHECK(ppo.ppo()->config().discount == 0.97f);  // the recipe's
  CHECK(ppo.schedule() == seedrl::update_schedule{3, 2});
  CHECK(ppo.name() == "PPO (V-trace advantages)");
  // Every trainer's loss type is loss_choice over the action spec's distribution (the CUDA
  // trainers run the same losses); a loss over categorical policies refuses continuous
  // actions, saying why.
  static_assert(std::same_as<run_loss_t<void, float>,  // any trainer, host_trainer or not
                             seedrl::loss_choice<float, seedrl::spec_distribution<float>>>);
  static_assert(std::same_as<run_sampler_t<void>, seedrl::spec_sampler>);
  CHECK(make_run_loss<seedrl::loss_choice<float>>(p, recipe, discrete).is_ppo());
  CHECK_THROWS_WITH((make_run_loss<seedrl::loss_choice<float>>(
                        p, recipe, seedrl::action_spec::continuous({1}, -2.0, 2.0))),
                    Catch::Contains("continuous actions need a loss over their distribution"));
  CHECK_NOTHROW(make_run_loss<seedrl::impala_loss<float>>(o, recipe, discrete));

  // --lr-decay counts optimizer steps: batches of T x B frames, times PPO's steps per batch.
  CHECK_FALSE(lr_decay_steps(p));
  run_options d;
  REQUIRE_FALSE(parse(d, {"local", "--algo", "impala", "--lr-decay", "--total-frames", "64000",
                          "--unroll-length", "20", "--batch-size", "16"}));
  REQUIRE(lr_decay_steps(d));
  CHECK(*lr_decay_steps(d) == 200);
  d.algorithm = "ppo";
  CHECK(*lr_decay_steps(d) == 200 * 16);

  // --algo r2d2: its defaults where no flag said otherwise, its loss, sampler and sequences.
  run_options r;
  REQUIRE_FALSE(parse(r, {"local", "--algo", "r2d2", "--batch-size", "8", "--actors", "3",
                          "--envs-per-actor", "2", "--r2d2-burn-in", "4"}));
  CHECK(r.batch_size == 8);  // given
  CHECK_FALSE(r.scale_rewards);
  CHECK(r.max_grad_norm == 80.0);
  CHECK(r.r2d2.explorers == 6);
  const auto r2d2 = make_run_loss<seedrl::loss_choice<float>>(r, recipe, discrete);
  REQUIRE(r2d2.r2d2() != nullptr);
  CHECK(seedrl::uses_replay(r2d2));
  CHECK(r2d2.burn_in() == 4);
  CHECK_THROWS_WITH((make_run_loss<seedrl::loss_choice<float>>(
                        r, recipe, seedrl::action_spec::continuous({1}, -2.0, 2.0))),
                    Catch::Contains("continuous"));
  const auto sampler = make_run_sampler<seedrl::spec_sampler>(r);
  REQUIRE(sampler.epsilon_greedy);
  CHECK(sampler.epsilon_greedy->explorers == 6);
  const auto lc = seedrl::app::make_learner_config(r);
  CHECK(lc.unroll_length == 4 + 20);
  CHECK(lc.unroll_overlap == 5);
  CHECK(lc.replay.max_sequences == 20000);
  CHECK_FALSE(lc.checkpoint_replay);
  run_options kept;
  REQUIRE_FALSE(parse(kept, {"local", "--algo", "r2d2", "--checkpoint-replay", "--adam-epsilon",
                             "1e-3", "--learning-rate", "1e-4"}));
  CHECK(seedrl::app::make_learner_config(kept).checkpoint_replay);
  const auto adam = seedrl::app::run_adam(kept, 5e-4);  // SEED's R2D2 optimizer
  CHECK(adam.epsilon == 1e-3);
  CHECK(adam.learning_rate == 1e-4);
  CHECK(seedrl::app::run_adam(r, 5e-4).epsilon == seedrl::adam_config{}.epsilon);
  CHECK(seedrl::app::run_adam(r, 5e-4).learning_rate == 5e-4);
  CHECK(parse(kept, {"local", "--adam-epsilon", "0"}) == 2);
  r.lr_decay = true;
  r.total_frames = 64000;
  r.r2d2.replay_ratio = 2.0;  // a step stands for 8 x 20 / 2 = 80 frames
  CHECK(*lr_decay_steps(r) == 800);

  run_options bad;
  CHECK(parse(bad, {"local", "--algo", "dqn"}) == 2);
  CHECK(parse(bad, {"local", "--ppo-advantage", "td"}) == 2);
  CHECK(parse(bad, {"local", "--ppo-epochs", "0"}) == 2);
}

TEST_CASE(
    "the flags --discount and --action-bounds reach the loss and the sampler of a continuous run",
    "[app][ppo][gaussian]") {
  using loss_type = run_loss_t<seedrl::host_trainer, float>;
  const seedrl::impala_loss_config<float> recipe{.discount = 0.97f};
  const std::vector<double> lows{-2.0, -1.0}, highs{2.0, 0.5};
  const auto torque = seedrl::action_spec::continuous(seedrl::tensor_shape{2}, lows, highs);
  run_options o;
  REQUIRE_FALSE(parse(o, {"local", "--algo", "ppo", "--discount", "0.9"}));
  const auto squashed = make_run_loss<loss_type>(o, recipe, torque);
  REQUIRE(squashed.ppo() != nullptr);
  CHECK(squashed.ppo()->config().discount == 0.9f);
  const auto& g = squashed.ppo()->distribution().gaussian;
  CHECK(g.squash);
  CHECK(g.low == std::vector<float>{-2.0f, -1.0f});
  CHECK(g.high == std::vector<float>{2.0f, 0.5f});
  const auto sampler = make_run_sampler<run_sampler_t<seedrl::host_trainer>>(o);
  CHECK(sampler.bounds == seedrl::bounds_handling::squash);
  CHECK(sampler.outputs_per_row(torque) == 4);  // two means, two log-stds

  run_options c;
  REQUIRE_FALSE(parse(c, {"local", "--algo", "impala", "--action-bounds", "clip"}));
  const auto clipped = make_run_loss<loss_type>(c, recipe, torque);
  REQUIRE(clipped.impala() != nullptr);
  CHECK(clipped.impala()->config().discount == 0.97f);  // the recipe's without --discount
  CHECK_FALSE(clipped.impala()->distribution().gaussian.squash);
  CHECK(make_run_sampler<run_sampler_t<seedrl::host_trainer>>(c).bounds ==
        seedrl::bounds_handling::clip);
  // A CUDA trainer's loss is the same; only a loss over categorical policies refuses.
  CHECK_FALSE((make_run_loss<run_loss_t<void, float>>(c, recipe, torque))
                  .impala()
                  ->distribution()
                  .gaussian.squash);
  CHECK_THROWS_WITH((make_run_loss<seedrl::impala_loss<float>>(c, recipe, torque)),
                    Catch::Contains("continuous actions need a loss over their distribution"));
  CHECK(parse(c, {"local", "--action-bounds", "wrap"}));  // refused
  CHECK(parse(c, {"local", "--discount", "1.5"}));
}

TEST_CASE(
    "the flags --normalize-observations and --scale-rewards turn on the learner's normalization",
    "[app]") {
  run_options plain;
  REQUIRE_FALSE(parse(plain, {"local"}));
  const seedrl::learner_config by_default = seedrl::app::make_learner_config(plain);
  CHECK_FALSE(by_default.normalize_observations.enabled);
  CHECK(by_default.scale_rewards.enabled);  // the vector defaults scale rewards
  run_options raw;
  REQUIRE_FALSE(parse(raw, {"local", "--scale-rewards=false"}));
  CHECK(raw.given.scale_rewards);
  const seedrl::learner_config off = seedrl::app::make_learner_config(raw);
  CHECK_FALSE(off.normalize_observations.enabled);
  CHECK_FALSE(off.scale_rewards.enabled);
  run_options o;
  REQUIRE_FALSE(parse(o, {"learner", "--normalize-observations", "--scale-rewards"}));
  CHECK(o.normalize_observations);
  CHECK(o.scale_rewards);
  const seedrl::learner_config on = seedrl::app::make_learner_config(o);
  CHECK(on.normalize_observations.enabled);
  CHECK(on.normalize_observations.clip == 10.0);
  CHECK(on.scale_rewards.enabled);
  CHECK(on.scale_rewards.clip == 10.0);
}

TEST_CASE("eval through seedrl::policy plays a checkpoint trained with normalization", "[app]") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("seedrl-app-eval-norm-" + std::to_string(::getpid()));
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {8};
  nc.lstm_size = 0;
  const seedrl::mlp_lstm_agent<float> net(nc);
  const std::string description = seedrl::describe(nc);
  const auto eval = [&](std::size_t normalized) {
    std::filesystem::remove_all(dir);
    seedrl::mlp_lstm_agent<float> copy(net);
    seedrl::checkpoint c;
    seedrl::store_parameters(c, copy);
    c.meta["network"] = description;
    if (normalized != 0) {
      // CartPole's 4 observations; statistics of 3 do not fit them.
      const std::vector<double> zeros(normalized, 0.0), ones(normalized, 1.0);
      seedrl::store_tensor(c, "observation_normalization.mean", std::span<const double>(zeros));
      seedrl::store_tensor(c, "observation_normalization.var", std::span<const double>(ones));
      c.counters["observation_normalization.count"] = 100.0;
      c.counters["reward_scaling.return_var"] = 4.0;
    }
    seedrl::write_checkpoint(dir, c);
    run_options o;
    o.checkpoint_dir = dir.string();
    o.eval_episodes = 1;
    o.envs_per_actor = 1;
    return seedrl::app::run_eval<seedrl::cartpole>(
        o, net, description, [](std::size_t i) { return seedrl::cartpole(i); });
  };
  CHECK(eval(0) == 0);
  CHECK(eval(4) == 0);  // the policy normalizes with them (test_runtime checks how)
  CHECK(eval(3) == 2);  // statistics of another observation size are refused
  std::filesystem::remove_all(dir);
}

TEST_CASE("local mode gives the learner room for all its actors' environments", "[app]") {
  run_options small;
  REQUIRE_FALSE(parse(small, {"local", "--actors", "2", "--envs-per-actor", "8"}));
  CHECK(small.max_envs == 4096);
  run_options big;
  REQUIRE_FALSE(parse(big, {"local", "--actors", "3", "--envs-per-actor", "2000"}));
  CHECK(big.max_envs == 6000);
  run_options learner;
  REQUIRE_FALSE(parse(learner, {"learner", "--envs-per-actor", "2000"}));
  CHECK(learner.max_envs == 4096);
}

TEST_CASE("the flags: --help exits 0, and every kind of bad input exits 2", "[app]") {
  const auto rc = [](std::vector<std::string> args, seedrl::app::mode_set modes = {}) {
    run_options o;
    return parse(o, std::move(args), modes);
  };
  CHECK(rc({"--help"}) == 0);
  CHECK(rc({"local", "-h"}) == 0);
  CHECK(rc({}) == 2);                             // no mode
  CHECK(rc({"train"}) == 2);                      // no such mode
  CHECK(rc({"local", "--no-such-flag"}) == 2);    // unknown flag
  CHECK(rc({"local", "extra"}) == 2);             // a second positional
  CHECK(rc({"local", "--actors", "four"}) == 2);  // malformed
  CHECK(rc({"local", "--actors", "0"}) == 2);     // out of range
  CHECK(rc({"local", "--actors"}) == 2);          // value missing
  CHECK(rc({"local", "--port", "65536"}) == 2);   // does not fit
  CHECK(rc({"local", "--learning-rate", "-1"}) == 2);
  CHECK(rc({"local", "--entropy-cost", "x"}) == 2);
  CHECK(rc({"local", "--device", "tpu"}) == 2);
  CHECK(rc({"local", "--inference-device", "tpu"}) == 2);
  CHECK(rc({"local", "--train-device", "gpu"}) == 2);
  CHECK(rc({"local", "--inference-device"}) == 2);
  CHECK(rc({"actor", "--learner", "nohost"}) == 2);
  // Several learner ranks: a duplicate, an empty item, a bad item, a negative wait.
  CHECK(rc({"actor", "--learner", "a:1,b:2,a:1"}) == 2);
  CHECK(rc({"actor", "--learner", "a:1,,b:2"}) == 2);
  CHECK(rc({"actor", "--learner", "a:1,b"}) == 2);
  CHECK(rc({"actor", "--learner", "a:1,b:2", "--home-rank-wait", "-1"}) == 2);
  CHECK(rc({"actor", "--learner", "a:1,b:2", "--actor-index", "x"}) == 2);
  CHECK(rc({"local", "--resume"}) == 2);  // needs --checkpoint-dir
  CHECK(rc({"local", "--checkpoint-dir", "d", "--resume", "--init-checkpoint", "c"}) == 2);
  CHECK(rc({"local", "--auth-secret-file", "/no/such/file"}) == 2);
  CHECK(rc({"eval"}, {.eval = false}) == 2);  // a mode the program does not offer
  CHECK(rc({"local", "--episodes", "3"}, {.eval = false}) == 2);
}

TEST_CASE("holds_network refuses a checkpoint of another network", "[app]") {
  seedrl::checkpoint c;
  CHECK(seedrl::app::holds_network(c, "mlp a"));  // says nothing: accepted
  c.meta["network"] = "mlp a";
  CHECK(seedrl::app::holds_network(c, "mlp a"));
  CHECK_FALSE(seedrl::app::holds_network(c, "mlp b", "(was it trained with --lstm?)"));
}

TEST_CASE("parse_python_env_spec reads the Python actor's --print-spec line", "[app]") {
  using seedrl::app::parse_python_env_spec;
  const auto pong = parse_python_env_spec(
      R"({"env": "ALE/Pong-v5", "observation": {"dtype": "uint8", "shape": [84, 84]}, )"
      R"("actions": 6})"
      "\n");
  REQUIRE(pong);
  CHECK(pong->actions.num_actions == 6);
  CHECK(pong->observations.type == seedrl::dtype::uint8);
  CHECK(pong->observations.shape == seedrl::tensor_shape{84, 84});
  const auto cartpole = parse_python_env_spec(
      R"({"env": "CartPole-v1", "observation": {"dtype": "float32", "shape": [4]}, "actions": 2})");
  REQUIRE(cartpole);
  CHECK(cartpole->observations.type == seedrl::dtype::float32);
  CHECK(cartpole->observations.shape == seedrl::tensor_shape{4});
  CHECK(cartpole->actions.num_actions == 2);
  CHECK_FALSE(parse_python_env_spec(""));
  CHECK_FALSE(parse_python_env_spec(R"({"observation": {"dtype": "uint8", "shape": [2]}})"));
  CHECK_FALSE(parse_python_env_spec(
      R"({"observation": {"dtype": "complex64", "shape": [2]}, "actions": 2})"));
  CHECK_FALSE(
      parse_python_env_spec(R"({"observation": {"dtype": "uint8", "shape": [0]}, "actions": 2})"));
  CHECK_FALSE(
      parse_python_env_spec(R"({"observation": {"dtype": "uint8", "shape": [2]}, "actions": 0})"));
}

TEST_CASE("parse_python_env_spec reads a Box action space with per-element bounds", "[app]") {
  using seedrl::app::parse_python_env_spec;
  const double inf = std::numeric_limits<double>::infinity();
  // What python -m seedrl_actor --env HalfCheetah-v5 --print-spec prints.
  const auto cheetah = parse_python_env_spec(
      R"({"env": "HalfCheetah-v5", "observation": {"dtype": "float64", "shape": [17]}, )"
      R"("action": {"kind": "continuous", "shape": [6], "low": [-1.0, -1.0, -1.0, -1.0, -1.0, )"
      R"(-1.0], "high": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]}})"
      "\n");
  REQUIRE(cheetah);
  CHECK(cheetah->observations.type == seedrl::dtype::float64);
  CHECK(cheetah->observations.shape == seedrl::tensor_shape{17});
  CHECK(cheetah->actions == seedrl::action_spec::continuous({6}, -1.0, 1.0));
  // Row-major per-element bounds, unbounded sides as Python's json writes them.
  const auto box = parse_python_env_spec(
      R"({"env": "seedrl_toy/BoxAction-v0", "observation": {"dtype": "uint8", "shape": [8]}, )"
      R"("action": {"kind": "continuous", "shape": [2, 2], "low": [-1.0, -2.0, 0.0, )"
      R"(-Infinity], "high": [1.0, 0.5, 3.0, Infinity]}})");
  REQUIRE(box);
  CHECK(box->observations.shape == seedrl::tensor_shape{8});
  CHECK(box->actions ==
        seedrl::action_spec::continuous({2, 2}, {-1.0, -2.0, 0.0, -inf}, {1.0, 0.5, 3.0, inf}));
  CHECK_FALSE(box->actions.uniform_bounds());
  const auto obs = std::string(R"({"observation": {"dtype": "float32", "shape": [3]}, )");
  // Bounds that do not match the shape, low >= high, NaN, or no kind: refused.
  CHECK_FALSE(parse_python_env_spec(
      obs + R"("action": {"kind": "continuous", "shape": [2], "low": [-1.0], "high": [1.0]}})"));
  CHECK_FALSE(parse_python_env_spec(
      obs + R"("action": {"kind": "continuous", "shape": [1], "low": [1.0], "high": [1.0]}})"));
  CHECK_FALSE(parse_python_env_spec(
      obs + R"("action": {"kind": "continuous", "shape": [1], "low": [NaN], "high": [1.0]}})"));
  CHECK_FALSE(parse_python_env_spec(obs + R"("action": {"shape": [1], "low": [0], "high": [1]}})"));
  CHECK_FALSE(parse_python_env_spec(
      obs + R"("action": {"kind": "continuous", "shape": [1], "low": [x], "high": [1.0]}})"));
}

namespace {

/// Parses `args` with the shared flags and `recipe`'s, then (when that succeeded) calls
/// `after_parse` with the command line; returns parse_command_line's result.
template <class Recipe>
std::optional<int> parse_with(Recipe& recipe, run_options& o, std::vector<std::string> args,
                              const std::function<void(const CLI::App&)>& after_parse = {}) {
  CLI::App cli("test", "seedrl_test");
  seedrl::app::add_run_flags(cli, o);
  recipe.add_flags(cli);
  args.insert(args.begin(), "seedrl_test");
  std::vector<const char*> argv;
  for (const auto& a : args)
    argv.push_back(a.c_str());
  const auto rc = seedrl::app::parse_command_line(cli, static_cast<int>(argv.size()), argv.data());
  if (!rc && after_parse)
    after_parse(cli);
  return rc;
}

template <class TorsoConfig>
using named_gpu_trainer = std::vector<TorsoConfig>;  // stands for a GPU trainer of TorsoConfig

}  // namespace

TEST_CASE("a continuous action space changes the vector defaults where the command line left them",
          "[app][continuous]") {
  // What mlp_recipe's programs and seedrl_gym do once the spec is known.
  const auto settle = [](std::vector<std::string> args, const seedrl::action_spec& actions,
                         run_options& o, seedrl::app::mlp_recipe& recipe) {
    REQUIRE_FALSE(parse_with(recipe, o, std::move(args), [&](const CLI::App& cli) {
      recipe.use_action_kind_defaults(o, actions, cli);
    }));
  };
  const auto box = seedrl::action_spec::continuous({6}, -1.0, 1.0);
  const seedrl::observation_spec obs{seedrl::dtype::float32, seedrl::tensor_shape({17})};

  run_options o;
  seedrl::app::mlp_recipe r;
  settle({"local"}, box, o, r);
  CHECK(o.unroll_length == 64);
  CHECK(o.batch_size == 32);
  CHECK(o.ppo.epochs == 10);
  CHECK(o.ppo.minibatches == 32);
  CHECK(o.ppo.normalize_advantages);
  CHECK(o.lr_decay);
  CHECK(o.normalize_observations);
  CHECK(o.scale_rewards);
  CHECK(o.max_grad_norm == 0.5);
  CHECK(o.action_bounds == seedrl::bounds_handling::clip);
  CHECK(r.learning_rate == r.continuous_learning_rate);
  const auto shape = r.shape(o, obs, box);
  CHECK(shape.separate_value_network);
  CHECK(shape.orthogonal_init);
  REQUIRE(shape.log_std_init);
  CHECK(*shape.log_std_init == -0.5);
  CHECK(shape.lstm_size == 0);
  CHECK(shape.hidden_sizes == std::vector<std::ptrdiff_t>{128, 128});

  // Every flag given keeps its value; --ppo-minibatches follows a given batch size.
  run_options g;
  seedrl::app::mlp_recipe rg;
  settle({"local", "--unroll-length", "20", "--batch-size", "8", "--lr-decay=false",
          "--normalize-observations=false", "--max-grad-norm", "40", "--action-bounds", "squash",
          "--orthogonal-init=false", "--log-std-init", "0", "--separate-value-network=false",
          "--ppo-epochs", "4", "--ppo-normalize-advantages=false"},
         box, g, rg);
  CHECK_FALSE(g.ppo.normalize_advantages);
  CHECK(g.unroll_length == 20);
  CHECK(g.batch_size == 8);
  CHECK(g.ppo.minibatches == 8);
  CHECK(g.ppo.epochs == 4);
  CHECK_FALSE(g.lr_decay);
  CHECK_FALSE(g.normalize_observations);
  CHECK(g.max_grad_norm == 40.0);
  CHECK(g.action_bounds == seedrl::bounds_handling::squash);
  const auto given = rg.shape(g, obs, box);
  CHECK_FALSE(given.separate_value_network);
  CHECK(given.reward_and_action_inputs);
  CHECK_FALSE(given.orthogonal_init);
  CHECK(*given.log_std_init == 0.0);
  // --lstm keeps one network (the LSTM feeds both heads); --learning-rate wins in make().
  run_options l;
  seedrl::app::mlp_recipe rl;
  settle({"local", "--lstm", "--learning-rate", "1e-3"}, box, l, rl);
  CHECK_FALSE(rl.shape(l, obs, box).separate_value_network);
  // seedrl_gym's recipe registers the same flags (its own --hidden-sizes besides) and applies
  // the same changes to vector observations, none to images.
  {
    run_options go;
    seedrl::app::gym_recipe gym;
    REQUIRE_FALSE(parse_with(gym, go, {"local", "--max-grad-norm", "2"}, [&](const CLI::App& cli) {
      gym.use_kind_defaults(go, obs, box, cli);
    }));
    CHECK(go.ppo.epochs == 10);
    CHECK(go.max_grad_norm == 2.0);
    CHECK(gym.vector.shape(go, obs, box).separate_value_network);
    CHECK(gym.vector.shape(go, obs, box).hidden_sizes == std::vector<std::ptrdiff_t>{128, 128});
    // A given --hidden-sizes keeps its widths.
    run_options gw;
    seedrl::app::gym_recipe given_widths;
    REQUIRE_FALSE(parse_with(
        given_widths, gw, {"local", "--hidden-sizes", "32,16"},
        [&](const CLI::App& cli) { given_widths.use_kind_defaults(gw, obs, box, cli); }));
    CHECK(given_widths.vector.shape(gw, obs, box).hidden_sizes ==
          std::vector<std::ptrdiff_t>{32, 16});
  }
  // Discrete actions keep the vector set as constructed.
  run_options d;
  seedrl::app::mlp_recipe rd;
  settle({"local"}, seedrl::action_spec::discrete(2), d, rd);
  CHECK(d.unroll_length == 20);
  CHECK(d.batch_size == 16);
  CHECK(d.ppo.epochs == 4);
  CHECK_FALSE(d.ppo.normalize_advantages);
  CHECK_FALSE(d.normalize_observations);
  CHECK(d.max_grad_norm == 40.0);
  CHECK(rd.learning_rate == 1e-3);
  CHECK_FALSE(rd.shape(d, obs, seedrl::action_spec::discrete(2)).separate_value_network);
  CHECK(rd.shape(d, obs, seedrl::action_spec::discrete(2)).hidden_sizes ==
        std::vector<std::ptrdiff_t>{64, 64});
}

TEST_CASE("pixel_recipe builds the network its flags name, sized by the frames", "[app]") {
  using recipe_t = seedrl::app::pixel_recipe<named_gpu_trainer>;
  const seedrl::observation_spec frames{seedrl::dtype::uint8, {84, 84}};
  const auto actions = seedrl::action_spec::discrete(3);
  run_options o;
  seedrl::app::use_pixel_defaults(o);
  CHECK(o.learning_rate == 4.8e-4);
  CHECK_FALSE(o.target_return);

  recipe_t nature;
  REQUIRE_FALSE(parse_with(nature, o,
                           {"local", "--conv-channels", "8,16,16", "--dense-size", "64",
                            "--lstm-size", "32", "--frame-stack", "2", "--seed", "5"}));
  std::string description;
  const int rc = nature.with_agent(o, frames, actions, [&](auto& parts, auto gpu) {
    description = parts.description;
    CHECK(parts.network.num_actions() == 3);
    CHECK(parts.network.stack_config().depth == 2);
    CHECK(parts.loss.max_abs_reward == 1.0f);  // SEED's Atari reward clip
    CHECK(
        std::is_same_v<typename decltype(gpu)::type, named_gpu_trainer<seedrl::nature_cnn_config>>);
    return 7;
  });
  CHECK(rc == 7);
  CHECK(description.find("nature_cnn_lstm_agent height=84 width=84 channels=2") == 0);
  CHECK(description.find("convs=8,16,16 dense=64 lstm=32") != std::string::npos);

  recipe_t resnet;
  run_options o2;
  REQUIRE_FALSE(parse_with(resnet, o2, {"eval", "--network", "resnet", "--conv-channels", "4,8"}));
  resnet.with_agent(o2, {seedrl::dtype::uint8, {10, 12, 1}}, actions, [&](auto& parts, auto gpu) {
    description = parts.description;
    CHECK(std::is_same_v<typename decltype(gpu)::type,
                         named_gpu_trainer<seedrl::impala_resnet_config>>);
    return 0;
  });
  CHECK(description.find("impala_resnet_lstm_agent height=10 width=12 channels=4") == 0);

  // Colour frames are refused at start, saying what was sent.
  const auto none = [](auto&, auto) { return 0; };
  CHECK_THROWS_WITH(resnet.with_agent(o2, {seedrl::dtype::uint8, {84, 84, 3}}, actions, none),
                    Catch::Contains("uint8 [84, 84, 3]"));
}

TEST_CASE("pixel_recipe's flags: bad values exit 2", "[app]") {
  const auto rc = [](std::vector<std::string> args) {
    seedrl::app::pixel_recipe<> recipe;
    run_options o;
    return parse_with(recipe, o, std::move(args));
  };
  CHECK(rc({"local", "--conv-channels", "8,16"}) == 2);  // the Nature CNN has 3 convolutions
  CHECK_FALSE(rc({"local", "--network", "resnet", "--conv-channels", "8,16"}));
  CHECK(rc({"local", "--network", "vgg"}) == 2);
  CHECK(rc({"local", "--frame-stack", "0"}) == 2);
  CHECK(rc({"local", "--conv-channels", "8,x,16"}) == 2);
}

TEST_CASE("pixel_recipe takes a checkpoint's network unless network flags are given", "[app]") {
  const std::string held =
      "impala_resnet_lstm_agent height=84 width=84 channels=2 channels_last=0 actions=3 "
      "stacks=4,8 blocks=1 dense=64 lstm=32 max_abs_input_reward=1 scale=0.00392156862745098";
  seedrl::app::pixel_recipe<> plain;
  run_options o;
  // Inside the parse: the recipe reads its flags' counts, which live in the CLI::App.
  REQUIRE_FALSE(parse_with(plain, o, {"eval", "--checkpoint-dir", "d"},
                           [&](const CLI::App&) { plain.use_checkpoint_network(held); }));
  CHECK(plain.network == "resnet");
  CHECK(plain.conv_channels == std::vector<std::ptrdiff_t>{4, 8});
  CHECK(plain.resnet_blocks == 1);
  CHECK(plain.frame_stack == 2);
  CHECK(plain.dense_size == 64);
  CHECK(plain.lstm_size == 32);
  // The rebuilt network's description is the checkpoint's, so eval accepts it.
  std::string description;
  plain.with_agent(o, {seedrl::dtype::uint8, {84, 84}}, seedrl::action_spec::discrete(3),
                   [&](auto& parts, auto) {
                     description = parts.description;
                     return 0;
                   });
  CHECK(description == held);

  seedrl::app::pixel_recipe<> flagged;
  run_options o2;
  REQUIRE_FALSE(parse_with(flagged, o2, {"eval", "--frame-stack", "3"},
                           [&](const CLI::App&) { flagged.use_checkpoint_network(held); }));
  CHECK(flagged.network == "nature");  // the flags name the network: eval compares
  CHECK(flagged.frame_stack == 3);
  seedrl::app::pixel_recipe<> other;
  REQUIRE_FALSE(parse_with(other, o2, {"eval"}, [&](const CLI::App&) {
    other.use_checkpoint_network("mlp_lstm_agent observation_size=4 actions=2");
  }));
  CHECK(other.network == "nature");  // not a pixel agent: left for eval to refuse
  CHECK(other.conv_channels.empty());
}

TEST_CASE(
    "the device flags: --device sets where the learner trains and infers, the split flags override "
    "it",
    "[app]") {
  using seedrl::compute_device;
  using seedrl::app::device_flag;
  using seedrl::app::inference_device;
  using seedrl::app::train_device;
  run_options plain;
  REQUIRE_FALSE(parse(plain, {"local"}));
  CHECK(train_device(plain) == "cpu");
  CHECK(inference_device(plain) == "cpu");
  CHECK(seedrl::app::make_learner_config(plain).inference_device == compute_device::cpu);
  run_options both;
  REQUIRE_FALSE(parse(both, {"local", "--device", "cuda"}));
  CHECK(train_device(both) == "cuda");
  CHECK(inference_device(both) == "cuda");
  CHECK(device_flag(both, false) == "--device cuda");
  CHECK(device_flag(both, true) == "--device cuda");
  CHECK(seedrl::app::make_learner_config(both).inference_device == compute_device::cuda);
  run_options split;
  REQUIRE_FALSE(parse(split, {"local", "--device", "cuda", "--inference-device", "cpu"}));
  CHECK(train_device(split) == "cuda");
  CHECK(inference_device(split) == "cpu");
  CHECK(device_flag(split, true) == "--inference-device cpu");
  CHECK(seedrl::app::make_learner_config(split).inference_device == compute_device::cpu);
  run_options infer_only;
  REQUIRE_FALSE(parse(infer_only, {"learner", "--inference-device", "cuda"}));
  CHECK(train_device(infer_only) == "cpu");
  CHECK(inference_device(infer_only) == "cuda");
  CHECK(device_flag(infer_only, true) == "--inference-device cuda");
  CHECK(device_flag(infer_only, false) == "--device cpu");
  CHECK(seedrl::app::make_learner_config(infer_only).inference_device == compute_device::cuda);
  run_options train_only;
  REQUIRE_FALSE(parse(train_only, {"learner", "--train-device", "cuda"}));
  CHECK(train_device(train_only) == "cuda");
  CHECK(inference_device(train_only) == "cpu");
  CHECK(device_flag(train_only, false) == "--train-device cuda");
}

namespace {

/// Reads what `f` writes to stderr.
template <class F>
std::string stderr_of(F&& f) {
  std::fflush(stderr);
  char name[] = "/tmp/seedrl_test_stderr_XXXXXX";
  const int fd = mkstemp(name);
  REQUIRE(fd >= 0);
  const int saved = dup(2);
  dup2(fd, 2);
  std::forward<F>(f)();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  std::ifstream in(name);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(name);
  return text;
}

/// A GPU trainer that finds no device, as a cuda:: trainer does without one.
struct fake_recipe {};
struct fake_gpu_trainer {
  using scalar_type = float;
  using recipe_type = fake_recipe;
  explicit fake_gpu_trainer(int) { throw std::runtime_error("no CUDA device is visible"); }
};

/// A GPU inference engine that finds no device, as cuda::inference_engine does without one.
struct absent_gpu_engine : seedrl::cpu_inference_engine<seedrl::mlp_lstm_agent<float>> {
  absent_gpu_engine(const seedrl::mlp_lstm_agent<float>& net,
                    const seedrl::inference_engine_config& c)
      : seedrl::cpu_inference_engine<seedrl::mlp_lstm_agent<float>>(net, c) {
    throw std::runtime_error("no CUDA device is visible (cudaGetDeviceCount: no device)");
  }
};

}  // namespace

TEST_CASE("asking for cuda without CUDA or without a device exits 2 with a message", "[app]") {
  using seedrl::app::gpu_engine_for_t;
  static_assert(std::is_void_v<gpu_engine_for_t<void>>);
  static_assert(std::is_same_v<gpu_engine_for_t<fake_gpu_trainer>,
                               seedrl::cuda::inference_engine<float, fake_recipe>>);
  const auto choose = [](std::vector<std::string> args, bool* ran) {
    run_options o;
    REQUIRE_FALSE(parse(o, std::move(args)));
    return seedrl::app::with_trainer<void>(o, "seedrl_test", [&](auto) {
      *ran = true;
      return 0;
    });
  };
  for (const auto& [args, flag] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"local", "--device", "cuda"}, "--device cuda"},
           {{"local", "--inference-device", "cuda"}, "--inference-device cuda"},
           {{"local", "--train-device", "cuda"}, "--train-device cuda"},
           {{"local", "--device", "cuda", "--train-device", "cpu"}, "--device cuda"}}) {
    bool ran = false;
    int rc = 0;
    const auto err = stderr_of([&, &a = args] { rc = choose(a, &ran); });
    CHECK(rc == 2);
    CHECK_FALSE(ran);
    CHECK(err.rfind(flag + ": this seedrl_test was built without CUDA", 0) == 0);
  }
  bool ran = false;
  CHECK(choose({"local", "--device", "cpu"}, &ran) == 0);
  CHECK(ran);

  // Built with CUDA but no device: the GPU trainer refuses, with its message.
  run_options o;
  REQUIRE_FALSE(parse(o, {"local", "--train-device", "cuda", "--inference-device", "cpu"}));
  ran = false;
  int rc = 0;
  const auto err = stderr_of([&] {
    rc = seedrl::app::with_trainer<fake_gpu_trainer>(o, "seedrl_test", [&](auto) {
      ran = true;
      return 0;
    });
  });
  CHECK(rc == 2);
  CHECK_FALSE(ran);
  CHECK(err == "--train-device cuda: no CUDA device is visible\n");
}

TEST_CASE("run_learner exits 2 naming the flag when the GPU inference engine cannot start",
          "[app]") {
  using net_t = seedrl::mlp_lstm_agent<float>;
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {8};
  nc.lstm_size = 4;
  const seedrl::app::agent_parts<net_t> parts{net_t(nc), "mlp test", seedrl::adam<float>()};
  seedrl::app::environment_info env;
  env.name = "cartpole";
  env.observations = seedrl::cartpole::observation_spec();
  env.actions = seedrl::cartpole::action_spec();
  run_options o;
  REQUIRE_FALSE(parse(o, {"learner", "--inference-device", "cuda", "--no-auth", "--max-envs", "8",
                          "--inference-batch", "4"}));
  int rc = 0;
  const auto err =
      stderr_of([&] { rc = seedrl::app::run_learner<absent_gpu_engine>(o, nullptr, parts, env); });
  CHECK(rc == 2);
  CHECK(err.find("--inference-device cuda: no CUDA device is visible") != std::string::npos);
  CHECK(err.find("listening") == std::string::npos);
}

TEST_CASE("resume and eval adopt the settings a checkpoint keeps, and refuse flags against them",
          "[app]") {
  using seedrl::app::adopt_checkpoint_settings;
  using names = seedrl::input_normalizer<float>;
  const auto continuous = seedrl::action_spec::continuous({1}, -2.0, 2.0);
  const auto discrete = seedrl::action_spec::discrete(2);

  // What a learner with --scale-rewards --action-bounds clip saves.
  run_options trained;
  REQUIRE_FALSE(parse(trained, {"local", "--scale-rewards", "--action-bounds", "clip"}));
  seedrl::learner_config lc;
  seedrl::app::record_checkpoint_settings(trained, continuous, lc);
  CHECK(lc.checkpoint_meta.at("action_bounds") == "clip");
  seedrl::checkpoint c;
  c.meta = lc.checkpoint_meta;
  c.counters[names::return_var_name] = 4.0;
  c.source = "ckpt-000000000010.seedrl";

  // No flags: everything is adopted, said on stdout.
  run_options o;
  REQUIRE_FALSE(parse(o, {"local", "--resume", "--checkpoint-dir", "d"}));
  REQUIRE(o.action_bounds == seedrl::bounds_handling::squash);
  CHECK(adopt_checkpoint_settings(o, c, continuous, "resume"));
  CHECK(o.scale_rewards);
  CHECK(o.action_bounds == seedrl::bounds_handling::clip);
  CHECK_FALSE(o.normalize_observations);

  // A program's default that the checkpoint did not use is turned off, not refused.
  run_options program_default;
  program_default.normalize_observations = true;
  REQUIRE_FALSE(parse(program_default, {"eval", "--checkpoint-dir", "d"}));
  CHECK(adopt_checkpoint_settings(program_default, c, continuous, "eval"));
  CHECK_FALSE(program_default.normalize_observations);

  // Flags given against the checkpoint are refused, whichever way they point.
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"eval", "--action-bounds", "squash"},
                                             {"eval", "--scale-rewards=false"},
                                             {"eval", "--normalize-observations"}}) {
    INFO(args.back());
    run_options against;
    REQUIRE_FALSE(parse(against, args));
    CHECK_FALSE(adopt_checkpoint_settings(against, c, continuous, "eval"));
  }
  // Flags that agree are fine.
  run_options agree;
  REQUIRE_FALSE(parse(agree, {"eval", "--action-bounds", "clip", "--scale-rewards"}));
  CHECK(adopt_checkpoint_settings(agree, c, continuous, "eval"));

  // Discrete actions have no bounds to keep; an old checkpoint without the meta keeps the
  // flag's; an unknown value is refused.
  lc = {};
  seedrl::app::record_checkpoint_settings(trained, discrete, lc);
  CHECK_FALSE(lc.checkpoint_meta.contains("action_bounds"));
  seedrl::checkpoint old = c;
  old.meta.erase("action_bounds");
  run_options keep;
  REQUIRE_FALSE(parse(keep, {"eval", "--action-bounds", "squash"}));
  CHECK(adopt_checkpoint_settings(keep, old, continuous, "eval"));
  CHECK(keep.action_bounds == seedrl::bounds_handling::squash);
  seedrl::checkpoint odd = c;
  odd.meta["action_bounds"] = "fold";
  run_options any;
  REQUIRE_FALSE(parse(any, {"eval"}));
  CHECK_FALSE(adopt_checkpoint_settings(any, odd, continuous, "eval"));
}

TEST_CASE("learner ranks: what must match is hashed, what must differ differs", "[app]") {
  using namespace seedrl::app;
  run_options o;
  o.actors = 3;
  seedrl::learner_config lc = make_learner_config(o);
  const auto h = run_settings_hash(o, lc, "PPO");
  CHECK(run_settings_hash(o, lc, "PPO") == h);
  CHECK(run_settings_hash(o, lc, "IMPALA (V-trace)") != h);
  run_options other = o;
  other.entropy_cost = 0.02;
  CHECK(run_settings_hash(other, lc, "PPO") != h);
  seedrl::learner_config bigger = lc;
  bigger.batch_size += 1;
  CHECK(run_settings_hash(o, bigger, "PPO") != h);
  bigger = lc;
  bigger.checkpoint_meta["network"] = "MLP 64-64";
  CHECK(run_settings_hash(o, bigger, "PPO") != h);
  // Rank 0 keeps a lone learner's seeds; rank 1's actors follow rank 0's, its sampling differs.
  CHECK(rank_seeds(o, 0).first_actor == o.seed * 1000 + 1);
  CHECK(rank_seeds(o, 0).action_sampling == o.seed);
  CHECK(rank_seeds(o, 1).first_actor == o.seed * 1000 + 1 + 3);
  CHECK(rank_seeds(o, 1).action_sampling != o.seed);
  CHECK(rank_port(9000, 0) == 9000);
  CHECK(rank_port(9000, 2) == 9002);
  CHECK(rank_port(0, 2) == 0);  // any free port, whatever the rank
  CHECK_THROWS_AS(rank_port(65535, 1), std::invalid_argument);
  CHECK(exit_status_of(seedrl::run_stop::solved, o) == 0);
  CHECK(exit_status_of(seedrl::run_stop::frames_done, o) == 1);  // below the target
  run_options no_target = o;
  no_target.target_return.reset();
  CHECK(exit_status_of(seedrl::run_stop::frames_done, no_target) == 0);
  CHECK(exit_status_of(seedrl::run_stop::signal, o) == 130);
  CHECK(exit_status_of(seedrl::run_stop::failed, o) == 1);
  CHECK(exit_status_of(seedrl::run_stop::actors_gone, o) == 1);
}
