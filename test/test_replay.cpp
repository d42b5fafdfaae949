// R2D2's sequence replay (seedrl/replay/sequence_replay.hpp) and its rate limiter: what goes in
// comes out (frames narrowed to uint8 exactly, or refused), FIFO eviction by bytes, draws in
// proportion to priority^alpha, importance weights, stale and bad priority updates, the memory
// check, the replay ratio held both ways with threads waiting, not spinning, until close, and
// saving and restoring the contents (replay files beside checkpoints).
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "seedrl/replay/rate_limiter.hpp"
#include "seedrl/replay/replay_file.hpp"
#include "seedrl/replay/sequence_replay.hpp"

namespace {

using seedrl::replay::sequence_replay;

/// A sequence whose every value encodes (tag, t, i), so that any misplaced value shows.
struct test_sequence {
  std::vector<float> observations, rewards, start_state;
  std::vector<std::uint8_t> dones, truncated;
  std::vector<std::int32_t> prev_actions, actions;

  test_sequence(const seedrl::replay::sequence_shape& shape, int tag) {
    const std::size_t T1 = shape.steps;
    for (std::size_t t = 0; t < T1; ++t) {
      for (std::size_t i = 0; i < shape.observation_size; ++i)
        observations.push_back(static_cast<float>((tag * 31 + t * 7 + i) % 256));
      rewards.push_back(static_cast<float>(tag) + 0.25f * static_cast<float>(t));
      dones.push_back(static_cast<std::uint8_t>((t + static_cast<std::size_t>(tag)) % 3 == 0));
      truncated.push_back(static_cast<std::uint8_t>(dones.back() != 0 && t % 2 == 0));
      prev_actions.push_back(tag * 100 + static_cast<int>(t));
      actions.push_back(tag * 100 + static_cast<int>(t) + 1);
    }
    for (std::size_t i = 0; i < shape.state_width; ++i)
      start_state.push_back(i < shape.state_frame_values ? static_cast<float>((tag + i) % 256)
                                                         : 0.5f + static_cast<float>(tag * 10 + i));
  }

  seedrl::replay::sequence_view<float> view() const {
    return {observations, rewards, dones, truncated, prev_actions, actions, start_state};
  }
};

const seedrl::replay::sequence_shape shape{
    .steps = 4, .observation_size = 5, .state_width = 6, .state_frame_values = 4};

seedrl::replay::sequence_replay_config config_for(std::size_t sequences) {
  seedrl::replay::sequence_replay_config c;
  c.max_sequences = sequences;
  return c;
}

}  // namespace

TEST_CASE("a sampled sequence is the one inserted, time-major, frames stored as uint8",
          "[replay]") {
  sequence_replay<std::uint8_t, float> replay(config_for(8), shape, 2);
  const test_sequence a(shape, 3), b(shape, 5);
  REQUIRE(replay.insert(a.view()) == 0u);
  REQUIRE(replay.insert(b.view()) == 1u);
  seedrl::random_generator rng(1);
  seedrl::replay::sampled_sequences<float> out;
  for (int round = 0; round < 20; ++round) {
    REQUIRE(replay.sample(rng, out));
    REQUIRE(out.T == 3);
    REQUIRE(out.B == 2);
    for (std::size_t col = 0; col < 2; ++col) {
      const test_sequence& want = out.ids[col] == 0 ? a : b;
      for (std::size_t t = 0; t < 4; ++t) {
        const std::size_t row = t * 2 + col;
        for (std::size_t i = 0; i < 5; ++i)
          REQUIRE(out.observations[row * 5 + i] == want.observations[t * 5 + i]);
        REQUIRE(out.rewards[row] == want.rewards[t]);
        REQUIRE(out.dones[row] == want.dones[t]);
        REQUIRE(out.truncated[row] == want.truncated[t]);
        REQUIRE(out.prev_actions[row] == want.prev_actions[t]);
        REQUIRE(out.actions[row] == want.actions[t]);
        REQUIRE(out.behaviour_log_probs[row] == 0.0f);
      }
      for (std::size_t i = 0; i < 6; ++i)
        REQUIRE(out.start_state[col * 6 + i] == want.start_state[i]);
    }
  }
  // 4 steps x (5 frames + reward + flags + two actions) + 4 frames + 2 floats of state
  CHECK(replay.bytes_per_sequence() == 4 * (5 + 4 + 1 + 8) + 4 + 2 * 4);
}

