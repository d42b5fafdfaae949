#pragma once
/// \file
/// fp32 2-D convolutions on oneDNN (Debian `libdnnl-dev`), for `host_backend`'s float conv2d
/// primitives (what the CPU conv stacks run). Compiled in when SEEDRL_HAS_DNNL is defined (CMake
/// defines it on seedrl::seedrl when it finds oneDNN); without it this header declares nothing
/// and the callers keep their im2col + GEMM path.
///
/// Tensors are the callers' own: NCHW rows (an image per row, rows `ld` elements apart),
/// weights OIHW, cross-correlation with zero padding, as PyTorch's Conv2d. oneDNN picks its
/// own (blocked) layouts; every operand whose layout differs is reordered into a buffer (a
/// piece of one arena per cache, grown to the largest shape's needs). Primitives are built on
/// the first call for a shape (batch and row strides included) and kept (up to 64 shapes), so
/// a steady state builds nothing; oneDNN itself
/// still allocates a few small blocks per call (its argument map; `set_dnnl_convolutions`
/// turns the path off where that matters).
///
/// Threads: `dnnl_threads()` per call (seedrl/detail/dnnl_runtime.hpp), default 1.
///
/// nvcc (12.x and 13.x) crashes on oneDNN's C++ header, so CUDA translation units do not get
/// this path (SEEDRL_DNNL_CONV stays undefined there). None includes `host_backend` today; one
/// that did would see a `host_backend` of another layout than the C++ units' (an ODR breach).

#if defined(SEEDRL_HAS_DNNL) && !defined(__CUDACC__)
#define SEEDRL_DNNL_CONV 1

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "seedrl/detail/dnnl_runtime.hpp"

namespace seedrl::detail {

/// Sizes of one convolution as oneDNN takes them, row strides included.
struct dnnl_conv2d_shape {
  long N, C, H, W, O, KH, KW, SH, SW, PH, PW;
  long ld_x, ld_y;  // elements between images of the input and of the output
  bool operator==(const dnnl_conv2d_shape&) const = default;
  long OH() const noexcept { return (H + 2 * PH - KH) / SH + 1; }
  long OW() const noexcept { return (W + 2 * PW - KW) / SW + 1; }
};

/// The oneDNN engine and stream (CPU, in-order), one per process.
struct dnnl_context {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  static dnnl_context& get() {
    static dnnl_context c;
    return c;
  }
};

/// One operand of a primitive: the caller's memory (its pointer set per call) and, when the
/// primitive wants another layout, a buffer in that layout and the reorder between the two.
struct dnnl_port {
  dnnl::memory user;      // the caller's tensor, no buffer of its own
  dnnl::memory inside;    // what the primitive reads or writes: `user` or a piece of the arena
  dnnl::primitive move;   // user -> inside (an input) or inside -> user (an output); may be empty
  std::size_t bytes = 0;  // the arena piece `inside` needs (0 when it is `user`)

