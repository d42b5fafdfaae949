// backend_agent_trainer with a torso part defined here, as a user would write one: a dense
// layer with tanh (the library's torsos use ReLU), on host_backend in float64. Its parameter
// gradients (torso, two LSTM layers, heads) are checked against central differences of the
// loss, and it trains.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "backend_trainer_support.hpp"
#include "gradcheck.hpp"
#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/backend/host_backend.hpp"
#include "seedrl/core/config.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/train/agent_trainer.hpp"
#include "seedrl/train/backend_torso.hpp"

namespace {

using seedrl_test::adam_lr;
using seedrl_test::append_uniform;
using seedrl_test::loss_config;
using seedrl_test::random_batch;

/// y[r, j] = tanh(y[r, j] + b[j]) over rows x width (row stride ld).
template <class S>
struct bias_tanh {
  S* y;
  const S* b;
  std::size_t width, ld;
  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t r = i / width, j = i % width;
    y[r * ld + j] = std::tanh(y[r * ld + j] + b[j]);
  }
};

/// d[r, j] = dy[r, j] (1 - y[r, j]^2): the gradient before the tanh, d contiguous.
template <class S>
struct tanh_backward {
  const S* dy;
  const S* y;
  std::size_t width, ld;
  S* d;
  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t r = i / width, j = i % width;
    const S v = y[r * ld + j];
    d[i] = dy[r * ld + j] * (S(1) - v * v);
  }
};

/// g[j] += sum over rows of d[r, j].
template <class S>
struct add_column_sums {
  const S* d;
  std::size_t rows, width;
  S* g;
  SEEDRL_HOST_DEVICE void operator()(std::size_t j) const {
    for (std::size_t r = 0; r < rows; ++r)
      g[j] += d[r * width + j];
  }
};

/// The user's torso: y = tanh(x W^T + b), W [width, obs] then b [width].
template <class Backend, class S>
class tanh_torso {
 public:
  tanh_torso(Backend& backend, std::size_t obs, std::size_t width)
      : backend_(&backend), obs_(obs), width_(width) {}

  std::size_t num_parameters() const { return width_ * obs_ + width_; }
  std::size_t output_size() const { return width_; }
  std::size_t observation_size() const { return obs_; }
  std::size_t state_size() const { return 0; }
  std::size_t max_rows() const {
    return static_cast<std::size_t>(std::numeric_limits<int>::max()) / (obs_ + width_);
  }
  void reserve(std::size_t rows) {
    if (d_.size() < rows * width_)
      d_ = backend_->template allocate<S>(rows * width_);
  }
  void forward(const seedrl::backend_torso_batch<S>& batch, const S* params, S* out,
               std::size_t ld) {
    const int N = static_cast<int>(batch.rows()), O = static_cast<int>(obs_),
              W = static_cast<int>(width_);
    backend_->gemm(false, true, N, W, O, S(1), batch.observations, O, params, O, S(0), out,
                   static_cast<int>(ld));
    backend_->for_each(batch.rows() * width_,
                       bias_tanh<S>{out, params + width_ * obs_, width_, ld});
  }
  void backward(const seedrl::backend_torso_batch<S>& batch, const S* /*params*/, S* grads,
                const S* out, const S* d_out, std::size_t ld) {
    const std::size_t N = batch.rows();
    backend_->for_each(N * width_, tanh_backward<S>{d_out, out, width_, ld, d_.data()});
    backend_->gemm(true, false, static_cast<int>(width_), static_cast<int>(obs_),
                   static_cast<int>(N), S(1), static_cast<const S*>(d_.data()),
                   static_cast<int>(width_), batch.observations, static_cast<int>(obs_), S(1),
                   grads, static_cast<int>(obs_));
    backend_->for_each(width_, add_column_sums<S>{d_.data(), N, width_, grads + width_ * obs_});
  }

 private:
  Backend* backend_;
  std::size_t obs_, width_;
  typename Backend::template buffer<S> d_;
};