TEST_CASE("a frame uint8 cannot hold exactly is refused, naming it", "[replay]") {
  sequence_replay<std::uint8_t, float> replay(config_for(4), shape, 1);
  for (const float bad : {0.5f, 256.0f, -1.0f, std::numeric_limits<float>::quiet_NaN()}) {
    CAPTURE(bad);
    test_sequence s(shape, 1);
    s.observations[7] = bad;
    CHECK_THROWS_WITH(replay.insert(s.view()), Catch::Contains("observation value 7"));
    test_sequence f(shape, 1);
    f.start_state[2] = bad;
    CHECK_THROWS_WITH(replay.insert(f.view()), Catch::Contains("state frame value 2"));
  }
  CHECK(replay.stats().size == 0);
  test_sequence wrong(shape, 1);
  wrong.rewards.pop_back();
  CHECK_THROWS_WITH(replay.insert(wrong.view()), Catch::Contains("rewards holds 3 values"));
}

TEST_CASE("the byte bound evicts the oldest sequences first", "[replay]") {
  auto config = config_for(100);
  sequence_replay<std::uint8_t, float> probe(config, shape, 1);
  config.max_bytes = probe.bytes_per_sequence() * 7 / 2;  // room for 3
  sequence_replay<std::uint8_t, float> replay(config, shape, 1);
  REQUIRE(replay.capacity() == 3);
  for (int tag = 0; tag < 5; ++tag)
    REQUIRE(replay.insert(test_sequence(shape, tag).view()) == static_cast<std::uint64_t>(tag));
  const auto s = replay.stats();
  CHECK(s.size == 3);
  CHECK(s.inserted == 5);
  CHECK(s.bytes_stored == 3 * replay.bytes_per_sequence());
  seedrl::random_generator rng(2);
  seedrl::replay::sampled_sequences<float> out;
  std::map<std::uint64_t, int> seen;
  for (int i = 0; i < 300; ++i) {
    REQUIRE(replay.sample(rng, out));
    ++seen[out.ids[0]];
    // the data drawn is the id's own
    REQUIRE(out.rewards[0] == static_cast<float>(out.ids[0]));
  }
  CHECK(seen.size() == 3);
  CHECK(seen.begin()->first == 2);
}

TEST_CASE("draws follow priority^alpha and weights correct them", "[replay]") {
  auto config = config_for(4);
  config.priority_exponent = 0.5;
  config.importance_exponent = 0.6;
  sequence_replay<float, float> replay(config, shape, 4);
  std::vector<std::uint64_t> ids;
  for (int tag = 0; tag < 4; ++tag)
    ids.push_back(*replay.insert(test_sequence(shape, tag).view()));
  const std::vector<double> priorities = {1, 4, 9, 16};  // ^0.5: 1 2 3 4 -> P = 0.1 .. 0.4
  replay.update_priorities(ids, priorities);
  CHECK(replay.stats().mean_priority == Approx(7.5));
  seedrl::random_generator rng(3);
  seedrl::replay::sampled_sequences<float> out;
  std::vector<double> count(4, 0.0);
  const int rounds = 5000;
  for (int i = 0; i < rounds; ++i) {
    REQUIRE(replay.sample(rng, out));
    for (std::size_t b = 0; b < 4; ++b) {
      const std::uint64_t id = out.ids[b];
      count[id] += 1.0;
      REQUIRE(out.probabilities[b] == Approx(static_cast<double>(id + 1) / 10.0));
    }
    // w = (N P)^-0.6 over the batch's largest
    double largest = 0.0;
    for (std::size_t b = 0; b < 4; ++b)
      largest = std::max(largest, std::pow(4.0 * out.probabilities[b], -0.6));
    for (std::size_t b = 0; b < 4; ++b)
      REQUIRE(out.importance_weights[b] ==
              Approx(std::pow(4.0 * out.probabilities[b], -0.6) / largest));
  }
  double chi2 = 0.0;
  for (std::size_t i = 0; i < 4; ++i) {
    const double expected = 4.0 * rounds * static_cast<double>(i + 1) / 10.0;
    chi2 += (count[i] - expected) * (count[i] - expected) / expected;
  }
  CHECK(chi2 < 16.27);  // 3 degrees of freedom, p = 0.001
}

