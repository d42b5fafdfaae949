// parameter_source, the plug point through which the inference loop takes parameters: the host
// store (the default) and a channel of "device" buffers (here host buffers rotated by
// triple_buffer_index, as cuda::device_parameter_channel rotates device ones), handed to an
// engine that keeps two parameter sets and swaps between batches (DeviceParameterEngine). Each
// set is stamped with its version in every element, so a torn set (two versions mixed), a swap
// in the middle of a batch or a version the loop records that is not the set's show up. Then a
// whole learner with a trainer that publishes into such a channel: the loop takes the sets from
// it, the policy lag counts in the channel's numbering, and the host store catches up at the end.

#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include "seedrl/env/cartpole.hpp"
#include "seedrl/io/checkpoint.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/runtime/any_inference_engine.hpp"
#include "seedrl/runtime/cpu_inference_engine.hpp"
#include "seedrl/runtime/inference_engine.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/runtime/parameter_source.hpp"
#include "seedrl/runtime/parameter_store.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/runtime/triple_buffer.hpp"
#include "seedrl/transport/in_process.hpp"

using namespace std::chrono_literals;

namespace {

using net_t = seedrl::mlp_lstm_agent<float>;
constexpr std::size_t set_width = 64;  // elements of a fake parameter set

net_t make_net(int num_actions = 2) {
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 4;
  c.num_actions = num_actions;
  c.hidden_sizes = {8};
  c.lstm_size = 4;
  c.seed = 5;
  return net_t(c);
}

/// The channel's logic on the host: three buffers rotated by triple_buffer_index; the writer
/// stamps every element of a set with its version. Elements are atomics (relaxed), so a broken
/// hand-off shows up as a torn set instead of a data race. The "stream" counts the copies
/// enqueued on it.
struct fake_channel {
  using scalar_type = float;
  using stream_type = int*;

  fake_channel() {
    for (auto& b : buffers)
      b = std::vector<std::atomic<float>>(set_width);
  }

  /// The writer (the trainer): the next set, stamped, then published; returns its version.
  std::uint64_t publish_stamped() {
    auto& b = buffers[static_cast<std::size_t>(index.write_index())];
    const auto next = static_cast<float>(index.version() + 1);
    for (std::size_t i = 0; i < b.size(); ++i) {
      b[i].store(next, std::memory_order_relaxed);
      if (i == b.size() / 2)
        std::this_thread::yield();  // widen the window in which a set is half written
    }
    return index.publish();
  }

  std::uint64_t version() const { return index.version(); }

  bool copy_if_newer(float* dst, int* stream, std::uint64_t* version) {
    const auto a = index.acquire();
    if (!a || a->version <= *version)
      return false;
    const auto& b = buffers[static_cast<std::size_t>(a->index)];
    for (std::size_t i = 0; i < b.size(); ++i)
      dst[i] = b[i].load(std::memory_order_relaxed);
    ++*stream;
    *version = a->version;
    return true;
  }

  std::array<std::vector<std::atomic<float>>, 3> buffers;
  seedrl::triple_buffer_index index;
};
using channel_source = seedrl::channel_parameter_source<fake_channel>;

/// What the device engine saw.
struct device_log {
  std::mutex mutex;
  std::uint64_t batches = 0, torn = 0, changed_in_batch = 0, backwards = 0, store_updates = 0;
  float first_stamp = -1.0f, last_stamp = -1.0f;
  int copies = 0;  // enqueued on its "stream"
};
device_log& log_of_device_engine() {
  static device_log log;
  return log;
}

/// An engine that keeps its parameters "on a device": two sets of set_width values, one in use
/// and one spare, swapped by update_parameters_on_device. Its step reads the set in use at the
/// start and at the end (with a yield between, while the trainer may publish) and logs whether
/// it was whole (one stamp), unchanged, and not older than the last batch's. Logits make the
/// host sampler choose action slot % 2.
template <class Net>
struct device_engine {
  using scalar_type = float;
  std::size_t envs, batch, width, policy;
  std::vector<float> zeros;
  std::array<std::vector<float>, 2> sets{std::vector<float>(set_width, 0.0f),
                                         std::vector<float>(set_width, 0.0f)};
  std::size_t current = 0;
  int stream = 0;

  device_engine(const Net& net, const seedrl::inference_engine_config& c)
      : envs(c.max_envs),
        batch(c.max_batch),
        width(static_cast<std::size_t>(net.state_size())),
        policy(c.policy_width),
        zeros(width) {}
  std::size_t max_envs() const { return envs; }
  std::size_t max_batch() const { return batch; }
  std::size_t state_width() const { return width; }
  std::size_t policy_width() const { return policy; }
  void reset_state(std::size_t) {}
  std::span<const float> state_before(std::size_t) const { return zeros; }