using backend_t = seedrl::host_backend;
using torso_t = tanh_torso<backend_t, double>;
using agent_trainer_t = seedrl::backend_agent_trainer<backend_t, double, torso_t>;

static_assert(seedrl::BackendTorso<torso_t, backend_t, double>);

/// Lacks output_size(); the compile-fail test (compile_fail/torso_without_output_size.cpp)
/// checks the trainer's message for such a type.
struct no_output_size {
  std::size_t num_parameters() const { return 0; }
  std::size_t observation_size() const { return 1; }
  std::size_t state_size() const { return 0; }
  std::size_t max_rows() const { return 1; }
  void reserve(std::size_t) {}
  void forward(const seedrl::backend_torso_batch<double>&, const double*, double*, std::size_t) {}
  void backward(const seedrl::backend_torso_batch<double>&, const double*, double*, const double*,
                const double*, std::size_t) {}
};
static_assert(!seedrl::BackendTorso<no_output_size, backend_t, double>);

constexpr std::size_t obs_size = 3, torso_width = 5;

seedrl::backend_core_config core(std::ptrdiff_t lstm_size, std::ptrdiff_t layers) {
  seedrl::backend_core_config c;
  c.num_actions = 3;
  c.lstm_size = lstm_size;
  c.lstm_layers = layers;
  c.reward_and_action_inputs = true;
  c.max_abs_input_reward = 1.0;
  return c;
}

random_batch<double> make_trainer_batch(std::size_t state_size, std::size_t T, std::size_t B,
                                        seedrl::random_generator& rng) {
  random_batch<double> d;
  d.T = T;
  d.B = B;
  d.A = 3;
  const std::size_t rows = (T + 1) * B;
  append_uniform(d.obs, rows * obs_size, -1.0, 1.0, rng);
  append_uniform(d.rewards, rows, -2.0, 2.0, rng);
  append_uniform(d.start, B * state_size, -0.5, 0.5, rng);
  seedrl_test::draw_steps(d, rng);
  return d;
}

/// The trainer's logits and values for `batch` at parameters `p`.
void outputs(agent_trainer_t& t, std::span<const double> p, const random_batch<double>& batch,
             std::vector<double>& logits, std::vector<double>& values) {
  const std::size_t rows = (batch.T + 1) * batch.B;
  logits.assign(rows * batch.A, 0.0);
  values.assign(rows, 0.0);
  t.set_parameters(p);
  t.evaluate(batch.view(), logits, values);
}

