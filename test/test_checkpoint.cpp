// Checkpoints: exact resumption of an agent and its optimizer through a file, refusal of every
// truncation and of bit flips with a message that says where, fallback to the previous good
// checkpoint, keep-N retention, the save schedule, and a writer killed with SIGKILL at random
// moments that never leaves a partial file under a checkpoint's name.
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/io/checkpoint.hpp"
#include "seedrl/io/checkpoint_schedule.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/rmsprop.hpp"

namespace {

namespace fs = std::filesystem;
using seedrl::checkpoint;
using seedrl::checkpoint_error;

/// A fresh directory, removed with everything in it at the end of the test.
struct temp_dir {
  fs::path path;
  temp_dir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() / ("seedrl-checkpoint-test-" + std::to_string(::getpid()) +
                                        "-" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
};

void write_file(const fs::path& p, std::span<const std::byte> bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

std::vector<std::byte> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

/// The message of the checkpoint_error `f` throws; fails the test if it throws nothing.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const checkpoint_error& e) {
    return e.what();
  }
  FAIL("expected a seedrl::checkpoint_error");
  return {};
}

/// A report that fails the test: for calls that must not skip anything.
void no_report(const fs::path& file, const std::string& reason) {
  FAIL("unexpected checkpoint report for " << file << ": " << reason);
}

/// A small checkpoint with one of everything.
checkpoint small_checkpoint(std::int64_t step = 7) {
  checkpoint c;
  c.step = step;
  const std::vector<float> w{0.5f, -1.25f, 3.0f, 1e-30f, -0.0f};
  seedrl::store_tensor(c, "w", std::span<const float>(w));
  c.blobs["opt"] = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{0xFF},
                    std::byte{0}, std::byte{9}, std::byte{42}};
  c.counters["frames"] = std::int64_t{123456789012};
  c.counters["mean_return"] = 21.5;
  c.meta["network"] = "tiny";
  return c;
}

// ---------------------------------------------------------------------------------------------
// Training an mlp_lstm_agent with Adam on a made-up but deterministic objective.

seedrl::mlp_lstm_agent_config agent_config(std::uint64_t seed = 0) {
  seedrl::mlp_lstm_agent_config cfg;
  cfg.observation_size = 4;
  cfg.num_actions = 3;
  cfg.hidden_sizes = {16};
  cfg.lstm_size = 8;
  cfg.seed = seed;
  return cfg;
}

seedrl::adam_config optimizer_config() {
  seedrl::adam_config cfg;
  cfg.learning_rate = 0.01;
  cfg.lr_decay_steps = 20;  // the schedule position must survive the round trip
  return cfg;
}

