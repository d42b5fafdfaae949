#pragma once
/// \file
/// A stack of LSTM layers over row-major batches, with per-environment state resets.
///
/// Gate order is PyTorch's: input, forget, cell candidate, output. Layer l keeps one weight
/// matrix W_l = [W_ih | W_hh] of shape [4H, I_l + H] (row-major) and one bias b_l of [4H]
/// (PyTorch's b_ih + b_hh): the input and recurrent products are a single GEMM over [x, h].
/// The state of one environment is one row of `state_size()` elements: for each layer, h then
/// c. Where `done` is set for a step, that environment's state (every layer) is zeroed before
/// the step, as SEED RL's agents do at episode starts; no gradient flows across such a reset.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/detail/dnnl_runtime.hpp"
#include "seedrl/detail/gemm_tiled.hpp"
#include "seedrl/detail/lstm_math.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// Sizes of an LSTM stack.
struct lstm_config {
  std::ptrdiff_t input_size = 0;
  std::ptrdiff_t hidden_size = 0;
  std::ptrdiff_t num_layers = 1;
  /// Added to the forget-gate biases at initialisation (1 is common: it keeps memories early
  /// in training); the biases stay trainable.
  double forget_bias = 0.0;
};

/// Multi-layer LSTM; see the file comment. Parameters live in the owner's flat buffer.
template <std::floating_point S>
class lstm {
 public:
  lstm() = default;
  explicit lstm(const lstm_config& config) : config_(config) {
    if (config.input_size <= 0 || config.hidden_size <= 0 || config.num_layers <= 0) {
      throw std::invalid_argument(
          "seedrl::lstm: input_size, hidden_size and num_layers must be positive");
    }
  }

  const lstm_config& config() const noexcept { return config_; }
  std::ptrdiff_t hidden_size() const noexcept { return config_.hidden_size; }
  std::ptrdiff_t num_layers() const noexcept { return config_.num_layers; }

  /// Elements of one environment's state: (h, c) per layer.
  std::ptrdiff_t state_size() const noexcept {
    return 2 * config_.num_layers * config_.hidden_size;
  }

  /// Input width of layer l: the stack's input for layer 0, H above it.
  std::ptrdiff_t layer_input_size(std::ptrdiff_t l) const noexcept {
    return l == 0 ? config_.input_size : config_.hidden_size;
  }

  std::size_t num_parameters() const noexcept {
    std::size_t n = 0;
    for (std::ptrdiff_t l = 0; l < config_.num_layers; ++l)
      n += layer_parameters(l);
    return n;
  }

  void bind(S* params, S* grads) noexcept {
    params_ = params;
    grads_ = grads;
  }