void check_trainer_gradients(std::ptrdiff_t lstm_size, std::ptrdiff_t layers) {
  backend_t backend;
  agent_trainer_t trainer(backend, torso_t(backend, obs_size, torso_width),
                          core(lstm_size, layers));
  const std::size_t H = static_cast<std::size_t>(lstm_size), L = H > 0 ? layers : 0;
  const std::size_t core_in = torso_width + 1 + 3, core_out = L > 0 ? H : core_in;
  std::size_t want_params = torso_width * obs_size + torso_width + 3 * core_out + 3 + core_out + 1;
  for (std::size_t l = 0; l < L; ++l)
    want_params += 4 * H * ((l == 0 ? core_in : H) + H) + 4 * H;
  REQUIRE(trainer.num_parameters() == want_params);
  REQUIRE(trainer.state_size() == 2 * L * H);
  REQUIRE(trainer.observation_size() == obs_size);

  seedrl::random_generator rng(7);
  std::vector<double> p0 = seedrl_test::random_vector(trainer.num_parameters(), rng, 0.5);
  const random_batch<double> batch = make_trainer_batch(trainer.state_size(), 4, 3, rng);

  // The analytic gradient: one training step at p0 (no clipping).
  trainer.set_parameters(p0);
  trainer.set_optimizer(adam_lr(1e-3), 0);
  const seedrl::train_step_result r = trainer.train_step(batch.view(), loss_config(), 1e9);
  REQUIRE(r.applied);
  const std::vector<double> analytic = seedrl_test::gradients_of(trainer);

  // The loss's gradient w.r.t. the outputs at p0, from the CPU loss on the trainer's outputs,
  // whose terms must be the step's.
  std::vector<double> logits, values;
  outputs(trainer, p0, batch, logits, values);
  std::vector<double> d_logits(logits.size()), d_values(values.size());
  seedrl::impala_batch<double> ib{batch.T,     batch.B,        batch.A,         logits,
                                  values,      batch.actions,  batch.behaviour, batch.rewards,
                                  batch.dones, batch.truncated};
  seedrl::impala_gradients<double> ig{d_logits, d_values};
  const seedrl::loss_terms terms = seedrl::impala_loss<double>(loss_config())(ib, ig);
  CHECK(terms.total == Approx(r.terms.total).epsilon(1e-12));

  // V-trace's targets are constants of the loss (no gradient flows through them), so the
  // gradient w.r.t. the parameters is that of sum(d_logits * logits(p)) + sum(d_values *
  // values(p)): the loss with its targets frozen at p0, to first order. Central differences
  // of it in float64:
  std::vector<double> p = p0;
  const auto surrogate = [&] {
    std::vector<double> l, v;
    outputs(trainer, p, batch, l, v);
    return seedrl_test::dot(l, d_logits) + seedrl_test::dot(v, d_values);
  };
  seedrl_test::require_close(seedrl_test::gradcheck(p, analytic, surrogate));
}

}  // namespace

TEST_CASE("agent trainer: a user's tanh torso + 2-layer LSTM matches finite differences",
          "[backend_trainer][agent_trainer]") {
  check_trainer_gradients(4, 2);
}

TEST_CASE("agent trainer: a user's tanh torso without an LSTM matches finite differences",
          "[backend_trainer][agent_trainer]") {
  check_trainer_gradients(0, 1);
}

TEST_CASE("agent trainer: a user's tanh torso trains", "[backend_trainer][agent_trainer]") {
  backend_t backend;
  agent_trainer_t trainer(backend, torso_t(backend, obs_size, torso_width), core(8, 1));
  seedrl::random_generator rng(11);
  trainer.set_parameters(seedrl_test::random_vector(trainer.num_parameters(), rng, 0.3));
  trainer.set_optimizer(adam_lr(1e-2), 0);
  const random_batch<double> batch = make_trainer_batch(trainer.state_size(), 6, 4, rng);
  auto l = loss_config();
  l.entropy_cost = 0.0;
  const double first = trainer.train_step(batch.view(), l, 40.0).terms.baseline;
  double last = first;
  // Adam at 1e-2 wanders for a few hundred steps before it settles; 600 steps reach a fit
  // far below the bar (with episode starts reading no reward, the loss is not down 10x at 200).
  for (int i = 0; i < 600; ++i) {
    const seedrl::train_step_result r = trainer.train_step(batch.view(), l, 40.0);
    REQUIRE(r.applied);
    last = r.terms.baseline;
  }
  INFO("baseline loss " << first << " -> " << last);
  CHECK(last < 0.1 * first);
  CHECK(trainer.optimizer_step_count() == 601);
}

TEST_CASE("agent trainer: a core that cannot work is refused", "[backend_trainer][agent_trainer]") {
  backend_t backend;
  auto bad = core(4, 1);
  bad.num_actions = 0;
  CHECK_THROWS_AS(agent_trainer_t(backend, torso_t(backend, obs_size, torso_width), bad),
                  std::invalid_argument);
  bad = core(-1, 1);
  CHECK_THROWS_AS(agent_trainer_t(backend, torso_t(backend, obs_size, torso_width), bad),
                  std::invalid_argument);
  CHECK_THROWS_AS(agent_trainer_t(backend, torso_t(backend, obs_size, 0), core(4, 1)),
                  std::invalid_argument);
}