/// One training step on unroll `k`: forward, the gradient of
/// 0.5 * sum((value - target)^2) + sum(logits * weight), backward, Adam.
void train_step(seedrl::mlp_lstm_agent<float>& net, seedrl::adam<float>& opt, int k) {
  constexpr std::size_t T1 = 5, B = 3, N = T1 * B, A = 3;
  seedrl::random_generator rng(1000 + static_cast<std::uint64_t>(k));
  std::vector<float> obs(N * 4), rewards(N), start(B * static_cast<std::size_t>(net.state_size()));
  std::vector<std::uint8_t> dones(N);
  std::vector<std::int32_t> prev(N);
  for (auto& x : obs)
    x = static_cast<float>(rng.uniform(-1.0, 1.0));
  for (std::size_t i = 0; i < N; ++i) {
    rewards[i] = static_cast<float>(rng.uniform(0.0, 1.0));
    dones[i] = rng.below(5) == 0 ? 1 : 0;
    prev[i] = static_cast<std::int32_t>(rng.below(A));
  }
  for (auto& x : start)
    x = static_cast<float>(rng.uniform(-0.5, 0.5));
  std::vector<float> logits(N * A), values(N);
  seedrl::agent_unroll_output<float> out{logits, values};
  net.forward_unroll({T1, B, obs, rewards, dones, prev, start}, out);
  std::vector<float> dlogits(N * A), dvalues(N);
  for (std::size_t i = 0; i < N; ++i)
    dvalues[i] = values[i] - rewards[i] * 3.0f;
  for (std::size_t i = 0; i < N * A; ++i)
    dlogits[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
  net.zero_gradients();
  net.backward_unroll({dlogits, dvalues});
  opt.step(net.parameters(), net.gradients());
}

bool same_checkpoint_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Round trip

TEST_CASE("checkpoint round trip resumes an agent and Adam exactly", "[checkpoint]") {
  seedrl::mlp_lstm_agent<float> net(agent_config());
  seedrl::adam<float> opt(optimizer_config());
  for (int k = 0; k < 3; ++k)
    train_step(net, opt, k);

  checkpoint c;
  c.step = 3;
  seedrl::store_parameters(c, net);
  seedrl::store_optimizer(c, opt);
  c.counters["frames"] = std::int64_t{3 * 15};
  c.counters["mean_return"] = 17.25;
  c.meta["network"] = "mlp_lstm_agent obs 4 actions 3 hidden 16 lstm 8";

  temp_dir dir;
  const fs::path written = seedrl::write_checkpoint(dir.path, c);
  CHECK(written == dir.path / "ckpt-000000000003.seedrl");
  const auto latest = seedrl::latest_checkpoint(dir.path, no_report);
  REQUIRE(latest);
  CHECK(*latest == written);

  const checkpoint r = seedrl::read_checkpoint(*latest);
  CHECK(r.source == written);
  CHECK(r.step == 3);
  CHECK(r.int_counter("frames") == 45);
  CHECK(r.double_counter("mean_return") == 17.25);
  CHECK(r.meta_value("network") == c.meta["network"]);
  CHECK(r.tensor("parameters").type == seedrl::dtype::float32);
  CHECK(r.tensor("parameters").count == net.parameters().size());
  CHECK(r.tensor("parameters").data == c.tensors["parameters"].data);
  CHECK(r.blobs == c.blobs);

  // Fresh objects with other initial weights and no optimizer history.
  seedrl::mlp_lstm_agent<float> resumed(agent_config(99));
  seedrl::adam<float> resumed_opt(optimizer_config());
  REQUIRE_FALSE(same_checkpoint_bits(resumed.parameters(), net.parameters()));
  seedrl::restore_parameters(r, resumed);
  seedrl::restore_optimizer(r, resumed_opt);
  CHECK(same_checkpoint_bits(resumed.parameters(), net.parameters()));
  CHECK(resumed_opt.step_count() == 3);
  CHECK(resumed_opt.learning_rate() == opt.learning_rate());

  // Continuing both runs with the same data gives the same bits.
  for (int k = 3; k < 6; ++k) {
    train_step(net, opt, k);
    train_step(resumed, resumed_opt, k);
    INFO("after step " << k);
    REQUIRE(same_checkpoint_bits(resumed.parameters(), net.parameters()));
  }
  CHECK(resumed_opt.learning_rate() == opt.learning_rate());

  SECTION("weights only: a fresh optimizer starts its schedule at step 0") {
    seedrl::mlp_lstm_agent<float> init(agent_config(5));
    seedrl::adam<float> init_opt(optimizer_config());
    seedrl::restore_parameters(r, init);
    CHECK(init_opt.step_count() == 0);
    CHECK(init_opt.learning_rate() == optimizer_config().learning_rate);
  }
}

TEST_CASE("restoring into a mismatched network or optimizer is refused clearly", "[checkpoint]") {
  seedrl::mlp_lstm_agent<float> net(agent_config());
  seedrl::adam<float> opt(optimizer_config());
  train_step(net, opt, 0);
  checkpoint c;
  seedrl::store_parameters(c, net);
  seedrl::store_optimizer(c, opt);
  c.meta["network"] = "hidden 16";
  temp_dir dir;
  const checkpoint r = seedrl::read_checkpoint(seedrl::write_checkpoint(dir.path, c));
  const std::string file = r.source.string();

  auto wider = agent_config();
  wider.hidden_sizes = {32};
  seedrl::mlp_lstm_agent<float> other(wider);
  const std::vector<float> before(other.parameters().begin(), other.parameters().end());
  std::string msg = error_of([&] { seedrl::restore_parameters(r, other); });
  CHECK_THAT(msg, Catch::Contains(file));
  CHECK_THAT(msg, Catch::Contains("\"parameters\" holds " +
                                  std::to_string(net.parameters().size()) + " float32"));
  CHECK_THAT(msg, Catch::Contains(std::to_string(other.parameters().size()) + " float32"));
  CHECK_THAT(msg, Catch::Contains("network: hidden 16"));
  CHECK(same_checkpoint_bits(other.parameters(), before));

  seedrl::mlp_lstm_agent<double> wrong_type(agent_config());
  msg = error_of([&] { seedrl::restore_parameters(r, wrong_type); });
  CHECK_THAT(msg, Catch::Contains("float32") && Catch::Contains("float64"));

  msg = error_of([&] { seedrl::restore_parameters(r, net, "target_parameters"); });
  CHECK_THAT(msg, Catch::Contains("no tensor \"target_parameters\" (tensors: \"parameters\")"));

  seedrl::rmsprop<float> wrong_opt;
  msg = error_of([&] { seedrl::restore_optimizer(r, wrong_opt); });
  CHECK_THAT(msg,
             Catch::Contains(file) && Catch::Contains("\"optimizer\"") && Catch::Contains("adam"));
  CHECK(wrong_opt.step_count() == 0);

  msg = error_of([&] { (void)r.int_counter("frames"); });
  CHECK_THAT(msg, Catch::Contains("no counter \"frames\""));
}

TEST_CASE("checkpoint counters keep integers exact and doubles bit for bit", "[checkpoint]") {
  checkpoint c;
  c.step = 0;
  c.counters["big"] = std::int64_t{-9'000'000'000'000'000'000};
  c.counters["nan"] = std::numeric_limits<double>::quiet_NaN();
  c.counters["tiny"] = 4.9e-324;
  c.meta["empty"] = "";
  c.meta["binary"] = std::string("a\0b\xff", 4);
  const std::vector<std::int32_t> ints{-1, 0, 2147483647};
  seedrl::store_tensor(c, "ints", std::span<const std::int32_t>(ints));
  const std::vector<double> doubles{};
  seedrl::store_tensor(c, "none", std::span<const double>(doubles));
  c.blobs["empty"] = {};
  const checkpoint r = seedrl::parse_checkpoint(seedrl::serialize_checkpoint(c));
  CHECK(r.int_counter("big") == -9'000'000'000'000'000'000);
  CHECK(std::isnan(r.double_counter("nan")));
  CHECK(r.double_counter("tiny") == 4.9e-324);
  CHECK(r.meta == c.meta);
  std::vector<std::int32_t> back(3);
  r.tensor("ints").copy_to(std::span<std::int32_t>(back));
  CHECK(back == ints);
  CHECK(r.tensor("none").count == 0);
  CHECK(r.tensor("none").type == seedrl::dtype::float64);
  CHECK(r.blob("empty").empty());
  // Everything is little-endian byte by byte: the first element of "ints" (-1) is ff ff ff ff.
  CHECK(r.tensor("ints").data[0] == std::byte{0xFF});
}

TEST_CASE("checkpoints that cannot be written are refused before touching disk", "[checkpoint]") {
  temp_dir dir;
  checkpoint c = small_checkpoint();
  c.tensors["counters"] = c.tensors["w"];
  CHECK_THAT(error_of([&] { (void)seedrl::write_checkpoint(dir.path, c); }),
             Catch::Contains("\"counters\""));
  c = small_checkpoint();
  c.tensors["w"].data.pop_back();
  CHECK_THAT(error_of([&] { (void)seedrl::serialize_checkpoint(c); }),
             Catch::Contains("19 data bytes for 5 float32 elements"));
  c = small_checkpoint();
  c.blobs["w"] = {};
  CHECK_THAT(error_of([&] { (void)seedrl::serialize_checkpoint(c); }),
             Catch::Contains("both a tensor and a blob"));
  c = small_checkpoint();
  c.counters[std::string(256, 'x')] = std::int64_t{1};
  CHECK_THAT(error_of([&] { (void)seedrl::serialize_checkpoint(c); }),
             Catch::Contains("256 bytes long"));
  c = small_checkpoint(-1);
  CHECK_THAT(error_of([&] { (void)seedrl::serialize_checkpoint(c); }),
             Catch::Contains("step is negative"));
  CHECK(fs::is_empty(dir.path));

  // A path that exists as a file cannot hold checkpoints; errno reasons come through.
  write_file(dir.path / "plain", seedrl::serialize_checkpoint(small_checkpoint()));
  CHECK_THAT(
      error_of([&] { (void)seedrl::write_checkpoint(dir.path / "plain", small_checkpoint()); }),
      Catch::Contains("is not a directory"));
  CHECK_THAT(error_of([&] { (void)seedrl::read_checkpoint(dir.path / "missing.seedrl"); }),
             Catch::Contains("missing.seedrl") && Catch::Contains("No such file or directory"));
  // A missing directory is created.
  CHECK(fs::exists(seedrl::write_checkpoint(dir.path / "a" / "b", small_checkpoint())));
}

TEST_CASE("a checkpoint holding a NaN or an infinity is never written, and the good ones stay",
          "[checkpoint]") {
  temp_dir dir;
  seedrl::checkpoint_write_options keep2;
  keep2.keep_last = 2;
  keep2.report = no_report;
  seedrl::write_checkpoint(dir.path, small_checkpoint(1), keep2);
  seedrl::write_checkpoint(dir.path, small_checkpoint(2), keep2);
  const auto before = fs::last_write_time(dir.path / "ckpt-000000000001.seedrl");

  checkpoint c = small_checkpoint(3);
  const std::vector<double> stats{0.5, std::numeric_limits<double>::quiet_NaN(), 1.0};
  seedrl::store_tensor(c, "observation_normalization.mean", std::span<const double>(stats));
  CHECK_THAT(error_of([&] { (void)seedrl::write_checkpoint(dir.path, c, keep2); }),
             Catch::Contains("\"observation_normalization.mean\" element 1 is nan") &&
                 Catch::Contains("earlier checkpoints are kept"));
  c = small_checkpoint(3);
  const std::vector<float> w{0.5f, -std::numeric_limits<float>::infinity()};
  seedrl::store_tensor(c, "w", std::span<const float>(w));
  CHECK_THAT(error_of([&] { (void)seedrl::write_checkpoint(dir.path, c, keep2); }),
             Catch::Contains("\"w\" element 1 is -inf"));
  c = small_checkpoint(3);
  c.counters["reward_scaling.return_var"] = std::numeric_limits<double>::infinity();
  CHECK_THAT(error_of([&] { (void)seedrl::write_checkpoint(dir.path, c, keep2); }),
             Catch::Contains("counter \"reward_scaling.return_var\" is inf"));

  // Nothing new, nothing rotated away, no temporary file.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.path))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"ckpt-000000000001.seedrl", "ckpt-000000000002.seedrl"});
  CHECK(fs::last_write_time(dir.path / "ckpt-000000000001.seedrl") == before);
  // Finite extremes are fine.
  c = small_checkpoint(3);
  c.counters["big"] = std::numeric_limits<double>::max();
  CHECK(fs::exists(seedrl::write_checkpoint(dir.path, c, keep2)));
}

// ---------------------------------------------------------------------------------------------
// Damage

TEST_CASE("every truncation of a checkpoint is refused and says where it stops", "[checkpoint]") {
  const std::vector<std::byte> bytes = seedrl::serialize_checkpoint(small_checkpoint());
  REQUIRE(bytes.size() > 100);
  temp_dir dir;
  const fs::path file = dir.path / "ckpt-000000000007.seedrl";
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    write_file(file, std::span(bytes).first(n));
    const std::string msg = error_of([&] { (void)seedrl::read_checkpoint(file); });
    INFO("truncated to " << n << " bytes: " << msg);
    CHECK_THAT(msg, Catch::Contains(file.string()) &&
                        Catch::Contains("truncated at byte " + std::to_string(n)));
  }
  write_file(file, bytes);
  CHECK(seedrl::read_checkpoint(file).step == 7);
}