TEST_CASE("priority updates: evicted ids are skipped, NaN refused naming the sequence",
          "[replay]") {
  sequence_replay<std::uint8_t, float> replay(config_for(2), shape, 1);
  for (int tag = 0; tag < 3; ++tag)  // id 0 evicted
    replay.insert(test_sequence(shape, tag).view());
  const std::uint64_t ids[] = {0, 1, 2};
  const double p[] = {100.0, 3.0, 5.0};
  replay.update_priorities(ids, p);
  CHECK(replay.stats().mean_priority == Approx(4.0));
  const double bad[] = {1.0, std::numeric_limits<double>::quiet_NaN(), 1.0};
  CHECK_THROWS_WITH(replay.update_priorities(ids, bad),
                    Catch::Contains("sequence 1") && Catch::Contains("nan"));
  CHECK(replay.stats().mean_priority == Approx(4.0));  // nothing changed
  const double zero[] = {0.0, 0.0, 0.0};
  replay.update_priorities(ids, zero);  // raised to min_priority: still drawable
  seedrl::random_generator rng(4);
  seedrl::replay::sampled_sequences<float> out;
  CHECK(replay.sample(rng, out));
}

TEST_CASE("a replay that cannot work is refused at construction", "[replay]") {
  auto config = config_for(1000);
  config.memory_limit_bytes = 10000;
  CHECK_THROWS_WITH(
      (sequence_replay<std::uint8_t, float>(config, shape, 1)),
      Catch::Contains("needs") && Catch::Contains("GiB") && Catch::Contains("bytes each"));
  CHECK_THROWS_WITH((sequence_replay<std::uint8_t, float>(config_for(3), shape, 4)),
                    Catch::Contains("can never serve a batch of 4"));
  auto big_min = config_for(3);
  big_min.ratio.min_size = 5;
  CHECK_THROWS_AS((sequence_replay<std::uint8_t, float>(big_min, shape, 1)), std::invalid_argument);
  seedrl::replay::replay_ratio tight{.samples_per_insert = 4.0, .tolerance = 2.0};
  CHECK_THROWS_WITH(seedrl::replay::rate_limiter(tight, 8), Catch::Contains("(batch + ratio) / 2"));
}

TEST_CASE("the rate limiter's arithmetic holds the ratio both ways", "[replay]") {
  // r = 2 samples per insert, batches of 4, tolerance 6, minimum 3 sequences
  seedrl::replay::rate_limiter limit({.samples_per_insert = 2.0, .tolerance = 6.0, .min_size = 3},
                                     4);
  for (int i = 0; i < 3; ++i) {  // filling up: inserts are free, no sample yet
    CHECK_FALSE(limit.can_sample(static_cast<std::size_t>(i)));
    REQUIRE(limit.can_insert());
    limit.inserted();
  }
  CHECK_FALSE(limit.can_sample(3));  // fewer stored than a batch
  // owed = (I - 3) * 2 - S: inserts go on while owed + 2 <= 6, so up to I = 6 untrained
  for (int i = 3; i < 6; ++i) {
    REQUIRE(limit.can_insert());
    limit.inserted();
  }
  CHECK_FALSE(limit.can_insert());  // owed 6: actors are ahead
  CHECK(limit.can_sample(6));
  // samples go on while owed - 4 >= -6: 6 -> 2 -> -2 -> -6, then training is ahead
  for (int i = 0; i < 3; ++i) {
    REQUIRE(limit.can_sample(6));
    limit.sampled();
    CHECK(limit.can_insert());
  }
  CHECK_FALSE(limit.can_sample(6));
  CHECK(limit.samples() == 12);
  // off: inserts never wait, samples only for the minimum
  seedrl::replay::rate_limiter off({.min_size = 2}, 1);
  for (int i = 0; i < 1000; ++i)
    off.inserted();
  CHECK(off.can_insert());
  CHECK(off.can_sample(2));
  CHECK_FALSE(off.can_sample(1));
}