  /// The stamp of the set in use, or -1 when it is torn.
  float stamp() const {
    const auto& s = sets[current];
    return std::all_of(s.begin(), s.end(), [&](float x) { return x == s[0]; }) ? s[0] : -1.0f;
  }

  void infer(std::span<const std::uint32_t> slots, const seedrl::agent_step_input<float>&,
             const seedrl::agent_step_output<float>& out) {
    const float before = stamp();
    std::this_thread::yield();
    for (std::size_t r = 0; r < slots.size(); ++r) {
      for (std::size_t a = 0; a < policy; ++a)
        out.logits[r * policy + a] = a == slots[r] % 2 ? 100.0f : -100.0f;
      out.values[r] = 0.0f;
    }
    const float after = stamp();
    auto& log = log_of_device_engine();
    std::lock_guard lock(log.mutex);
    ++log.batches;
    log.torn += before < 0.0f || after < 0.0f ? 1 : 0;
    log.changed_in_batch += before != after ? 1 : 0;
    log.backwards += before < log.last_stamp ? 1 : 0;
    if (log.first_stamp < 0.0f)
      log.first_stamp = before;
    log.last_stamp = before;
    log.copies = stream;
  }
  bool update_parameters(const seedrl::parameter_store<float>&, std::uint64_t*) {
    auto& log = log_of_device_engine();
    std::lock_guard lock(log.mutex);
    ++log.store_updates;
    return false;
  }
  bool update_parameters_on_device(const seedrl::device_parameter_copy<float>& copy) {
    if (!copy(sets[1 - current].data(), &stream))
      return false;
    current = 1 - current;
    return true;
  }
};
static_assert(seedrl::DeviceParameterEngine<device_engine<net_t>>);
static_assert(!seedrl::DeviceParameterEngine<seedrl::cpu_inference_engine<net_t>>);

using any_device_t = seedrl::any_inference_engine<net_t, device_engine<net_t>>;
static_assert(seedrl::DeviceParameterEngine<any_device_t>);

void clear_device_log() {
  auto& log = log_of_device_engine();
  std::lock_guard lock(log.mutex);
  log.batches = log.torn = log.changed_in_batch = log.backwards = log.store_updates = 0;
  log.first_stamp = log.last_stamp = -1.0f;
  log.copies = 0;
}

}  // namespace

TEST_CASE(
    "store_parameter_source hands an engine the store's sets, and host engines refuse a channel",
    "[parameter_source]") {
  const net_t net = make_net();
  const seedrl::inference_engine_config config{4, 4, 2, 1};
  seedrl::cpu_inference_engine<net_t> cpu(net, config);
  seedrl::detail::engine_parameter_target<seedrl::cpu_inference_engine<net_t>> target(cpu);
  seedrl::parameter_store<float> store;
  seedrl::store_parameter_source<float> source(store);
  std::uint64_t version = 0;
  CHECK(source.version() == 0);
  CHECK_FALSE(source.update(target, &version));  // nothing published
  net_t changed = make_net();
  for (auto& x : changed.parameters())
    x *= 2.0f;
  store.publish(changed.parameters());
  CHECK(source.version() == 1);
  CHECK(source.update(target, &version));
  CHECK(version == 1);
  CHECK_FALSE(source.update(target, &version));  // not newer
  // The CPU engine now infers with the published set: its values are the changed network's.
  seedrl::cpu_inference_engine<net_t> reference(changed, config);
  const std::uint32_t slots[] = {1};
  const float obs[4] = {0.1f, -0.2f, 0.3f, 0.4f}, rewards[1] = {0.5f};
  const std::uint8_t resets[1] = {1};
  const std::int32_t prev[1] = {1};
  std::vector<float> logits(2), values(1), want_logits(2), want_values(1);
  cpu.infer(slots, {obs, rewards, resets, prev}, {logits, values});
  reference.infer(slots, {obs, rewards, resets, prev}, {want_logits, want_values});
  CHECK(values == want_values);
  CHECK(logits == want_logits);

  // A device channel cannot reach an engine whose parameters live in host memory.
  channel_source channel;
  channel.channel().publish_stamped();
  CHECK_FALSE(seedrl::detail::takes_device_parameters(cpu));
  CHECK_THROWS_AS(channel.update(target, &version), std::logic_error);
  // any_inference_engine says which model it chose, and refuses a device set on the CPU one.
  any_device_t any_cpu(net, config);
  CHECK_FALSE(seedrl::detail::takes_device_parameters(any_cpu));
  CHECK_THROWS_AS(any_cpu.update_parameters_on_device([](float*, void*) { return true; }),
                  std::logic_error);
  auto cuda_config = config;
  cuda_config.device = seedrl::compute_device::cuda;
  any_device_t any_gpu(net, cuda_config);
  CHECK(seedrl::detail::takes_device_parameters(any_gpu));
  seedrl::detail::engine_parameter_target<any_device_t> gpu_target(any_gpu);
  std::uint64_t gpu_version = 0;
  CHECK(channel.update(gpu_target, &gpu_version));  // through the erased engine
  CHECK(gpu_version == 1);
  CHECK_FALSE(channel.update(gpu_target, &gpu_version));
}