  /// Weights and biases uniform in +-1/sqrt(H) (PyTorch's default), forget biases shifted.
  void init(random_generator& rng) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(config_.hidden_size));
    for (std::size_t i = 0; i < num_parameters(); ++i) {
      params_[i] = static_cast<S>(rng.uniform(-bound, bound));
    }
    const std::ptrdiff_t H = config_.hidden_size;
    for (std::ptrdiff_t l = 0; l < config_.num_layers; ++l) {
      S* b = params_ + offset(l) + 4 * H * (layer_input_size(l) + H);
      for (std::ptrdiff_t j = H; j < 2 * H; ++j)
        b[j] += static_cast<S>(config_.forget_bias);
    }
  }

  /// W_l = [W_ih | W_hh], [4H, I_l + H]; its gradient; b_l [4H] and its gradient.
  matrix_view<S> weight(std::ptrdiff_t l) {
    return view(params_ + offset(l), 4 * hidden_size(), cols(l));
  }
  const_matrix_view<S> weight(std::ptrdiff_t l) const {
    return cview<S>(params_ + offset(l), 4 * hidden_size(), cols(l));
  }
  matrix_view<S> weight_grad(std::ptrdiff_t l) {
    return view(grads_ + offset(l), 4 * hidden_size(), cols(l));
  }
  std::span<S> bias(std::ptrdiff_t l) {
    return {params_ + offset(l) + 4 * hidden_size() * cols(l),
            static_cast<std::size_t>(4 * hidden_size())};
  }
  std::span<S> bias_grad(std::ptrdiff_t l) {
    return {grads_ + offset(l) + 4 * hidden_size() * cols(l),
            static_cast<std::size_t>(4 * hidden_size())};
  }

  /// One inference step for B environments: `x` [B, input_size], `dones` [B] (empty: none),
  /// `state` [B, state_size()] read and overwritten, `y` [B, H] gets the top layer's h.
  /// Allocates only when B exceeds every earlier batch.
  void step(const_matrix_view<S> x, std::span<const std::uint8_t> dones, matrix_view<S> state,
            matrix_view<S> y) {
    const std::ptrdiff_t B = x.rows(), H = hidden_size();
    check_rows("step: x", x.cols(), config_.input_size);
    check_rows("step: state rows", state.rows(), B);
    check_rows("step: state width", state.cols(), state_size());
    check_rows("step: y rows", y.rows(), B);
    check_rows("step: y width", y.cols(), H);
    if (!dones.empty())
      check_rows("step: dones", static_cast<std::ptrdiff_t>(dones.size()), B);
    grow(step_xh_, B * (std::max(config_.input_size, H) + H));
    grow(step_gates_, B * 4 * H);
    grow(step_c_prev_, B * H);
    for (std::ptrdiff_t l = 0; l < num_layers(); ++l) {
      const std::ptrdiff_t I = layer_input_size(l);
      auto xh = view(step_xh_.data(), B, I + H);
      if (l == 0) {
        xh.leftCols(I) = x;
      } else {
        xh.leftCols(I) = state.middleCols(2 * H * (l - 1), H);  // layer below, already updated
      }
      xh.rightCols(H) = state.middleCols(2 * H * l, H);
      auto c_prev = view(step_c_prev_.data(), B, H);
      c_prev = state.middleCols(2 * H * l + H, H);
      apply_resets(dones, 0, xh.rightCols(H), c_prev);
      auto gates = view(step_gates_.data(), B, 4 * H);
      layer_gates(l, cview(xh), gates);
      pointwise_forward(gates, cview(c_prev), state.middleCols(2 * H * l + H, H), nullptr,
                        state.middleCols(2 * H * l, H));
    }
    y = state.middleCols(2 * H * (num_layers() - 1), H);
  }

  /// Forward over T steps of B environments (rows t*B + b), from `start_state` [B,
  /// state_size()], resetting where `dones` [T*B] is set. Writes the top layer's h to `y`
  /// [T*B, H] and, if given, the final state to `end_state` [B, state_size()]. Keeps what
  /// `backward_unroll` needs.
  void forward_unroll(std::ptrdiff_t T, std::ptrdiff_t B, const_matrix_view<S> x,
                      std::span<const std::uint8_t> dones, const_matrix_view<S> start_state,
                      matrix_view<S> y, matrix_view<S>* end_state = nullptr) {
    const std::ptrdiff_t H = hidden_size(), L = num_layers(), N = T * B;
    check_rows("forward_unroll: x rows", x.rows(), N);
    check_rows("forward_unroll: x width", x.cols(), config_.input_size);
    check_rows("forward_unroll: dones", static_cast<std::ptrdiff_t>(dones.size()), N);
    check_rows("forward_unroll: start_state rows", start_state.rows(), B);
    check_rows("forward_unroll: start_state width", start_state.cols(), state_size());
    check_rows("forward_unroll: y rows", y.rows(), N);
    T_ = T;
    B_ = B;
    dones_.assign(dones.begin(), dones.end());
    cache_.resize(static_cast<std::size_t>(L));
    for (std::ptrdiff_t l = 0; l < L; ++l) {
      auto& c = cache_[static_cast<std::size_t>(l)];
      const std::ptrdiff_t I = layer_input_size(l);
      c.xh.resize(static_cast<std::size_t>(N * (I + H)));
      c.act.resize(static_cast<std::size_t>(N * 4 * H));
      c.c_prev.resize(static_cast<std::size_t>(N * H));
      c.c.resize(static_cast<std::size_t>(N * H));
      c.tanh_c.resize(static_cast<std::size_t>(N * H));
      c.h.resize(static_cast<std::size_t>(N * H));
    }
    for (std::ptrdiff_t t = 0; t < T; ++t) {
      for (std::ptrdiff_t l = 0; l < L; ++l) {
        auto& c = cache_[static_cast<std::size_t>(l)];
        const std::ptrdiff_t I = layer_input_size(l);
        auto xh = view(c.xh.data() + t * B * (I + H), B, I + H);
        if (l == 0) {
          xh.leftCols(I) = x.middleRows(t * B, B);
        } else {
          xh.leftCols(I) = view(cache_[static_cast<std::size_t>(l - 1)].h.data() + t * B * H, B, H);
        }
        auto c_prev = view(c.c_prev.data() + t * B * H, B, H);
        if (t == 0) {
          xh.rightCols(H) = start_state.middleCols(2 * H * l, H);
          c_prev = start_state.middleCols(2 * H * l + H, H);
        } else {
          xh.rightCols(H) = view(c.h.data() + (t - 1) * B * H, B, H);
          c_prev = view(c.c.data() + (t - 1) * B * H, B, H);
        }
        apply_resets(dones, t * B, xh.rightCols(H), c_prev);
        auto act = view(c.act.data() + t * B * 4 * H, B, 4 * H);
        layer_gates(l, cview(xh), act);
        pointwise_forward(act, cview(c_prev), view(c.c.data() + t * B * H, B, H),
                          c.tanh_c.data() + t * B * H, view(c.h.data() + t * B * H, B, H));
      }
    }
    y = view(cache_.back().h.data(), N, H);
    if (end_state != nullptr) {
      check_rows("forward_unroll: end_state rows", end_state->rows(), B);
      for (std::ptrdiff_t l = 0; l < L; ++l) {
        const auto& c = cache_[static_cast<std::size_t>(l)];
        end_state->middleCols(2 * H * l, H) = cview(c.h.data() + (T - 1) * B * H, B, H);
        end_state->middleCols(2 * H * l + H, H) = cview(c.c.data() + (T - 1) * B * H, B, H);
      }
    }
  }

  /// Back-propagates through time after `forward_unroll`. `dy` [T*B, H] is the loss's gradient
  /// w.r.t. `y`; `d_end_state` [B, state_size()] w.r.t. the final state (nullptr: zero).
  /// Accumulates parameter gradients; writes dx [T*B, input_size] and the gradient w.r.t. the
  /// start state [B, state_size()] when those are given.
  void backward_unroll(const_matrix_view<S> dy, const const_matrix_view<S>* d_end_state = nullptr,
                       matrix_view<S>* dx = nullptr, matrix_view<S>* d_start_state = nullptr) {
    const std::ptrdiff_t T = T_, B = B_, H = hidden_size(), L = num_layers(), N = T * B;
    if (cache_.empty() || T == 0) {
      throw std::logic_error("seedrl::lstm::backward_unroll: call forward_unroll first");
    }
    check_rows("backward_unroll: dy rows", dy.rows(), N);
    check_rows("backward_unroll: dy width", dy.cols(), H);
    // Per layer: gradient w.r.t. the next step's incoming h and c, and dZ for every step.
    dh_next_.assign(static_cast<std::size_t>(L * B * H), S(0));
    dc_next_.assign(static_cast<std::size_t>(L * B * H), S(0));
    if (d_end_state != nullptr) {
      for (std::ptrdiff_t l = 0; l < L; ++l) {
        view(dh_next_.data() + l * B * H, B, H) = d_end_state->middleCols(2 * H * l, H);
        view(dc_next_.data() + l * B * H, B, H) = d_end_state->middleCols(2 * H * l + H, H);
      }
    }
    dz_.resize(static_cast<std::size_t>(L));
    for (auto& d : dz_)
      d.resize(static_cast<std::size_t>(N * 4 * H));
    dh_.resize(static_cast<std::size_t>(B * H));
    dxh_.resize(static_cast<std::size_t>(B * (std::max(config_.input_size, H) + H)));
    dbelow_.resize(static_cast<std::size_t>(B * H));
    for (std::ptrdiff_t t = T - 1; t >= 0; --t) {
      for (std::ptrdiff_t l = L - 1; l >= 0; --l) {
        const auto& c = cache_[static_cast<std::size_t>(l)];
        const std::ptrdiff_t I = layer_input_size(l);
        auto dh = view(dh_.data(), B, H);
        auto dh_next = view(dh_next_.data() + l * B * H, B, H);
        auto dc_next = view(dc_next_.data() + l * B * H, B, H);
        if (l == L - 1) {
          dh = dy.middleRows(t * B, B) + dh_next;
        } else {
          dh = view(dbelow_.data(), B, H) + dh_next;
        }
        auto dz = view(dz_[static_cast<std::size_t>(l)].data() + t * B * 4 * H, B, 4 * H);
        for (std::ptrdiff_t b = 0; b < B; ++b) {
          const S* a = c.act.data() + (t * B + b) * 4 * H;
          const std::ptrdiff_t r = (t * B + b) * H;
          S* z = dz.row(b).data();
          for (std::ptrdiff_t j = 0; j < H; ++j) {
            const auto g = detail::lstm_unit_grad(a[j], a[H + j], a[2 * H + j], a[3 * H + j],
                                                  c.tanh_c[static_cast<std::size_t>(r + j)],
                                                  c.c_prev[static_cast<std::size_t>(r + j)],
                                                  dh(b, j), dc_next(b, j));
            z[j] = g.dzi;
            z[H + j] = g.dzf;
            z[2 * H + j] = g.dzg;
            z[3 * H + j] = g.dzo;
            dc_next(b, j) = g.dc_prev;  // becomes the gradient w.r.t. step t-1's c
          }
        }
        auto dxh = view(dxh_.data(), B, I + H);
        dxh.noalias() = cview(dz) * weight(l);
        if (l > 0) {
          view(dbelow_.data(), B, H) = dxh.leftCols(I);
        } else if (dx != nullptr) {
          dx->middleRows(t * B, B) = dxh.leftCols(I);
        }
        dh_next = dxh.rightCols(H);
        // A reset at step t means the state fed in was zero, not step t-1's: cut the path.
        apply_resets(std::span<const std::uint8_t>(dones_), t * B, dh_next, dc_next);
      }
    }
    for (std::ptrdiff_t l = 0; l < L; ++l) {
      const std::ptrdiff_t I = layer_input_size(l);
      auto dz = cview<S>(dz_[static_cast<std::size_t>(l)].data(), N, 4 * H);
      weight_grad(l).noalias() +=
          dz.transpose() * cview<S>(cache_[static_cast<std::size_t>(l)].xh.data(), N, I + H);
      auto db = bias_grad(l);
      Eigen::Map<Eigen::Matrix<S, 1, Eigen::Dynamic>>(db.data(), 4 * H) += dz.colwise().sum();
    }
    if (d_start_state != nullptr) {
      for (std::ptrdiff_t l = 0; l < L; ++l) {
        d_start_state->middleCols(2 * H * l, H) = view(dh_next_.data() + l * B * H, B, H);
        d_start_state->middleCols(2 * H * l + H, H) = view(dc_next_.data() + l * B * H, B, H);
      }
    }
  }

 private:
  struct layer_cache {
    std::vector<S> xh, act, c_prev, c, tanh_c, h;
  };

  std::ptrdiff_t cols(std::ptrdiff_t l) const noexcept {
    return layer_input_size(l) + hidden_size();
  }
  std::size_t layer_parameters(std::ptrdiff_t l) const noexcept {
    return static_cast<std::size_t>(4 * hidden_size() * (cols(l) + 1));
  }
  std::size_t offset(std::ptrdiff_t l) const noexcept {
    std::size_t n = 0;
    for (std::ptrdiff_t k = 0; k < l; ++k)
      n += layer_parameters(k);
    return n;
  }

  /// Pre-activations z = [x, h] W^T + b.
  void layer_gates(std::ptrdiff_t l, const_matrix_view<S> xh, matrix_view<S> z) const {
    gates_product(l, xh, z);
    const S* b = params_ + offset(l) + 4 * hidden_size() * cols(l);
    z.rowwise() += Eigen::Map<const Eigen::Matrix<S, 1, Eigen::Dynamic>>(b, 4 * hidden_size());
  }

  /// z = [x, h] W^T.
  void gates_product(std::ptrdiff_t l, const_matrix_view<S> xh, matrix_view<S> z) const {
#ifdef SEEDRL_HAS_DNNL
    // oneDNN's sgemm packs once for the whole product, where the stack-sized tiles below
    // repack per tile: 1.3-1.9x faster from 32 rows up (docs/performance.md), no faster at 1.
    if constexpr (std::is_same_v<S, float>) {
      if (xh.rows() >= 16) {
        detail::dnnl_gemm(false, true, xh.rows(), z.cols(), xh.cols(), xh.data(), xh.outerStride(),
                          weight(l).data(), cols(l), 0.0f, z.data(), z.outerStride());
        return;
      }
    }
#endif
    detail::gemm_stack_tiled(z, xh, weight(l).transpose(), false);  // no malloc at large H
  }

  /// Gate nonlinearities and the state update for B rows, on whole rows at a time so that
  /// Eigen's vectorised logistic and tanh do the work (this is most of an inference step's
  /// time at small H). `z` holds pre-activations and gets the activated gates; `tanh_c`
  /// (B x H, contiguous) is filled when given. Computes what detail::lstm_unit computes.
  template <class CellOut, class HiddenOut>
  void pointwise_forward(matrix_view<S> z, const_matrix_view<S> c_prev, CellOut&& c, S* tanh_c,
                         HiddenOut&& h) const {
    const std::ptrdiff_t H = hidden_size(), B = z.rows();
    z.leftCols(2 * H) = z.leftCols(2 * H).array().logistic();
    z.middleCols(2 * H, H) = z.middleCols(2 * H, H).array().tanh();
    z.rightCols(H) = z.rightCols(H).array().logistic();
    c = z.middleCols(H, H).cwiseProduct(c_prev) +
        z.leftCols(H).cwiseProduct(z.middleCols(2 * H, H));
    if (tanh_c != nullptr) {
      auto tc = view(tanh_c, B, H);
      tc = c.array().tanh();
      h = z.rightCols(H).cwiseProduct(tc);
    } else {
      h = z.rightCols(H).array() * c.array().tanh();
    }
  }

  template <class A, class C>
  static void apply_resets(std::span<const std::uint8_t> dones, std::ptrdiff_t first, A&& h,
                           C&& c) {
    if (dones.empty())
      return;
    for (std::ptrdiff_t b = 0; b < h.rows(); ++b) {
      if (dones[static_cast<std::size_t>(first + b)]) {
        h.row(b).setZero();
        c.row(b).setZero();
      }
    }
  }

  static void grow(std::vector<S>& v, std::ptrdiff_t n) {
    if (v.size() < static_cast<std::size_t>(n))
      v.resize(static_cast<std::size_t>(n));
  }

  static void check_rows(const char* what, std::ptrdiff_t got, std::ptrdiff_t want) {
    if (got != want) {
      throw std::invalid_argument(std::string("seedrl::lstm::") + what + " is " +
                                  std::to_string(got) + ", expected " + std::to_string(want));
    }
  }

  lstm_config config_;
  S* params_ = nullptr;
  S* grads_ = nullptr;
  // inference workspaces
  std::vector<S> step_xh_, step_gates_, step_c_prev_;
  // training caches and workspaces
  std::ptrdiff_t T_ = 0, B_ = 0;
  std::vector<std::uint8_t> dones_;
  std::vector<layer_cache> cache_;
  std::vector<std::vector<S>> dz_;
  std::vector<S> dh_next_, dc_next_, dh_, dxh_, dbelow_;
};

}  // namespace seedrl