  /// `sum`: the output reorder adds to what the caller holds (gradient accumulation).
  void init(const dnnl::memory::desc& user_md, const dnnl::memory::desc& want, bool input,
            bool sum = false) {
    auto& ctx = dnnl_context::get();
    user = dnnl::memory(user_md, ctx.engine, DNNL_MEMORY_NONE);
    if (user_md == want && !sum) {
      inside = user;
      return;
    }
    inside = dnnl::memory(want, ctx.engine, DNNL_MEMORY_NONE);
    bytes = want.get_size();
    dnnl::primitive_attr attr;
    if (sum) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    if (input)
      move = dnnl::reorder(dnnl::reorder::primitive_desc(user, inside, attr));
    else
      move = dnnl::reorder(dnnl::reorder::primitive_desc(inside, user, attr));
  }
  bool reorders() const noexcept { return static_cast<bool>(move); }
};

/// Arena pieces start on 64-byte boundaries (oneDNN's preferred alignment).
inline std::size_t dnnl_round_up(std::size_t bytes) noexcept {
  return (bytes + 63) / 64 * 64;
}

/// Runs `p` with `n` (argument, memory) pairs through the C API: no map built per call.
inline void dnnl_run(const dnnl::primitive& p, const dnnl_exec_arg_t* args, int n) {
  const auto status = dnnl_primitive_execute(p.get(), dnnl_context::get().stream.get(), n, args);
  if (status != dnnl_success)
    throw std::runtime_error("seedrl: a oneDNN primitive failed (status " +
                             std::to_string(static_cast<int>(status)) + ")");
}
/// The forward, backward-data and backward-weights primitives of one shape, with their ports.
class dnnl_conv2d_entry {
 public:
  explicit dnnl_conv2d_entry(const dnnl_conv2d_shape& s) : shape_(s) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const long OH = s.OH(), OW = s.OW();
    src_ = {{s.N, s.C, s.H, s.W}, dt::f32, dnnl::memory::dims{s.ld_x, s.H * s.W, s.W, 1}};
    dst_ = {{s.N, s.O, OH, OW}, dt::f32, dnnl::memory::dims{s.ld_y, OH * OW, OW, 1}};
    wei_ = {{s.O, s.C, s.KH, s.KW}, dt::f32, tag::oihw};
    bias_ = {{s.O}, dt::f32, tag::x};
    any_src_ = {{s.N, s.C, s.H, s.W}, dt::f32, tag::any};
    any_dst_ = {{s.N, s.O, OH, OW}, dt::f32, tag::any};
    any_wei_ = {{s.O, s.C, s.KH, s.KW}, dt::f32, tag::any};
    strides_ = {s.SH, s.SW};
    pad_l_ = {s.PH, s.PW};
    // Right padding: what makes the last window end inside the padded image (PyTorch's floor).
    pad_r_ = {(OH - 1) * s.SH + s.KH - s.H - s.PH, (OW - 1) * s.SW + s.KW - s.W - s.PW};
    attr_.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training,
                                            dnnl::algorithm::convolution_direct, any_src_, any_wei_,
                                            bias_, any_dst_, strides_, pad_l_, pad_r_);
    fwd_pd_ = {d, attr_, dnnl_context::get().engine};
    fwd_ = dnnl::convolution_forward(fwd_pd_);
    fx_.init(src_, fwd_pd_.src_desc(), true);
    fw_.init(wei_, fwd_pd_.weights_desc(), true);
    fb_.init(bias_, fwd_pd_.bias_desc(), true);
    fy_.init(dst_, fwd_pd_.dst_desc(), false);
    grow_scratchpad(fwd_pd_.scratchpad_desc());
  }

  const dnnl_conv2d_shape& shape() const noexcept { return shape_; }

  /// Bytes of arena this shape's primitives built so far need (`bind`'s `base` onwards).
  std::size_t arena_bytes() const noexcept {
    std::size_t n = dnnl_round_up(scratchpad_bytes_);
    for (const dnnl_port* p : ports())
      n += dnnl_round_up(p->bytes);
    return n;
  }

  /// Points the reorder buffers and the scratchpad at their pieces of the arena at `base`
  /// (64-byte aligned, at least `arena_bytes()`): the cache's arena is shared by every shape.
  void bind(std::byte* base) {
    scratchpad_.set_data_handle(base);
    base += dnnl_round_up(scratchpad_bytes_);
    for (const dnnl_port* p : ports()) {
      if (p->bytes == 0)
        continue;
      p->inside.set_data_handle(base);
      base += dnnl_round_up(p->bytes);
    }
  }

  void forward(const float* x, const float* w, const float* bias, float* y) {
    fx_.user.set_data_handle(const_cast<float*>(x));
    fw_.user.set_data_handle(const_cast<float*>(w));
    fb_.user.set_data_handle(const_cast<float*>(bias));
    fy_.user.set_data_handle(y);
    move_in(fx_);
    move_in(fw_);
    move_in(fb_);
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, fx_.inside.get()},
                                    {DNNL_ARG_WEIGHTS, fw_.inside.get()},
                                    {DNNL_ARG_BIAS, fb_.inside.get()},
                                    {DNNL_ARG_DST, fy_.inside.get()},
                                    {DNNL_ARG_SCRATCHPAD, scratchpad_.get()}};
    dnnl_run(fwd_, args, 5);
    move_out(fy_);
  }

  /// dw += d/dw, dbias += d/dbias; dx = d/dx unless null.
  /// Builds the backward primitives (weights; data too when `data`) unless built: the arena
  /// may need to grow before `bind`.
  void prepare_backward(bool data) {
    if (!bwd_w_)
      build_backward_weights();
    if (data && !bwd_d_)
      build_backward_data();
  }

  void backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                float* dbias) {
    wx_.user.set_data_handle(const_cast<float*>(x));
    wdy_.user.set_data_handle(const_cast<float*>(dy));
    wdw_.user.set_data_handle(dw);
    move_in(wx_);
    move_in(wdy_);
    const dnnl_exec_arg_t wargs[] = {{DNNL_ARG_SRC, wx_.inside.get()},
                                     {DNNL_ARG_DIFF_DST, wdy_.inside.get()},
                                     {DNNL_ARG_DIFF_WEIGHTS, wdw_.inside.get()},
                                     {DNNL_ARG_DIFF_BIAS, diff_bias_.get()},
                                     {DNNL_ARG_SCRATCHPAD, scratchpad_.get()}};
    dnnl_run(bwd_w_, wargs, 5);
    move_out(wdw_);  // a reorder with a sum post-op: accumulates into dw
    const auto* db = static_cast<const float*>(diff_bias_.get_data_handle());
    for (long o = 0; o < shape_.O; ++o)
      dbias[o] += db[o];
    if (dx == nullptr)
      return;
    dw_.user.set_data_handle(const_cast<float*>(w));
    ddy_.user.set_data_handle(const_cast<float*>(dy));
    ddx_.user.set_data_handle(dx);
    move_in(dw_);
    move_in(ddy_);
    const dnnl_exec_arg_t dargs[] = {{DNNL_ARG_DIFF_DST, ddy_.inside.get()},
                                     {DNNL_ARG_WEIGHTS, dw_.inside.get()},
                                     {DNNL_ARG_DIFF_SRC, ddx_.inside.get()},
                                     {DNNL_ARG_SCRATCHPAD, scratchpad_.get()}};
    dnnl_run(bwd_d_, dargs, 4);
    move_out(ddx_);
  }

 private:
  void build_backward_weights() {
    auto& eng = dnnl_context::get().engine;
    const dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, any_src_,
                                                     any_wei_, bias_, any_dst_, strides_, pad_l_,
                                                     pad_r_);
    const dnnl::convolution_backward_weights::primitive_desc pd(d, attr_, eng, fwd_pd_);
    wx_.init(src_, pd.src_desc(), true);
    wdy_.init(dst_, pd.diff_dst_desc(), true);
    wdw_.init(wei_, pd.diff_weights_desc(), false, true);
    diff_bias_ = dnnl::memory(pd.diff_bias_desc(), eng);
    grow_scratchpad(pd.scratchpad_desc());
    bwd_w_ = dnnl::convolution_backward_weights(pd);
  }
  void build_backward_data() {
    auto& eng = dnnl_context::get().engine;
    const dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, any_src_,
                                                  any_wei_, any_dst_, strides_, pad_l_, pad_r_);
    const dnnl::convolution_backward_data::primitive_desc pd(d, attr_, eng, fwd_pd_);
    dw_.init(wei_, pd.weights_desc(), true);
    ddy_.init(dst_, pd.diff_dst_desc(), true);
    ddx_.init(src_, pd.diff_src_desc(), false);
    grow_scratchpad(pd.scratchpad_desc());
    bwd_d_ = dnnl::convolution_backward_data(pd);
  }
  void grow_scratchpad(const dnnl::memory::desc& md) {
    if (!scratchpad_ || scratchpad_bytes_ < md.get_size()) {
      scratchpad_bytes_ = std::max<std::size_t>(md.get_size(), 1);
      const auto bytes = static_cast<long>(scratchpad_bytes_);
      scratchpad_ =
          dnnl::memory({{bytes}, dnnl::memory::data_type::u8, dnnl::memory::format_tag::x},
                       dnnl_context::get().engine, DNNL_MEMORY_NONE);
    }
  }
  std::array<const dnnl_port*, 10> ports() const noexcept {
    return {&fx_, &fw_, &fb_, &fy_, &wx_, &wdy_, &wdw_, &dw_, &ddy_, &ddx_};
  }
  static void move_in(const dnnl_port& p) {
    if (!p.reorders())
      return;
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, p.user.get()}, {DNNL_ARG_TO, p.inside.get()}};
    dnnl_run(p.move, args, 2);
  }
  static void move_out(const dnnl_port& p) {
    if (!p.reorders())
      return;
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, p.inside.get()}, {DNNL_ARG_TO, p.user.get()}};
    dnnl_run(p.move, args, 2);
  }

  dnnl_conv2d_shape shape_;
  dnnl::memory::desc src_, dst_, wei_, bias_, any_src_, any_dst_, any_wei_;
  dnnl::memory::dims strides_, pad_l_, pad_r_;
  dnnl::primitive_attr attr_;
  dnnl::convolution_forward::primitive_desc fwd_pd_;
  dnnl::primitive fwd_, bwd_w_, bwd_d_;
  dnnl_port fx_, fw_, fb_, fy_;  // forward
  dnnl_port wx_, wdy_, wdw_;     // backward weights
  dnnl_port dw_, ddy_, ddx_;     // backward data
  dnnl::memory diff_bias_, scratchpad_;
  std::size_t scratchpad_bytes_ = 0;
};