TEST_CASE("a channel source under a concurrent writer: whole sets, swapped between batches only",
          "[parameter_source]") {
  clear_device_log();
  const net_t net = make_net();
  device_engine<net_t> engine(net, {4, 4, 2, 1});
  seedrl::detail::engine_parameter_target<device_engine<net_t>> target(engine);
  channel_source source;
  constexpr std::uint64_t sets = 5000;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (std::uint64_t v = 1; v <= sets; ++v)
      source.channel().publish_stamped();
    done = true;
  });
  // The inference loop's pattern: the source between batches, then a batch.
  std::uint64_t version = 0, taken = 0, mismatched = 0;
  const std::uint32_t slots[] = {0};
  const float obs[4] = {}, rewards[1] = {};
  const std::uint8_t resets[1] = {};
  const std::int32_t prev[1] = {};
  std::vector<float> logits(2), values(1);
  while (!done || version < sets) {
    if (source.update(target, &version)) {
      ++taken;
      // The version the loop records is the set's own.
      mismatched += engine.stamp() != static_cast<float>(version) ? 1 : 0;
    }
    engine.infer(slots, {obs, rewards, resets, prev}, {logits, values});
  }
  writer.join();
  auto& log = log_of_device_engine();
  std::lock_guard lock(log.mutex);
  CHECK(log.torn == 0);
  CHECK(log.changed_in_batch == 0);
  CHECK(log.backwards == 0);
  CHECK(mismatched == 0);
  CHECK(version == sets);
  CHECK(source.version() == sets);
  CHECK(taken > 0);
  CHECK(static_cast<std::uint64_t>(engine.stream) == taken);  // one copy per set taken
}

namespace {

/// host_trainer that also publishes on a "device" (DevicePublishingTrainer): once
/// publish_on_device was called, every step publishes a stamped set into its fake channel.
struct publishing_trainer {
  seedrl::host_trainer host;
  std::shared_ptr<channel_source> source;
  std::shared_ptr<std::atomic<int>> publish_calls = std::make_shared<std::atomic<int>>(0);