TEST_CASE("every single bit flip in a small checkpoint is refused", "[checkpoint]") {
  const std::vector<std::byte> bytes = seedrl::serialize_checkpoint(small_checkpoint());
  const fs::path name = "flipped.seedrl";
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<std::byte> damaged = bytes;
      damaged[i] ^= std::byte{static_cast<unsigned char>(1u << bit)};
      const std::string msg = error_of([&] { (void)seedrl::parse_checkpoint(damaged, name); });
      INFO("byte " << i << " bit " << bit << ": " << msg);
      REQUIRE_THAT(msg, Catch::Contains("flipped.seedrl"));
    }
  }
  // Where the flip lands decides the message.
  const auto flip = [&](std::size_t i) {
    std::vector<std::byte> damaged = bytes;
    damaged[i] ^= std::byte{0x10};
    return error_of([&] { (void)seedrl::parse_checkpoint(damaged, name); });
  };
  CHECK_THAT(flip(0), Catch::Contains("not a seedrl checkpoint"));
  CHECK_THAT(flip(8), Catch::Contains("unknown format version 17"));
  CHECK_THAT(flip(20), Catch::Contains("CRC mismatch in the header"));
  CHECK_THAT(flip(bytes.size() - 1), Catch::Contains("CRC mismatch over the whole file"));
  // The blob "opt" is the last section: its payload sits just before its CRC and the file's.
  CHECK_THAT(flip(bytes.size() - 9), Catch::Contains("CRC mismatch in section \"opt\""));
  CHECK_THAT(flip(64), Catch::Contains("CRC mismatch in section \"counters\""));
}