TEST_CASE("the replay ratio holds with threads, and waits end at close", "[replay]") {
  auto config = config_for(64);
  config.ratio = {.samples_per_insert = 1.0, .tolerance = 4.0, .min_size = 8};
  sequence_replay<std::uint8_t, float> replay(config, shape, 4);
  const test_sequence seq(shape, 1);
  std::atomic<int> inserted{0};
  std::thread actors([&] {
    while (replay.insert(seq.view()))
      ++inserted;
  });
  // No training: inserts stop at min_size + tolerance / r - 1 (owed + r <= tolerance).
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(inserted.load() == 8 + 4);
  seedrl::random_generator rng(5);
  seedrl::replay::sampled_sequences<float> out;
  std::int64_t sampled = 0;
  for (int step = 0; step < 200; ++step) {
    REQUIRE(replay.sample(rng, out));
    sampled += 4;
    const std::int64_t owed = (inserted.load() - 8) - sampled;  // r = 1
    REQUIRE(owed >= -4 - 1);  // the inserter may be one behind the counter
    REQUIRE(owed <= 4);
  }
  replay.close();
  actors.join();
  CHECK_FALSE(replay.sample(rng, out));
  // A sampler waiting for data wakes at close.
  sequence_replay<std::uint8_t, float> empty(config, shape, 4);
  std::atomic<bool> returned{false};
  std::thread learner([&] {
    seedrl::random_generator r(6);
    seedrl::replay::sampled_sequences<float> o;
    CHECK_FALSE(empty.sample(r, o));
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(returned.load());
  empty.close();
  learner.join();
  CHECK(returned.load());
}

TEST_CASE("the bytes an Atari replay stores per sequence (docs/r2d2.md's figures)", "[replay]") {
  // SEED's R2D2 on Atari: 40 burn-in + 80 trained + 1 bootstrap steps of 84x84 uint8 frames,
  // stacked 4 deep on the learner (3 frames in the state) under a 512-unit LSTM (h and c).
  const seedrl::replay::sequence_shape atari{.steps = 121,
                                             .observation_size = 84 * 84,
                                             .state_width = 3 * 84 * 84 + 2 * 512,
                                             .state_frame_values = 3 * 84 * 84};
  const auto one = config_for(1);
  const sequence_replay<std::uint8_t, float> frames(one, atari, 1);
  // per step: a frame, a float reward, a flags byte, two int32 actions; then the state
  CHECK(frames.bytes_per_sequence() == 121 * (7056 + 4 + 1 + 8) + 3 * 7056 + 1024 * 4);
  CHECK(frames.bytes_per_sequence() == 880613);
  // Sequences overlap by burn-in + 1 steps, so each adds 80 new steps: 11,008 bytes per step,
  // and a replay of 1M steps (12,500 sequences) takes 11.0 GB; as floats it would take 4x.
  CHECK(frames.bytes_per_sequence() / 80 == 11007);
  const sequence_replay<float, float> floats(one, atari, 1);
  CHECK(floats.bytes_per_sequence() == 121 * (4 * 7056 + 4 + 1 + 8) + 4 * (3 * 7056 + 1024));
}

TEST_CASE("a saved replay restores its sequences, ids, priorities and ratio exactly", "[replay]") {
  auto config = config_for(4);
  config.ratio.samples_per_insert = 2.0;
  config.ratio.min_size = 2;
  config.ratio.tolerance = 8.0;
  sequence_replay<std::uint8_t, float> saved(config, shape, 2);
  for (int tag = 0; tag < 6; ++tag)  // ids 0 and 1 evicted
    REQUIRE(saved.insert(test_sequence(shape, tag).view()).has_value());
  const std::uint64_t ids[] = {2, 3, 4, 5};
  const double p[] = {0.5, 4.0, 1.5, 2.5};
  saved.update_priorities(ids, p);
  seedrl::random_generator r0(9);
  seedrl::replay::sampled_sequences<float> out;
  REQUIRE(saved.sample(r0, out));
  std::stringstream file;
  CHECK(saved.save(file) == 4);
  const std::string bytes = file.str();

  sequence_replay<std::uint8_t, float> restored(config, shape, 2);
  std::istringstream in(bytes);
  CHECK(restored.load(in) == 4);
  const auto a = saved.stats(), b = restored.stats();
  CHECK(b.size == 4);
  CHECK(b.inserted == a.inserted);
  CHECK(b.sampled == a.sampled);
  CHECK(b.mean_priority == a.mean_priority);
  // The same draws from the same generator: the same sequences, values and weights.
  seedrl::random_generator r1(3), r2(3);
  seedrl::replay::sampled_sequences<float> x, y;
  for (int round = 0; round < 5; ++round) {
    REQUIRE(saved.sample(r1, x));
    REQUIRE(restored.sample(r2, y));
    CHECK(x.ids == y.ids);
    CHECK(x.observations == y.observations);
    CHECK(x.start_state == y.start_state);
    CHECK(x.rewards == y.rewards);
    CHECK(x.dones == y.dones);
    CHECK(x.truncated == y.truncated);
    CHECK(x.prev_actions == y.prev_actions);
    CHECK(x.actions == y.actions);
    CHECK(x.importance_weights == y.importance_weights);
  }
  // Inserts continue the ids and evict the same (oldest) sequence.
  CHECK(saved.insert(test_sequence(shape, 6).view()) == 6u);
  CHECK(restored.insert(test_sequence(shape, 6).view()) == 6u);
  const std::uint64_t evicted[] = {2};
  const double big[] = {1000.0};
  restored.update_priorities(evicted, big);  // id 2's slot now holds id 6: skipped
  CHECK(restored.stats().mean_priority == saved.stats().mean_priority);

  SECTION("a corrupt, truncated or foreign file is refused, naming why, and leaves it empty") {
    std::string corrupt = bytes;
    corrupt[corrupt.size() / 2] = static_cast<char>(corrupt[corrupt.size() / 2] ^ 0x10);
    sequence_replay<std::uint8_t, float> fresh(config, shape, 2);
    std::istringstream c(corrupt);
    CHECK_THROWS_WITH(fresh.load(c), Catch::Contains("checksum") || Catch::Contains("corrupt"));
    CHECK(fresh.stats().size == 0);
    std::istringstream t(bytes.substr(0, bytes.size() - 9));
    CHECK_THROWS_WITH(fresh.load(t), Catch::Contains("ends early"));
    CHECK(fresh.stats().size == 0);
    CHECK(fresh.insert(test_sequence(shape, 1).view()) == 0u);  // still usable
    std::istringstream again(bytes);
    CHECK_THROWS_AS(fresh.load(again), std::logic_error);  // used already
    sequence_replay<std::uint8_t, float> bigger(config_for(8), shape, 2);
    std::istringstream other(bytes);
    CHECK_THROWS_WITH(bigger.load(other), Catch::Contains("it holds 4 sequences") &&
                                              Catch::Contains("this replay holds 8 sequences"));
    sequence_replay<float, float> floats(config, shape, 2);
    std::istringstream typed(bytes);
    CHECK_THROWS_WITH(floats.load(typed),
                      Catch::Contains("1-byte integers") && Catch::Contains("4-byte floats"));
    std::istringstream junk(
        "not a replay at all, but long enough to read a header from it......"
        ".......................................................");
    CHECK_THROWS_WITH(floats.load(junk), Catch::Contains("not a seedrl replay file"));
  }

  SECTION("files beside checkpoints: written durably, read back, only the newest kept") {
    const auto dir =
        std::filesystem::temp_directory_path() / ("seedrl-replay-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    const auto first = seedrl::replay::replay_file_beside(dir / "ckpt-000000000010.seedrl");
    const auto second = seedrl::replay::replay_file_beside(dir / "ckpt-000000000020.seedrl");
    CHECK(first.filename() == "ckpt-000000000010.replay");
    CHECK(seedrl::replay::write_replay_file(first, saved) == 4);
    CHECK(seedrl::replay::write_replay_file(second, saved) == 4);
    std::vector<std::string> problems;
    seedrl::replay::remove_other_replay_files(
        dir, second, [&](const std::filesystem::path& f, const std::string& why) {
          problems.push_back(f.string() + why);
        });
    CHECK(problems.empty());
    CHECK_FALSE(std::filesystem::exists(first));
    sequence_replay<std::uint8_t, float> from_file(config, shape, 2);
    CHECK(seedrl::replay::read_replay_file(second, from_file) == 4);
    CHECK(from_file.stats().mean_priority == saved.stats().mean_priority);
    sequence_replay<std::uint8_t, float> none(config, shape, 2);
    CHECK_THROWS_WITH(
        seedrl::replay::read_replay_file(first, none),
        Catch::Contains("ckpt-000000000010.replay") && Catch::Contains("cannot be opened"));
    std::filesystem::remove_all(dir);
  }
}
