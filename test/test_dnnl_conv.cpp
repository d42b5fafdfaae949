// Float convolutions against a float64 direct loop on odd shapes (strides, padding, kernels
// that do not tile the image, batch 1 and above): forward, the weight and bias gradients
// (accumulated onto what was there) and the input gradient (overwritten). Built with oneDNN
// (SEEDRL_HAS_DNNL) these run its primitives: directly and through `host_backend` (what every
// conv stack runs); without it the second checks the im2col path, and the first is left out.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "seedrl/backend/host_backend.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/detail/dnnl_conv2d.hpp"

namespace {

struct geometry {
  int N, C, H, W, O, KH, KW, SH, SW, PH, PW;
  int OH() const { return (H + 2 * PH - KH) / SH + 1; }
  int OW() const { return (W + 2 * PW - KW) / SW + 1; }
  std::size_t in() const { return static_cast<std::size_t>(C * H * W); }
  std::size_t out() const { return static_cast<std::size_t>(O * OH() * OW()); }
  std::size_t taps() const { return static_cast<std::size_t>(C * KH * KW); }
  std::string name() const {
    // Appended piece by piece: GCC 12's -Wrestrict misfires on "literal" + std::string at -O3.
    std::string s;
    const auto add = [&s](const char* label, int a, int b) {
      s += label;
      s += std::to_string(a);
      if (b >= 0) {
        s += 'x';
        s += std::to_string(b);
      }
    };
    add("N", N, -1);
    add(" C", C, -1);
    add(" ", H, W);
    add(" O", O, -1);
    add(" k", KH, KW);
    add(" s", SH, SW);
    add(" p", PH, PW);
    return s;
  }
};

const geometry shapes[] = {
    {1, 3, 7, 9, 5, 3, 2, 2, 3, 1, 0},    // batch 1, uneven strides and padding
    {3, 4, 11, 10, 6, 4, 4, 2, 2, 1, 2},  // a kernel that leaves a ragged edge
    {2, 4, 20, 20, 8, 8, 8, 4, 4, 0, 0},  // Nature CNN's first layer, small
    {5, 16, 9, 7, 16, 3, 3, 1, 1, 1, 1},  // IMPALA's 3x3 padding 1
    {4, 2, 5, 5, 3, 1, 1, 1, 1, 0, 0},    // 1x1
    {2, 3, 6, 13, 4, 5, 3, 3, 2, 2, 1}};  // stride 3 with padding

/// The float64 reference: y, then the gradients for dy at (x, w).
struct reference {
  std::vector<double> y, dw, db, dx;
  reference(const geometry& g, const std::vector<float>& x, const std::vector<float>& w,
            const std::vector<float>& b, const std::vector<float>& dy)
      : y(g.N * g.out()), dw(g.O * g.taps()), db(g.O), dx(g.N * g.in()) {
    const int OH = g.OH(), OW = g.OW();
    for (int n = 0; n < g.N; ++n)
      for (int o = 0; o < g.O; ++o)
        for (int oh = 0; oh < OH; ++oh)
          for (int ow = 0; ow < OW; ++ow) {
            const std::size_t yi = n * g.out() + static_cast<std::size_t>((o * OH + oh) * OW + ow);
            double sum = b[o];
            const double d = dy[yi];
            db[o] += d;
            for (int c = 0; c < g.C; ++c)
              for (int kh = 0; kh < g.KH; ++kh)
                for (int kw = 0; kw < g.KW; ++kw) {
                  const int ih = oh * g.SH - g.PH + kh, iw = ow * g.SW - g.PW + kw;
                  if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W)
                    continue;
                  const std::size_t xi =
                      n * g.in() + static_cast<std::size_t>((c * g.H + ih) * g.W + iw);
                  const std::size_t wi =
                      static_cast<std::size_t>(((o * g.C + c) * g.KH + kh) * g.KW + kw);
                  sum += static_cast<double>(w[wi]) * x[xi];
                  dw[wi] += d * x[xi];
                  dx[xi] += d * w[wi];
                }
            y[yi] = sum;
          }
  }
};

/// got[i * ld + j] (j < width) against want[i * width + j], within tol (1 + |want|).
void check_close(const char* what, const float* got, std::size_t rows, std::size_t width,
                 std::size_t ld, const std::vector<double>& want, double tol = 2e-5) {
  INFO(what);
  std::size_t bad = 0;
  double worst = 0.0;
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < width; ++j) {
      const double err = std::abs(static_cast<double>(got[i * ld + j]) - want[i * width + j]);
      worst = std::max(worst, std::isnan(err) ? std::numeric_limits<double>::infinity() : err);
      if (!(err <= tol * (1.0 + std::abs(want[i * width + j]))))
        ++bad;
    }
  INFO("worst absolute error " << worst);
  CHECK(bad == 0);
}

struct operands {
  std::vector<float> x, w, b, dy;
  explicit operands(const geometry& g, std::uint64_t seed) {
    seedrl::random_generator rng(seed);
    const auto fill = [&](std::vector<float>& v, std::size_t n) {
      v.resize(n);
      for (auto& e : v)
        e = static_cast<float>(rng.uniform(-1.0, 1.0));
    };
    fill(x, g.N * g.in());
    fill(w, g.O * g.taps());
    fill(b, static_cast<std::size_t>(g.O));
    fill(dy, g.N * g.out());
  }
};

/// What the gradients held before the call (they accumulate), added to the reference.
std::vector<double> plus(const std::vector<double>& a, float start) {
  std::vector<double> out(a);
  for (auto& v : out)
    v += start;
  return out;
}

}  // namespace