TEST_CASE("bit flips sampled across a large checkpoint file are refused", "[checkpoint]") {
  seedrl::mlp_lstm_agent<float> net(agent_config());
  seedrl::adam<float> opt(optimizer_config());
  train_step(net, opt, 0);
  checkpoint c;
  c.step = 1;
  seedrl::store_parameters(c, net);
  seedrl::store_optimizer(c, opt);
  temp_dir dir;
  const fs::path good = seedrl::write_checkpoint(dir.path, c);
  const std::vector<std::byte> bytes = read_file(good);
  seedrl::random_generator rng(3);
  const fs::path bad = dir.path / "ckpt-000000000002.seedrl";
  for (int trial = 0; trial < 64; ++trial) {
    std::vector<std::byte> damaged = bytes;
    const std::size_t at = rng.below(bytes.size());
    damaged[at] ^= std::byte{static_cast<unsigned char>(1u << rng.below(8))};
    write_file(bad, damaged);
    const std::string msg = error_of([&] { (void)seedrl::read_checkpoint(bad); });
    INFO("byte " << at << ": " << msg);
    CHECK_THAT(msg, Catch::Contains(bad.string()));
    std::vector<std::string> skipped;
    const auto latest = seedrl::latest_checkpoint(
        dir.path, [&](const fs::path& f, const std::string&) { skipped.push_back(f.string()); });
    CHECK(latest == good);
    CHECK(skipped == std::vector<std::string>{bad.string()});
  }
}