/// Primitives per shape, built on first use. Copies start empty (a copied layer or backend
/// builds its own). Not for two threads at once: callers take `lock()` and fall back to their
/// own path when it is busy.
class dnnl_conv2d_cache {
 public:
  dnnl_conv2d_cache() = default;
  dnnl_conv2d_cache(const dnnl_conv2d_cache&) {}
  dnnl_conv2d_cache& operator=(const dnnl_conv2d_cache&) { return *this; }

  /// Tries to take the cache for this call; false when another thread holds it.
  bool try_lock() { return mutex_.try_lock(); }
  /// Releases what a successful `try_lock` took, at the end of its scope.
  struct held {
    dnnl_conv2d_cache& cache;
    explicit held(dnnl_conv2d_cache& c) : cache(c) {}
    ~held() { cache.mutex_.unlock(); }
    held(const held&) = delete;
    held& operator=(const held&) = delete;
  };

  /// The primitives for `s` (the caller holds the lock), under `dnnl_threads()` threads.
  /// A learner's batches vary in size, so the shapes seen are many: past `max_entries` the
  /// oldest is dropped, and the reorder buffers live in one arena for all (`bind`).
  dnnl_conv2d_entry& at(const dnnl_conv2d_shape& s) {
    for (auto& e : entries_) {
      if (e->shape() == s)
        return *e;
    }
    if (entries_.size() >= max_entries)
      entries_.erase(entries_.begin());
    entries_.push_back(std::make_unique<dnnl_conv2d_entry>(s));
    return *entries_.back();
  }