  template <class Net, class Opt, class L>
  seedrl::train_step_result train_step(const seedrl::training_batch<float>& batch, Net& net,
                                       Opt& opt, const L& loss, double max_grad_norm) {
    auto r = host.train_step(batch, net, opt, loss, max_grad_norm);
    if (source)
      source->channel().publish_stamped();
    return r;
  }
  template <class Net, class Opt>
  void sync_to_host(Net&, Opt&) {}
  template <class Net, class Opt>
  void load_from_host(Net&, Opt&) {
    if (source)
      source->channel().publish_stamped();
  }
  template <class Net, class Opt>
  std::shared_ptr<seedrl::parameter_source<float>> publish_on_device(Net&, Opt&) {
    ++*publish_calls;
    source = std::make_shared<channel_source>();
    source->channel().publish_stamped();
    return source;
  }
};
static_assert(seedrl::DevicePublishingTrainer<publishing_trainer, net_t, seedrl::adam<float>>);
static_assert(!seedrl::DevicePublishingTrainer<seedrl::host_trainer, net_t, seedrl::adam<float>>);

struct run_result {
  seedrl::learner_stats stats;
  std::uint64_t parameter_version = 0;
  int publish_calls = 0;
  bool host_copy_trained = false;  // copy_parameters after stop differs from the initial set
};

/// A short CartPole run of a learner with publishing_trainer and any_device_t on `device`;
/// with `restore`, from a weights-only checkpoint restored before start.
run_result run_publishing_learner(seedrl::compute_device device, const char* name,
                                  bool restore = false) {
  using learner_t =
      seedrl::learner<net_t, seedrl::adam<float>, seedrl::in_process_transport, publishing_trainer,
                      seedrl::impala_loss<float>, seedrl::categorical_sampler, any_device_t>;
  seedrl::learner_config lc;
  lc.max_envs = 8;
  lc.unroll_length = 4;
  lc.batch_size = 2;
  lc.batching.max_batch = 4;
  lc.batching.deadline = 1ms;
  lc.batching.max_request_rows = 8;
  lc.inference_device = device;
  publishing_trainer trainer;
  const auto calls = trainer.publish_calls;
  const net_t initial = make_net();
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{name};
  learner_t learner(lc, initial, seedrl::adam<float>(), seedrl::impala_loss<float>(),
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec(),
                    std::move(trainer));
  if (restore) {
    seedrl::checkpoint c;
    net_t weights = make_net();
    for (auto& x : weights.parameters())
      x *= 0.5f;
    seedrl::store_parameters(c, weights);
    learner.restore(c, true);
  }
  learner.start();
  learner.serve(transport.listen(endpoint));
  std::atomic<bool> stop{false};
  std::thread actor([&] {
    seedrl::actor_config ac;
    ac.num_envs = 2;
    seedrl::actor<seedrl::cartpole, std::function<seedrl::in_process_connection()>> a(
        ac, [](std::size_t) { return seedrl::cartpole(); },
        [&] { return transport.connect(endpoint); });
    a.run(stop);
  });
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (learner.stats().train_steps < 10 && learner.stats().trainer_error.empty() &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  stop = true;
  actor.join();
  learner.stop();
  run_result r;
  r.stats = learner.stats();
  r.parameter_version = learner.parameter_version();
  r.publish_calls = *calls;
  net_t copy = make_net();
  learner.copy_parameters(copy);
  r.host_copy_trained = !std::equal(copy.parameters().begin(), copy.parameters().end(),
                                    make_net().parameters().begin());
  return r;
}

}  // namespace

TEST_CASE("trainer and engine on one device: the loop takes the trainer's device sets",
          "[parameter_source]") {
  clear_device_log();
  const auto r = run_publishing_learner(seedrl::compute_device::cuda, "parameter-source-device");
  CHECK(r.stats.trainer_error.empty());
  REQUIRE(r.stats.train_steps >= 10);
  CHECK(r.publish_calls == 1);
  // One set at publish_on_device, then one per step, counted by the channel.
  CHECK(r.parameter_version == static_cast<std::uint64_t>(r.stats.train_steps) + 1);
  {
    auto& log = log_of_device_engine();
    std::lock_guard lock(log.mutex);
    CHECK(log.store_updates == 0);  // never through the host store
    CHECK(log.batches == static_cast<std::uint64_t>(r.stats.batches));
    CHECK(log.torn == 0);
    CHECK(log.changed_in_batch == 0);
    CHECK(log.backwards == 0);
    CHECK(log.first_stamp == 1.0f);  // the first batch already ran on the channel's first set
    CHECK(log.last_stamp > 1.0f);    // and later ones on trained sets
    CHECK(log.copies >= 2);
  }
  // The lag is counted in the channel's numbering on both sides: mixing it with the host
  // store's (which stays at its first version here) would wrap around.
  CHECK(r.stats.policy_lag_max <= static_cast<std::uint64_t>(r.stats.train_steps));
  CHECK(r.stats.policy_lag_mean <= static_cast<double>(r.stats.train_steps));
  // The host store caught up when training ended.
  CHECK(r.host_copy_trained);
}

TEST_CASE("an engine on the host keeps the store as its source, whatever the trainer offers",
          "[parameter_source]") {
  clear_device_log();
  const auto r = run_publishing_learner(seedrl::compute_device::cpu, "parameter-source-host");
  CHECK(r.stats.trainer_error.empty());
  REQUIRE(r.stats.train_steps >= 10);
  CHECK(r.publish_calls == 0);  // no device publication
  // The store's numbering: the constructor's set, then one per step.
  CHECK(r.parameter_version == static_cast<std::uint64_t>(r.stats.train_steps) + 1);
  CHECK(r.stats.policy_lag_max <= static_cast<std::uint64_t>(r.stats.train_steps));
  CHECK(r.host_copy_trained);
}

TEST_CASE("a restored checkpoint reaches a device engine through the channel too",
          "[parameter_source]") {
  clear_device_log();
  const auto r =
      run_publishing_learner(seedrl::compute_device::cuda, "parameter-source-restore", true);
  CHECK(r.stats.trainer_error.empty());
  REQUIRE(r.stats.train_steps >= 10);
  // publish_on_device's set, the restored one (load_from_host publishes it), one per step.
  CHECK(r.parameter_version == static_cast<std::uint64_t>(r.stats.train_steps) + 2);
  auto& log = log_of_device_engine();
  std::lock_guard lock(log.mutex);
  CHECK(log.first_stamp == 2.0f);  // the first batch ran on the restored set
  CHECK(log.torn == 0);
  CHECK(log.store_updates == 0);
  CHECK(r.stats.policy_lag_max <= static_cast<std::uint64_t>(r.stats.train_steps));
}