TEST_CASE("unknown versions trailing bytes and foreign files are refused", "[checkpoint]") {
  std::vector<std::byte> bytes = seedrl::serialize_checkpoint(small_checkpoint());
  std::vector<std::byte> v2 = bytes;
  v2[8] = std::byte{2};
  CHECK_THAT(error_of([&] { (void)seedrl::parse_checkpoint(v2, "x.seedrl"); }),
             Catch::Contains("'x.seedrl': unknown format version 2 (this build reads version 1)"));
  std::vector<std::byte> longer = bytes;
  longer.push_back(std::byte{0});
  CHECK_THAT(error_of([&] { (void)seedrl::parse_checkpoint(longer); }),
             Catch::Contains("(in memory)") && Catch::Contains("1 unexpected bytes after"));
  const std::string text = "hello, world";
  std::vector<std::byte> foreign(text.size());
  std::memcpy(foreign.data(), text.data(), text.size());
  CHECK_THAT(error_of([&] { (void)seedrl::parse_checkpoint(foreign); }),
             Catch::Contains("not a seedrl checkpoint"));
}

// ---------------------------------------------------------------------------------------------
// Directories

TEST_CASE("latest_checkpoint skips temporary and damaged files for the previous good one",
          "[checkpoint]") {
  temp_dir dir;
  seedrl::checkpoint_write_options keep_all;
  keep_all.keep_last = 0;
  CHECK_FALSE(seedrl::latest_checkpoint(dir.path, no_report));
  CHECK_FALSE(seedrl::latest_checkpoint(dir.path / "missing", no_report));

  seedrl::write_checkpoint(dir.path, small_checkpoint(10), keep_all);
  const fs::path good = seedrl::write_checkpoint(dir.path, small_checkpoint(20), keep_all);

  // Step 25, written properly and damaged afterwards.
  const fs::path flipped = seedrl::write_checkpoint(dir.path, small_checkpoint(25), keep_all);
  auto image25 = read_file(flipped);
  image25[image25.size() - 10] ^= std::byte{4};
  write_file(flipped, image25);
  // A temporary file from an interrupted write of step 30.
  const auto image30 = seedrl::serialize_checkpoint(small_checkpoint(30));
  const fs::path temp = dir.path / "ckpt-000000000030.seedrl.tmp-999-0";
  write_file(temp, std::span(image30).first(image30.size() / 2));
  // Step 40 cut short under its final name (what a non-atomic writer would leave).
  const auto image40 = seedrl::serialize_checkpoint(small_checkpoint(40));
  const fs::path cut = dir.path / "ckpt-000000000040.seedrl";
  write_file(cut, std::span(image40).first(image40.size() - 3));
  // Step 5's contents renamed to step 50.
  const fs::path renamed = dir.path / "ckpt-000000000050.seedrl";
  write_file(renamed, seedrl::serialize_checkpoint(small_checkpoint(5)));
  // Files that are not checkpoints at all are ignored.
  write_file(dir.path / "notes.txt", image30);

  std::map<fs::path, std::string> reports;
  const auto latest = seedrl::latest_checkpoint(
      dir.path, [&](const fs::path& f, const std::string& why) { reports[f] = why; });
  REQUIRE(latest);
  CHECK(*latest == good);
  CHECK(reports.size() == 4);
  CHECK_THAT(reports[temp], Catch::Contains("temporary file"));
  CHECK_THAT(reports[flipped], Catch::Contains("CRC mismatch in section \"opt\""));
  CHECK_THAT(reports[cut], Catch::Contains("truncated at byte"));
  CHECK_THAT(reports[renamed], Catch::Contains("header says step 5 but its name says step 50"));
  // Reading changes nothing on disk.
  CHECK(fs::exists(temp));
  CHECK(fs::exists(cut));

  const auto loaded = seedrl::read_latest_checkpoint(dir.path, [](auto&&...) {});
  REQUIRE(loaded);
  CHECK(loaded->step == 20);
  CHECK(loaded->source == good);
}