TEST_CASE("host_backend float conv2d matches a float64 direct loop on odd shapes",
          "[backend_conv][dnnl]") {
  const seedrl::host_backend be;
  for (const auto& g : shapes) {
    INFO(g.name());
    const operands op(g, 11);
    const reference ref(g, op.x, op.w, op.b, op.dy);
    const seedrl::conv2d_shape s{g.N, g.C, g.H, g.W, g.O, g.KH, g.KW, g.SH, g.SW, g.PH, g.PW};
    std::vector<float> y(g.N * g.out(), std::numeric_limits<float>::quiet_NaN());
    be.conv2d_forward(s, op.x.data(), op.w.data(), op.b.data(), y.data());
    check_close("y", y.data(), g.N, g.out(), g.out(), ref.y);
    std::vector<float> dx(g.N * g.in(), std::numeric_limits<float>::quiet_NaN());
    std::vector<float> dw(op.w.size(), -0.5f), db(op.b.size(), -0.5f);
    be.conv2d_backward(s, op.x.data(), op.w.data(), op.dy.data(), dx.data(), dw.data(), db.data());
    check_close("dx", dx.data(), g.N, g.in(), g.in(), ref.dx);
    check_close("dw", dw.data(), 1, dw.size(), dw.size(), plus(ref.dw, -0.5f));
    check_close("db", db.data(), 1, db.size(), db.size(), plus(ref.db, -0.5f));
  }
}

#ifdef SEEDRL_DNNL_CONV
TEST_CASE("the oneDNN convolution itself matches a float64 direct loop, and is cached per shape",
          "[conv][dnnl]") {
  seedrl::detail::dnnl_conv2d_cache cache;
  for (const auto& g : shapes) {
    INFO(g.name());
    const operands op(g, 13);
    const reference ref(g, op.x, op.w, op.b, op.dy);
    const seedrl::detail::dnnl_conv2d_shape s{g.N,
                                              g.C,
                                              g.H,
                                              g.W,
                                              g.O,
                                              g.KH,
                                              g.KW,
                                              g.SH,
                                              g.SW,
                                              g.PH,
                                              g.PW,
                                              static_cast<long>(g.in()),
                                              static_cast<long>(g.out())};
    std::vector<float> y(g.N * g.out(), std::numeric_limits<float>::quiet_NaN());
    REQUIRE(seedrl::detail::dnnl_conv2d_forward(cache, s, op.x.data(), op.w.data(), op.b.data(),
                                                y.data()));
    check_close("y", y.data(), g.N, g.out(), g.out(), ref.y);
    std::vector<float> dx(g.N * g.in(), std::numeric_limits<float>::quiet_NaN());
    std::vector<float> dw(op.w.size(), 1.0f), db(op.b.size(), 1.0f);
    REQUIRE(seedrl::detail::dnnl_conv2d_backward(cache, s, op.x.data(), op.w.data(), op.dy.data(),
                                                 dx.data(), dw.data(), db.data()));
    check_close("dx", dx.data(), g.N, g.in(), g.in(), ref.dx);
    check_close("dw", dw.data(), 1, dw.size(), dw.size(), plus(ref.dw, 1.0f));
    check_close("db", db.data(), 1, db.size(), db.size(), plus(ref.db, 1.0f));
    // A busy cache says so instead of running: the caller takes its own path.
    REQUIRE(cache.try_lock());
    CHECK_FALSE(seedrl::detail::dnnl_conv2d_forward(cache, s, op.x.data(), op.w.data(), op.b.data(),
                                                    y.data()));
    { const seedrl::detail::dnnl_conv2d_cache::held release(cache); }
  }
}

TEST_CASE("the oneDNN cache takes many batch sizes: shared arena, oldest shapes dropped",
          "[conv][dnnl]") {
  seedrl::detail::dnnl_conv2d_cache cache;
  const int sizes = static_cast<int>(seedrl::detail::dnnl_conv2d_cache::max_entries) + 6;
  const geometry base{1, 3, 6, 5, 4, 3, 3, 2, 1, 1, 0};
  // Batch sizes up and down again: the first ones are rebuilt after being dropped, and each
  // call binds the arena that larger shapes grew.
  std::vector<int> order;
  for (int n = 1; n <= sizes; ++n)
    order.push_back(n);
  for (int n = 1; n <= 5; ++n)
    order.push_back(n);
  for (const int n : order) {
    geometry g = base;
    g.N = n;
    INFO(g.name());
    const operands op(g, static_cast<std::uint64_t>(n));
    const seedrl::detail::dnnl_conv2d_shape s{g.N,
                                              g.C,
                                              g.H,
                                              g.W,
                                              g.O,
                                              g.KH,
                                              g.KW,
                                              g.SH,
                                              g.SW,
                                              g.PH,
                                              g.PW,
                                              static_cast<long>(g.in()),
                                              static_cast<long>(g.out())};
    std::vector<float> y(g.N * g.out(), std::numeric_limits<float>::quiet_NaN());
    REQUIRE(seedrl::detail::dnnl_conv2d_forward(cache, s, op.x.data(), op.w.data(), op.b.data(),
                                                y.data()));
    if (n % 17 == 1 || n == sizes) {
      const reference ref(g, op.x, op.w, op.b, op.dy);
      check_close("y", y.data(), g.N, g.out(), g.out(), ref.y);
      std::vector<float> dx(g.N * g.in()), dw(op.w.size(), 0.0f), db(op.b.size(), 0.0f);
      REQUIRE(seedrl::detail::dnnl_conv2d_backward(cache, s, op.x.data(), op.w.data(), op.dy.data(),
                                                   dx.data(), dw.data(), db.data()));
      check_close("dx", dx.data(), g.N, g.in(), g.in(), ref.dx);
      check_close("dw", dw.data(), 1, dw.size(), dw.size(), ref.dw);
      check_close("db", db.data(), 1, db.size(), db.size(), ref.db);
    }
  }
}
#endif