  /// Grows the arena to `e`'s needs and binds `e` to it.
  void bind(dnnl_conv2d_entry& e) {
    const std::size_t need = e.arena_bytes() + 64;
    if (arena_.size() < need)
      arena_.resize(need);
    const auto address = reinterpret_cast<std::uintptr_t>(arena_.data());
    e.bind(arena_.data() + (dnnl_round_up(address) - address));
  }

  static constexpr std::size_t max_entries = 64;

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<dnnl_conv2d_entry>> entries_;
  std::vector<std::byte> arena_;  // reorder buffers and scratchpad, shared by the entries
};

/// y = conv(x, w) + bias through the cache; false (nothing done) when the cache is busy or
/// oneDNN convolutions are off (`set_dnnl_convolutions`).
inline bool dnnl_conv2d_forward(dnnl_conv2d_cache& cache, const dnnl_conv2d_shape& s,
                                const float* x, const float* w, const float* bias, float* y) {
  if (!dnnl_convolutions() || !cache.try_lock())
    return false;
  const dnnl_conv2d_cache::held hold(cache);
  const omp_threads_scope threads(dnnl_threads());
  auto& e = cache.at(s);
  cache.bind(e);
  e.forward(x, w, bias, y);
  return true;
}

/// dw += d/dw, dbias += d/dbias, dx = d/dx (unless null) through the cache; false (nothing
/// done) when the cache is busy or oneDNN convolutions are off.
inline bool dnnl_conv2d_backward(dnnl_conv2d_cache& cache, const dnnl_conv2d_shape& s,
                                 const float* x, const float* w, const float* dy, float* dx,
                                 float* dw, float* dbias) {
  if (!dnnl_convolutions() || !cache.try_lock())
    return false;
  const dnnl_conv2d_cache::held hold(cache);
  const omp_threads_scope threads(dnnl_threads());
  auto& e = cache.at(s);
  e.prepare_backward(dx != nullptr);
  cache.bind(e);
  e.backward(x, w, dy, dx, dw, dbias);
  return true;
}

}  // namespace seedrl::detail

#endif  // SEEDRL_HAS_DNNL && !__CUDACC__