TEST_CASE("write_checkpoint keeps the newest N and removes stale temporary files", "[checkpoint]") {
  temp_dir dir;
  const auto names = [&] {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir.path))
      out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  };
  seedrl::checkpoint_write_options keep3;
  keep3.keep_last = 3;
  keep3.report = no_report;
  for (std::int64_t s = 1; s <= 6; ++s)
    seedrl::write_checkpoint(dir.path, small_checkpoint(s), keep3);
  CHECK(names() == std::vector<std::string>{"ckpt-000000000004.seedrl", "ckpt-000000000005.seedrl",
                                            "ckpt-000000000006.seedrl"});

  // A temporary file of a killed writer goes with the next successful write.
  write_file(dir.path / "ckpt-000000000007.seedrl.tmp-1-0", std::vector<std::byte>(10));
  seedrl::write_checkpoint(dir.path, small_checkpoint(7), keep3);
  CHECK(names() == std::vector<std::string>{"ckpt-000000000005.seedrl", "ckpt-000000000006.seedrl",
                                            "ckpt-000000000007.seedrl"});

  // The checkpoint just written is never deleted, even when older than those kept.
  seedrl::write_checkpoint(dir.path, small_checkpoint(2), keep3);
  CHECK(names() == std::vector<std::string>{"ckpt-000000000002.seedrl", "ckpt-000000000005.seedrl",
                                            "ckpt-000000000006.seedrl",
                                            "ckpt-000000000007.seedrl"});

  // Rewriting a step replaces the file.
  checkpoint again = small_checkpoint(7);
  again.meta["network"] = "second";
  seedrl::write_checkpoint(dir.path, again, keep3);
  CHECK(seedrl::read_checkpoint(dir.path / "ckpt-000000000007.seedrl").meta_value("network") ==
        "second");

  seedrl::checkpoint_write_options keep_all;
  keep_all.keep_last = 0;
  for (std::int64_t s = 10; s < 20; ++s)
    seedrl::write_checkpoint(dir.path, small_checkpoint(s), keep_all);
  CHECK(names().size() == 13);
}

TEST_CASE("creating a checkpoint directory syncs the parent of every directory it creates",
          "[checkpoint]") {
  // A power cut after the save must not lose any directory on the way to the file: each new
  // directory's entry lives in its parent, so every one of those parents must be synced.
  temp_dir root;
  std::vector<fs::path> synced;
  const seedrl::detail::directory_sync record = [&synced](const fs::path& d) {
    synced.push_back(d);
    return seedrl::detail::fsync_directory(d);
  };
  const fs::path a = root.path / "a", b = a / "b", c = b / "c";

  SECTION("three new levels under an existing directory: its parent first, then each new one") {
    CHECK(seedrl::detail::create_directories_durably(c, record).empty());
    CHECK(fs::is_directory(c));
    CHECK(synced == std::vector<fs::path>{root.path, a, b});
  }
  SECTION("a trailing slash names the same directories") {
    CHECK(seedrl::detail::create_directories_durably(c.string() + "/", record).empty());
    CHECK(fs::is_directory(c));
    CHECK(synced == std::vector<fs::path>{root.path, a, b});
  }
  SECTION("only the directories that were missing") {
    fs::create_directories(a);
    CHECK(seedrl::detail::create_directories_durably(c, record).empty());
    CHECK(synced == std::vector<fs::path>{a, b});
  }
  SECTION("an existing directory syncs nothing") {
    fs::create_directories(c);
    CHECK(seedrl::detail::create_directories_durably(c, record).empty());
    CHECK(synced.empty());
  }
  SECTION("a failed sync is reported with its directory and reason") {
    const std::string problem = seedrl::detail::create_directories_durably(
        c, [](const fs::path& d) { return d.filename() == "a" ? EIO : 0; });
    CHECK_THAT(problem, Catch::Contains("cannot sync directory '" + a.string() + "'"));
    CHECK_THAT(problem, Catch::Contains("fsync"));
  }
}

TEST_CASE("checkpoint file names sort like steps", "[checkpoint]") {
  CHECK(seedrl::checkpoint_file_name(0) == "ckpt-000000000000.seedrl");
  CHECK(seedrl::checkpoint_file_name(123456789012345) == "ckpt-123456789012345.seedrl");
  CHECK(seedrl::parse_checkpoint_file_name("ckpt-000000000042.seedrl") == 42);
  CHECK(seedrl::parse_checkpoint_file_name("ckpt-123456789012345.seedrl") == 123456789012345);
  CHECK_FALSE(seedrl::parse_checkpoint_file_name("ckpt-000000000042.seedrl.tmp-1-0"));
  CHECK_FALSE(seedrl::parse_checkpoint_file_name("ckpt-.seedrl"));
  CHECK_FALSE(seedrl::parse_checkpoint_file_name("ckpt--1.seedrl"));
  CHECK_FALSE(seedrl::parse_checkpoint_file_name("ckpt-12a.seedrl"));
  CHECK_THROWS_AS(seedrl::checkpoint_file_name(-1), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Schedule

namespace {

/// A clock the test moves by hand.
struct manual_clock {
  using duration = std::chrono::milliseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<manual_clock>;
  [[maybe_unused]] static constexpr bool is_steady = true;  // the Clock requirements name it
  static inline time_point current{};
  static time_point now() noexcept { return current; }
};

}  // namespace

TEST_CASE("checkpoint schedule saves on step multiples and resumes on them", "[checkpoint]") {
  using seedrl::checkpoint_reason;
  using schedule = seedrl::checkpoint_schedule<manual_clock>;
  const manual_clock::time_point t0{};
  seedrl::checkpoint_schedule_config cfg;
  cfg.every_steps = 10;
  schedule s(cfg, 0, t0);
  CHECK(s.due(9, t0) == checkpoint_reason::none);
  CHECK(s.due(10, t0) == checkpoint_reason::steps);
  s.saved(10, t0);
  for (std::int64_t k = 11; k < 20; ++k)
    CHECK(s.due(k, t0 + std::chrono::hours(100)) == checkpoint_reason::none);
  CHECK(s.due(20, t0) == checkpoint_reason::steps);
  // A step that jumps over a multiple still triggers.
  CHECK(s.due(37, t0) == checkpoint_reason::steps);
  s.saved(37, t0);
  CHECK(s.due(39, t0) == checkpoint_reason::none);
  CHECK(s.due(40, t0) == checkpoint_reason::steps);

  // Resumed at 105: the next save is at 110, and 105 itself is not saved again.
  schedule resumed(cfg, 105, t0);
  CHECK(resumed.last_saved_step() == 105);
  CHECK(resumed.due(105, t0) == checkpoint_reason::none);
  CHECK(resumed.due(109, t0) == checkpoint_reason::none);
  CHECK(resumed.due(110, t0) == checkpoint_reason::steps);
  CHECK(resumed.due_at_exit(105) == checkpoint_reason::none);
  CHECK(resumed.due_at_exit(106) == checkpoint_reason::exit);
}

TEST_CASE("checkpoint schedule saves by time with an injected clock", "[checkpoint]") {
  using seedrl::checkpoint_reason;
  using namespace std::chrono_literals;
  manual_clock::current = manual_clock::time_point{} + 5s;
  seedrl::checkpoint_schedule_config cfg;
  cfg.every_seconds = 60.0;
  seedrl::checkpoint_schedule<manual_clock> s(cfg);  // starts at the clock's now, 5 s
  manual_clock::current += 59s;
  CHECK(s.due(1) == checkpoint_reason::none);
  manual_clock::current += 1s;
  CHECK(s.due(1) == checkpoint_reason::time);
  s.saved(1);
  manual_clock::current += 30s;
  CHECK(s.due(2) == checkpoint_reason::none);
  manual_clock::current += 30s;
  CHECK(s.due(2) == checkpoint_reason::time);
  // Without progress there is nothing to save, however long it has been.
  CHECK(s.due(1, manual_clock::current + 24h) == checkpoint_reason::none);

  // Both triggers: a save for steps restarts the timer.
  cfg.every_steps = 100;
  const manual_clock::time_point t0{};
  seedrl::checkpoint_schedule<manual_clock> both(cfg, 0, t0);
  CHECK(both.due(100, t0 + 10s) == checkpoint_reason::steps);
  both.saved(100, t0 + 10s);
  CHECK(both.due(150, t0 + 69s) == checkpoint_reason::none);
  CHECK(both.due(150, t0 + 70s) == checkpoint_reason::time);
  CHECK(both.due(200, t0 + 70s) == checkpoint_reason::steps);
}

TEST_CASE("checkpoint schedule at exit and invalid settings", "[checkpoint]") {
  using seedrl::checkpoint_reason;
  const manual_clock::time_point t0{};
  seedrl::checkpoint_schedule_config only_exit;
  seedrl::checkpoint_schedule<manual_clock> s(only_exit, 0, t0);
  CHECK(s.due(1'000'000, t0 + std::chrono::hours(1000)) == checkpoint_reason::none);
  CHECK(s.due_at_exit(0) == checkpoint_reason::none);
  CHECK(s.due_at_exit(1) == checkpoint_reason::exit);
  s.saved(1, t0);
  CHECK(s.due_at_exit(1) == checkpoint_reason::none);
  only_exit.at_exit = false;
  CHECK(seedrl::checkpoint_schedule<manual_clock>(only_exit, 0, t0).due_at_exit(5) ==
        checkpoint_reason::none);
  CHECK(std::string(seedrl::to_string(checkpoint_reason::time)) == "time");

  seedrl::checkpoint_schedule_config bad;
  bad.every_steps = 0;
  CHECK_THROWS_AS(seedrl::checkpoint_schedule<>(bad), std::invalid_argument);
  bad.every_steps.reset();
  bad.every_seconds = -1.0;
  CHECK_THROWS_AS(seedrl::checkpoint_schedule<>(bad), std::invalid_argument);
  bad.every_seconds = std::numeric_limits<double>::infinity();
  CHECK_THROWS_AS(seedrl::checkpoint_schedule<>(bad), std::invalid_argument);
  CHECK_THROWS_AS(seedrl::checkpoint_schedule<>({}, -1), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Killed mid-write

namespace {

/// A few megabytes whose contents follow from the step, so a reader can tell a whole file.
checkpoint big_checkpoint(std::int64_t step) {
  checkpoint c;
  c.step = step;
  const std::size_t n = (std::size_t{1} << 18) + static_cast<std::size_t>(step % 7) * 100'000;
  std::vector<float> w(n);
  for (std::size_t i = 0; i < n; ++i)
    w[i] = static_cast<float>((i * 2654435761u + static_cast<std::size_t>(step)) % 65536u);
  seedrl::store_tensor(c, "parameters", std::span<const float>(w));
  std::vector<std::byte> blob(1 << 16);
  for (std::size_t i = 0; i < blob.size(); ++i)
    blob[i] = static_cast<std::byte>((i + static_cast<std::size_t>(step)) & 0xFF);
  c.blobs["optimizer"] = std::move(blob);
  c.counters["step"] = step;
  return c;
}

/// Whether `dir` holds a temporary checkpoint file.
bool temp_file_in(const fs::path& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    if (it->path().filename().string().find(".seedrl.tmp-") != std::string::npos)
      return true;
  }
  return false;
}

}  // namespace

TEST_CASE("a writer killed mid write never leaves a partial checkpoint", "[checkpoint]") {
  temp_dir dir;
  seedrl::checkpoint_write_options options;
  options.keep_last = 3;
  options.report = nullptr;
  // Kill at random moments within about three writes, timed here so that the test adapts to
  // debug, release and sanitizer builds.
  const auto t0 = std::chrono::steady_clock::now();
  seedrl::write_checkpoint(dir.path, big_checkpoint(0), options);
  const auto one_write =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  const auto window =
      static_cast<std::uint64_t>(std::max<std::int64_t>(3 * one_write.count(), 1000));

  seedrl::random_generator rng(11);
  std::int64_t last_good = 0;
  int kills_with_temp_file = 0;
  for (int round = 0; round < 8; ++round) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // The child writes until it is killed; it never returns into Catch.
      try {
        for (std::int64_t s = last_good + 1;; ++s)
          seedrl::write_checkpoint(dir.path, big_checkpoint(s), options);
      } catch (...) {
        ::_exit(3);
      }
    }
    if (round % 2 == 0) {
      // Any moment: while serialising, writing, syncing, renaming or deleting old files.
      std::this_thread::sleep_for(std::chrono::microseconds(rng.below(window)));
    } else {
      // Inside the file write itself: as soon as a temporary file shows up.
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (!temp_file_in(dir.path) && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    REQUIRE(::kill(child, SIGKILL) == 0);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    INFO("round " << round);
    REQUIRE(WIFSIGNALED(status));  // not an early exit: the writer was busy when killed
    CHECK(WTERMSIG(status) == SIGKILL);

    // Every file under a checkpoint's name is complete; only temporary files may be partial.
    std::vector<fs::path> temps;
    for (const auto& e : fs::directory_iterator(dir.path)) {
      const std::string name = e.path().filename().string();
      if (seedrl::parse_checkpoint_file_name(name)) {
        CHECK_NOTHROW((void)seedrl::read_checkpoint(e.path()));
      } else {
        CHECK(name.find(".seedrl.tmp-") != std::string::npos);
        temps.push_back(e.path());
      }
    }
    kills_with_temp_file += temps.empty() ? 0 : 1;
    for (const auto& t : temps)
      fs::remove(t);  // so that the next round sees only its own

    const auto latest = seedrl::latest_checkpoint(dir.path, [](auto&&...) {});
    REQUIRE(latest);
    const checkpoint c = seedrl::read_checkpoint(*latest);
    CHECK(c.step >= last_good);  // never behind what was already durable
    CHECK(c.int_counter("step") == c.step);
    const checkpoint expected = big_checkpoint(c.step);
    CHECK(c.tensor("parameters").data == expected.tensor("parameters").data);
    CHECK(c.blobs == expected.blobs);
    last_good = c.step;
  }
  // The odd rounds killed with a temporary file present; it is still there unless the rename
  // won the race, which cannot happen every time.
  CHECK(kills_with_temp_file >= 1);
  WARN("kills that left a temporary file: " << kills_with_temp_file << " of 8; last step "
                                            << last_good << "; one write took " << one_write.count()
                                            << " us");
}
