// host_backend's conv2d_forward / conv2d_backward (the im2col + GEMM path of
// backend/detail/conv2d_gemm.hpp) in float64 against a direct nested-loop convolution written
// here: strides, paddings, non-square images and kernels, 1x1 kernels, one and several channels
// and images, a batch taken in several chunks; gradients accumulated into dw and dbias, dx
// overwritten, dx == nullptr, batch 0 and the shapes that must be refused. The host's row loops
// for the convolution's kernels (detail::host_conv_primitives) against the kernels run one
// element per call, as a GPU runs them, and the same for max pooling. Also detail::pinnable_cache,
// cuda_backend's convolution cache.
#include <algorithm>
#include <catch2/catch.hpp>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/backend/detail/conv2d_gemm.hpp"
#include "seedrl/backend/detail/host_conv_primitives.hpp"
#include "seedrl/backend/detail/max_pool2d_kernels.hpp"
#include "seedrl/backend/host_backend.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/detail/pinnable_cache.hpp"

namespace {

using seedrl::conv2d_shape;

/// A null dx of the right type (a bare nullptr does not deduce the scalar type).
double* const no_dx = nullptr;

/// Float64 sums of at most a few hundred thousand products in another order: rounding only.
constexpr double tolerance = 1e-12;

/// shape.batch images; {batch, C, H, W, O, KH, KW, SH, SW, PH, PW}.
conv2d_shape make_shape(int batch, int c, int h, int w, int o, int kh, int kw, int sh, int sw,
                        int ph, int pw) {
  return conv2d_shape{batch, c, h, w, o, kh, kw, sh, sw, ph, pw};
}

std::string describe(const conv2d_shape& s) {
  return "batch " + std::to_string(s.batch) + ", " + std::to_string(s.in_channels) + "x" +
         std::to_string(s.input_height) + "x" + std::to_string(s.input_width) + " -> " +
         std::to_string(s.out_channels) + "x" + std::to_string(s.output_height()) + "x" +
         std::to_string(s.output_width()) + ", kernel " + std::to_string(s.kernel_h) + "x" +
         std::to_string(s.kernel_w) + ", stride " + std::to_string(s.stride_h) + "x" +
         std::to_string(s.stride_w) + ", padding " + std::to_string(s.padding_h) + "x" +
         std::to_string(s.padding_w);
}

std::size_t z(int v) {
  return static_cast<std::size_t>(v);
}

/// Elements of one input image, one output image, and of the weights.
std::size_t input_size(const conv2d_shape& s) {
  return z(s.in_channels) * z(s.input_height) * z(s.input_width);
}
std::size_t output_size(const conv2d_shape& s) {
  return z(s.out_channels) * z(s.output_height()) * z(s.output_width());
}
std::size_t weight_size(const conv2d_shape& s) {
  return z(s.out_channels) * z(s.in_channels) * z(s.kernel_h) * z(s.kernel_w);
}

std::vector<double> random_doubles(seedrl::random_generator& rng, std::size_t n, double lo,
                                   double hi) {
  std::vector<double> v(n);
  for (double& x : v)
    x = rng.uniform(lo, hi);
  return v;
}

/// max_i |got_i - want_i| / max_j |want_j|: the error relative to the array's magnitude; NaN
/// anywhere (or a size mismatch) gives infinity.
double max_error(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size())
    return std::numeric_limits<double>::infinity();
  double scale = 0.0;
  for (const double w : want)
    scale = std::max(scale, std::abs(w));
  double worst = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = std::abs(got[i] - want[i]) / std::max(scale, 1e-300);
    if (!(e <= worst))
      worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
  }
  return worst;
}

std::vector<double> plus(const std::vector<double>& a, const std::vector<double>& b,
                         double b_times = 1.0) {
  std::vector<double> r(a.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    r[i] = a[i] + b_times * b[i];
  return r;
}

/// Inputs of one convolution: x [N, C*H*W], w [O, C, KH, KW], bias [O], dy [N, O*OH*OW].
struct conv_inputs {
  std::vector<double> x, w, bias, dy;
};

conv_inputs random_inputs(const conv2d_shape& s, std::uint64_t seed) {
  seedrl::random_generator rng(seed);
  conv_inputs in;
  in.x = random_doubles(rng, z(s.batch) * input_size(s), -1, 1);
  in.w = random_doubles(rng, weight_size(s), -1, 1);
  in.bias = random_doubles(rng, z(s.out_channels), -1, 1);
  in.dy = random_doubles(rng, z(s.batch) * output_size(s), -1, 1);
  return in;
}

/// y and the gradients from zero: dx, dw, dbias.
struct conv_outputs {
  std::vector<double> y, dx, dw, dbias;
};

/// The definition, one multiply-add at a time: y[n,o,i,j] = b[o] + sum_{c,kh,kw}
/// w[o,c,kh,kw] x[n,c,i*SH-PH+kh,j*SW-PW+kw] over the taps inside the image, and its adjoints.
conv_outputs direct_reference(const conv2d_shape& s, const conv_inputs& in) {
  const int N = s.batch, C = s.in_channels, H = s.input_height, W = s.input_width;
  const int O = s.out_channels, KH = s.kernel_h, KW = s.kernel_w;
  const int OH = s.output_height(), OW = s.output_width();
  conv_outputs out;
  out.y.assign(z(N) * output_size(s), 0.0);
  out.dx.assign(z(N) * input_size(s), 0.0);
  out.dw.assign(weight_size(s), 0.0);
  out.dbias.assign(z(O), 0.0);
  for (int n = 0; n < N; ++n) {
    for (int o = 0; o < O; ++o) {
      for (int i = 0; i < OH; ++i) {
        for (int j = 0; j < OW; ++j) {
          const std::size_t yi = ((z(n) * z(O) + z(o)) * z(OH) + z(i)) * z(OW) + z(j);
          const double g = in.dy[yi];
          double acc = in.bias[z(o)];
          out.dbias[z(o)] += g;
          for (int c = 0; c < C; ++c) {
            for (int kh = 0; kh < KH; ++kh) {
              for (int kw = 0; kw < KW; ++kw) {
                const int h = i * s.stride_h - s.padding_h + kh;
                const int w = j * s.stride_w - s.padding_w + kw;
                if (h < 0 || h >= H || w < 0 || w >= W)
                  continue;
                const std::size_t xi = ((z(n) * z(C) + z(c)) * z(H) + z(h)) * z(W) + z(w);
                const std::size_t wi = ((z(o) * z(C) + z(c)) * z(KH) + z(kh)) * z(KW) + z(kw);
                acc += in.w[wi] * in.x[xi];
                out.dw[wi] += g * in.x[xi];
                out.dx[xi] += g * in.w[wi];
              }
            }
          }
          out.y[yi] = acc;
        }
      }
    }
  }
  return out;
}

/// What host_backend gives: y (NaN before), dx (NaN before), and dw / dbias prefilled with
/// dw0 / dbias0 after one backward call with dx and one more with dx == nullptr.
struct backend_outputs {
  std::vector<double> y, dx, dw_once, dbias_once, dw_twice, dbias_twice;
};

backend_outputs run_backend(const seedrl::host_backend& be, const conv2d_shape& s,
                            const conv_inputs& in, const std::vector<double>& dw0,
                            const std::vector<double>& dbias0) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  backend_outputs out;
  out.y.assign(z(s.batch) * output_size(s), nan);
  out.dx.assign(z(s.batch) * input_size(s), nan);
  be.conv2d_forward(s, in.x.data(), in.w.data(), in.bias.data(), out.y.data());
  std::vector<double> dw = dw0, dbias = dbias0;
  be.conv2d_backward(s, in.x.data(), in.w.data(), in.dy.data(), out.dx.data(), dw.data(),
                     dbias.data());
  out.dw_once = dw;
  out.dbias_once = dbias;
  be.conv2d_backward(s, in.x.data(), in.w.data(), in.dy.data(), no_dx, dw.data(), dbias.data());
  out.dw_twice = dw;
  out.dbias_twice = dbias;
  return out;
}

/// host_backend on `s` against the direct loop, sharing `be` (and its scratch) with the other
/// shapes.
void check_shape(const seedrl::host_backend& be, const conv2d_shape& s, std::uint64_t seed) {
  INFO(describe(s));
  const conv_inputs in = random_inputs(s, seed);
  const conv_outputs want = direct_reference(s, in);
  // Known non-zero gradients already there: backward must add to them.
  seedrl::random_generator rng(seed + 1000);
  const std::vector<double> dw0 = random_doubles(rng, want.dw.size(), 1.0, 2.0);
  const std::vector<double> dbias0 = random_doubles(rng, want.dbias.size(), -2.0, -1.0);
  const backend_outputs got = run_backend(be, s, in, dw0, dbias0);
  CHECK(max_error(got.y, want.y) <= tolerance);
  CHECK(max_error(got.dx, want.dx) <= tolerance);
  CHECK(max_error(got.dw_once, plus(dw0, want.dw)) <= tolerance);
  CHECK(max_error(got.dbias_once, plus(dbias0, want.dbias)) <= tolerance);
  // The second call, without dx, adds the same gradients once more.
  CHECK(max_error(got.dw_twice, plus(dw0, want.dw, 2.0)) <= tolerance);
  CHECK(max_error(got.dbias_twice, plus(dbias0, want.dbias, 2.0)) <= tolerance);
}

/// Shapes small enough for the direct loop.
std::vector<conv2d_shape> small_shapes() {
  // make_shape(batch, C, H, W, O, KH, KW, SH, SW, PH, PW)
  std::vector<conv2d_shape> shapes;
  shapes.push_back(make_shape(1, 1, 5, 5, 1, 3, 3, 1, 1, 0, 0));    // one channel, one image
  shapes.push_back(make_shape(3, 3, 9, 7, 4, 3, 3, 1, 1, 1, 1));    // ResNet 3x3 padding 1
  shapes.push_back(make_shape(2, 4, 36, 28, 8, 8, 8, 4, 4, 0, 0));  // Nature 8x8/4, non-square
  shapes.push_back(make_shape(3, 8, 9, 11, 16, 4, 4, 2, 2, 0, 0));  // Nature 4x4/2
  shapes.push_back(make_shape(4, 16, 5, 6, 8, 3, 3, 1, 1, 0, 0));   // Nature 3x3/1
  shapes.push_back(make_shape(4, 2, 7, 10, 3, 1, 1, 1, 1, 0, 0));   // 1x1 kernel
  shapes.push_back(make_shape(2, 3, 6, 9, 2, 1, 1, 2, 2, 1, 0));    // 1x1, strided, padded
  shapes.push_back(make_shape(2, 3, 10, 13, 5, 5, 3, 2, 1, 2, 1));  // non-square kernel
  shapes.push_back(make_shape(3, 2, 12, 13, 3, 3, 2, 4, 3, 1, 2));  // strides leave remainders
  shapes.push_back(make_shape(2, 1, 3, 3, 2, 5, 5, 1, 1, 1, 1));    // kernel = padded image
  shapes.push_back(make_shape(5, 1, 8, 8, 6, 4, 4, 4, 4, 0, 0));    // C = 1, stride = kernel
  shapes.push_back(make_shape(2, 3, 4, 5, 1, 2, 3, 1, 2, 2, 2));    // O = 1, padding 2
  shapes.push_back(make_shape(1, 7, 11, 5, 9, 3, 5, 2, 4, 1, 2));   // wide kernel, stride 4
  shapes.push_back(make_shape(3, 2, 17, 17, 4, 8, 8, 4, 4, 2, 2));  // 8x8/4 padded by 2
  return shapes;
}

}  // namespace

TEST_CASE("host_backend conv2d matches a direct loop in float64", "[backend_conv]") {
  // One backend for all shapes: its scratch grows and is reused by smaller shapes.
  const seedrl::host_backend be;
  std::uint64_t seed = 1;
  for (const conv2d_shape& s : small_shapes())
    check_shape(be, s, ++seed);
  // Again in reverse order, on the scratch the largest shape left.
  auto shapes = small_shapes();
  std::reverse(shapes.begin(), shapes.end());
  for (const conv2d_shape& s : shapes)
    check_shape(be, s, ++seed);
}

TEST_CASE("host_backend conv2d takes a large batch in several chunks", "[backend_conv]") {
  // 57600 output positions of 100 taps: the host takes one image per chunk (at least 128
  // patch rows), a GPU two (chunks of at most 2^24 elements), and three images make chunks of
  // 2 and 1 there.
  const conv2d_shape s = make_shape(3, 4, 240, 240, 3, 5, 5, 1, 1, 2, 2);
  REQUIRE(seedrl::detail::conv2d_gemm_geometry(s, seedrl::detail::host_conv2d_chunk_rows).chunk() ==
          1);
  const seedrl::detail::conv2d_gemm_geometry g(s);
  REQUIRE(g.chunk() == 2);
  REQUIRE(z(s.batch) % g.chunk() != 0);
  const seedrl::host_backend be;
  check_shape(be, s, 99);
  // Small images: several per chunk, and a last chunk with fewer.
  const conv2d_shape small = make_shape(23, 2, 5, 4, 3, 3, 2, 1, 1, 1, 0);
  REQUIRE(
      seedrl::detail::conv2d_gemm_geometry(small, seedrl::detail::host_conv2d_chunk_rows).chunk() ==
      9);  // 15 positions each
  check_shape(be, small, 100);
}

/// The kernels of conv2d_gemm.hpp on `s` (one chunk of all its images), images `extra`
/// elements apart beyond their size, run by `be`; returns col, dx, y, g (GEMM-layout output
/// gradient) and the bias gradient added to ones, from fixed inputs.
template <class Backend>
std::vector<std::vector<double>> run_conv_kernels(const Backend& be, const conv2d_shape& s,
                                                  std::size_t extra) {
  const seedrl::detail::conv2d_gemm_geometry g(s);
  const std::size_t n = g.N, cols = n * g.P(), ld_x = g.in_size() + extra,
                    ld_y = g.out_size() + extra;
  seedrl::random_generator rng(7);
  const std::vector<double> x = random_doubles(rng, n * ld_x, -1, 1);
  const std::vector<double> dcol = random_doubles(rng, g.K() * cols, -1, 1);
  const std::vector<double> z = random_doubles(rng, g.O * cols, -1, 1);
  const std::vector<double> bias = random_doubles(rng, g.O, -1, 1);
  const std::vector<double> dy = random_doubles(rng, n * ld_y, -1, 1);
  // Outputs start as a marker, so that a missed or stray write shows.
  std::vector<double> col(g.K() * cols, 9.0), dx(n * ld_x, 9.0), y(n * ld_y, 9.0),
      gz(g.O * cols, 9.0), dbias(g.O, 1.0);
  be.for_each(col.size(), g.im2col(x.data(), ld_x, col.data(), n));
  be.for_each(n * g.in_size(), g.col2im(dcol.data(), dx.data(), ld_x, n));
  be.for_each(n * g.out_size(), seedrl::detail::conv_output_kernel<double>{
                                    z.data(), cols, bias.data(), y.data(), ld_y, g.O, g.P()});
  be.for_each(gz.size(), seedrl::detail::conv_output_gradient_kernel<double>{
                             dy.data(), ld_y, gz.data(), cols, g.O, g.P()});
  be.for_each(g.O, seedrl::detail::conv_bias_gradient_kernel<double>{z.data(), cols, dbias.data()});
  return {col, dx, y, gz, dbias};
}

TEST_CASE("the host's row loops run the convolution kernels as one call per element does",
          "[backend_conv]") {
  // The per-element loop (host_primitives) is the kernels' definition, what a GPU runs; the
  // host's row loops must give the same values, bit for bit, except the sums (col2im's and the
  // bias gradient's), whose order differs.
  const seedrl::detail::host_primitives per_element;
  const seedrl::detail::host_conv_primitives rows;
  for (const conv2d_shape& s :
       {make_shape(2, 3, 10, 13, 5, 5, 3, 2, 1, 2, 1), make_shape(3, 2, 7, 5, 4, 3, 3, 2, 3, 1, 2),
        make_shape(1, 1, 4, 4, 2, 1, 1, 1, 1, 0, 0), make_shape(2, 4, 9, 9, 3, 8, 8, 4, 4, 0, 0),
        make_shape(2, 2, 3, 3, 2, 5, 5, 1, 1, 3, 3)}) {
    for (const std::size_t extra : {std::size_t{0}, std::size_t{5}}) {
      INFO(describe(s) << ", images " << extra << " elements apart beyond their size");
      const auto want = run_conv_kernels(per_element, s, extra);
      const auto got = run_conv_kernels(rows, s, extra);
      CHECK(got[0] == want[0]);
      CHECK(max_error(got[1], want[1]) <= tolerance);
      CHECK(got[2] == want[2]);
      CHECK(got[3] == want[3]);
      CHECK(max_error(got[4], want[4]) <= tolerance);
    }
  }
}

/// Max pooling's kernels on `g` for n images `extra` elements apart beyond their size, run by
/// `be` from inputs with ties, infinities and NaNs; returns y, the argmaxes and dx.
template <class Backend>
std::vector<std::vector<double>> run_pool_kernels(const Backend& be,
                                                  const seedrl::detail::max_pool2d_geometry& g,
                                                  std::size_t n, std::size_t extra) {
  const std::size_t ld_x = g.in_size() + extra, ld_y = g.out_size() + extra;
  seedrl::random_generator rng(11);
  std::vector<double> x(n * ld_x);
  for (double& v : x) {
    // Few distinct values, so that windows tie; now and then -infinity or NaN.
    const double u = rng.uniform(0.0, 1.0);
    v = u < 0.05   ? -std::numeric_limits<double>::infinity()
        : u < 0.08 ? std::numeric_limits<double>::quiet_NaN()
                   : std::floor(rng.uniform(-3.0, 3.0));
  }
  const std::vector<double> dy = random_doubles(rng, n * ld_y, -1, 1);
  std::vector<double> y(n * ld_y, 9.0), dx(n * ld_x, 9.0);
  std::vector<std::int32_t> argmax(n * g.out_size(), -7);
  be.for_each(n * g.out_size(), seedrl::detail::max_pool_forward_kernel<double>{
                                    x.data(), ld_x, y.data(), ld_y, argmax.data(), g});
  be.for_each(n * g.in_size(), seedrl::detail::max_pool_backward_kernel<double>{
                                   dy.data(), ld_y, argmax.data(), dx.data(), ld_x, g});
  // Inference (no argmax) must give the same maxima.
  std::vector<double> y_infer(n * ld_y, 9.0);
  be.for_each(n * g.out_size(), seedrl::detail::max_pool_forward_kernel<double>{
                                    x.data(), ld_x, y_infer.data(), ld_y, nullptr, g});
  return {y, std::vector<double>(argmax.begin(), argmax.end()), dx, y_infer};
}

/// Equal element by element, NaN equal to NaN.
bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i]))))
      return false;
  return true;
}

TEST_CASE("the host's loops run max pooling as one call per element does", "[backend_conv]") {
  // The backward's gather sums in output order, the order of the host's scatter: bit for bit.
  const seedrl::detail::host_primitives per_element;
  const seedrl::detail::host_conv_primitives rows;
  // {C, H, W, OH, OW, KH, KW, SH, SW, PH, PW}
  for (const seedrl::detail::max_pool2d_geometry& g :
       {seedrl::detail::max_pool2d_geometry{3, 9, 7, 5, 4, 3, 3, 2, 2, 1, 1},
        seedrl::detail::max_pool2d_geometry{2, 8, 8, 4, 4, 2, 2, 2, 2, 0, 0},
        seedrl::detail::max_pool2d_geometry{1, 7, 10, 3, 4, 3, 4, 2, 3, 1, 2},
        seedrl::detail::max_pool2d_geometry{2, 5, 5, 5, 5, 3, 3, 1, 1, 1, 1}}) {
    for (const std::size_t extra : {std::size_t{0}, std::size_t{3}}) {
      INFO("C " << g.C << ", " << g.H << "x" << g.W << " -> " << g.OH << "x" << g.OW << ", extra "
                << extra);
      const auto want = run_pool_kernels(per_element, g, 3, extra);
      const auto got = run_pool_kernels(rows, g, 3, extra);
      CHECK(same_bits(got[0], want[0]));
      CHECK(got[1] == want[1]);
      CHECK(same_bits(got[2], want[2]));
      CHECK(same_bits(got[3], want[0]));
      CHECK(same_bits(want[3], want[0]));
    }
  }
}

TEST_CASE("host_backend conv2d comparisons notice small errors", "[backend_conv]") {
  // The tolerance is far below what a wrong weight, bias or output gradient changes.
  const conv2d_shape s = make_shape(2, 3, 10, 13, 5, 5, 3, 2, 1, 2, 1);
  const conv_inputs in = random_inputs(s, 5);
  const conv_outputs want = direct_reference(s, in);
  const seedrl::host_backend be;
  const std::vector<double> dw0(want.dw.size(), 0.0), dbias0(want.dbias.size(), 0.0);
  const backend_outputs exact = run_backend(be, s, in, dw0, dbias0);
  REQUIRE(max_error(exact.y, want.y) <= tolerance);
  REQUIRE(max_error(exact.dx, want.dx) <= tolerance);
  REQUIRE(max_error(exact.dw_once, want.dw) <= tolerance);
  REQUIRE(max_error(exact.dbias_once, want.dbias) <= tolerance);
  SECTION("one weight off by 1e-9") {
    conv_inputs off = in;
    off.w[7] += 1e-9;
    const backend_outputs got = run_backend(be, s, off, dw0, dbias0);
    CHECK(max_error(got.y, want.y) > 100 * tolerance);
    CHECK(max_error(got.dx, want.dx) > 100 * tolerance);
  }
  SECTION("one bias off by 1e-9") {
    conv_inputs off = in;
    off.bias[4] -= 1e-9;
    CHECK(max_error(run_backend(be, s, off, dw0, dbias0).y, want.y) > 100 * tolerance);
  }
  SECTION("one output gradient off by 1e-9") {
    conv_inputs off = in;
    off.dy[off.dy.size() - 3] += 1e-9;
    const backend_outputs got = run_backend(be, s, off, dw0, dbias0);
    CHECK(max_error(got.dw_once, want.dw) > 100 * tolerance);
    CHECK(max_error(got.dbias_once, want.dbias) > 100 * tolerance);
    CHECK(max_error(got.dx, want.dx) > 100 * tolerance);
  }
  SECTION("gradients overwritten instead of added") {
    const std::vector<double> ones(want.dw.size(), 1.0), bias_ones(want.dbias.size(), 1.0);
    const backend_outputs got = run_backend(be, s, in, ones, bias_ones);
    CHECK(max_error(got.dw_once, want.dw) > 100 * tolerance);
    CHECK(max_error(got.dbias_once, want.dbias) > 100 * tolerance);
  }
}

TEST_CASE("host_backend conv2d with dx == nullptr gives the same parameter gradients",
          "[backend_conv]") {
  const conv2d_shape s = make_shape(3, 3, 9, 7, 4, 3, 3, 2, 1, 1, 2);
  const conv_inputs in = random_inputs(s, 17);
  const conv_outputs want = direct_reference(s, in);
  const seedrl::host_backend be;
  std::vector<double> dw(want.dw.size(), 0.5), dbias(want.dbias.size(), -0.25);
  const std::vector<double> x_before = in.x, w_before = in.w, dy_before = in.dy;
  be.conv2d_backward(s, in.x.data(), in.w.data(), in.dy.data(), no_dx, dw.data(), dbias.data());
  CHECK(max_error(dw, plus(std::vector<double>(dw.size(), 0.5), want.dw)) <= tolerance);
  CHECK(max_error(dbias, plus(std::vector<double>(dbias.size(), -0.25), want.dbias)) <= tolerance);
  CHECK(in.x == x_before);
  CHECK(in.w == w_before);
  CHECK(in.dy == dy_before);
}

TEST_CASE("host_backend conv2d with batch 0 changes nothing", "[backend_conv]") {
  const conv2d_shape s = make_shape(0, 3, 9, 7, 4, 3, 3, 1, 1, 1, 1);
  const conv2d_shape one = make_shape(1, 3, 9, 7, 4, 3, 3, 1, 1, 1, 1);
  // Buffers sized for one image, so that a write anywhere shows.
  const conv_inputs in = random_inputs(one, 3);
  const std::vector<double> y0(output_size(one), 7.0), dx0(input_size(one), -3.0);
  const std::vector<double> dw0(weight_size(one), 1.5), dbias0(z(one.out_channels), 2.5);
  std::vector<double> y = y0, dx = dx0, dw = dw0, dbias = dbias0;
  const seedrl::host_backend be;
  be.conv2d_forward(s, in.x.data(), in.w.data(), in.bias.data(), y.data());
  be.conv2d_backward(s, in.x.data(), in.w.data(), in.dy.data(), dx.data(), dw.data(), dbias.data());
  be.conv2d_backward(s, in.x.data(), in.w.data(), in.dy.data(), no_dx, dw.data(), dbias.data());
  CHECK(y == y0);
  CHECK(dx == dx0);
  CHECK(dw == dw0);
  CHECK(dbias == dbias0);
}

TEST_CASE("host_backend conv2d refuses shapes that are not a convolution or too large",
          "[backend_conv]") {
  const conv2d_shape base = make_shape(2, 3, 9, 7, 4, 3, 3, 1, 1, 1, 1);
  // Buffers for `base`, which is accepted; every shape below must throw before touching them.
  const conv_inputs in = random_inputs(base, 23);
  std::vector<double> y(z(base.batch) * output_size(base)), dx(in.x.size()), dw(in.w.size()),
      dbias(in.bias.size());
  const seedrl::host_backend be;
  const auto forward = [&](const conv2d_shape& s) {
    be.conv2d_forward(s, in.x.data(), in.w.data(), in.bias.data(), y.data());
  };
  const auto backward = [&](const conv2d_shape& s) {
    be.conv2d_backward(s, in.x.data(), in.w.data(), in.dy.data(), dx.data(), dw.data(),
                       dbias.data());
  };
  const auto backward_params = [&](const conv2d_shape& s) {
    be.conv2d_backward(s, in.x.data(), in.w.data(), in.dy.data(), no_dx, dw.data(), dbias.data());
  };
  CHECK_NOTHROW(forward(base));
  CHECK_NOTHROW(backward(base));
  std::vector<std::pair<std::string, conv2d_shape>> bad;
  const auto with = [&](const char* what, auto change) {
    conv2d_shape s = base;
    change(s);
    bad.emplace_back(what, s);
  };
  with("batch -1", [](conv2d_shape& s) { s.batch = -1; });
  with("in_channels 0", [](conv2d_shape& s) { s.in_channels = 0; });
  with("input_height 0", [](conv2d_shape& s) { s.input_height = 0; });
  with("input_width -2", [](conv2d_shape& s) { s.input_width = -2; });
  with("out_channels 0", [](conv2d_shape& s) { s.out_channels = 0; });
  with("kernel_h 0", [](conv2d_shape& s) { s.kernel_h = 0; });
  with("kernel_w -1", [](conv2d_shape& s) { s.kernel_w = -1; });
  with("stride_h 0", [](conv2d_shape& s) { s.stride_h = 0; });
  with("stride_w -3", [](conv2d_shape& s) { s.stride_w = -3; });
  with("padding_h -1", [](conv2d_shape& s) { s.padding_h = -1; });
  with("padding_w -1", [](conv2d_shape& s) { s.padding_w = -1; });
  // 9 + 2 = 11 rows padded, 7 + 2 = 9 columns: one more than that does not fit.
  with("kernel_h 12", [](conv2d_shape& s) { s.kernel_h = 12; });
  with("kernel_w 10", [](conv2d_shape& s) { s.kernel_w = 10; });
  with("kernel_w 8 unpadded", [](conv2d_shape& s) {
    s.padding_w = 0;
    s.kernel_w = 8;
  });
  // Tensors past INT_MAX elements: the input, the output, the kernel's taps.
  with("input 2 x 2^30", [](conv2d_shape& s) {
    s.batch = 2;
    s.in_channels = 1;
    s.input_height = 1 << 15;
    s.input_width = 1 << 15;
  });
  with("one image of 2^31", [](conv2d_shape& s) {
    s.batch = 1;
    s.in_channels = 2;
    s.input_height = 1 << 15;
    s.input_width = 1 << 15;
  });
  with("output 3 x 60001^2", [](conv2d_shape& s) {
    s.batch = 1;
    s.in_channels = 1;
    s.input_height = 1;
    s.input_width = 1;
    s.kernel_h = 1;
    s.kernel_w = 1;
    s.padding_h = 30000;
    s.padding_w = 30000;
    s.out_channels = 3;
  });
  with("taps 46341^2", [](conv2d_shape& s) {
    s.batch = 1;
    s.in_channels = 1;
    s.input_height = 1;
    s.input_width = 1;
    s.kernel_h = 46341;
    s.kernel_w = 46341;
    s.padding_h = 23170;
    s.padding_w = 23170;
    s.out_channels = 1;
  });
  with("batch x image past INT_MAX",
       [](conv2d_shape& s) { s.batch = INT_MAX / static_cast<int>(input_size(s)) + 1; });
  const std::vector<double> dw_before = dw, dbias_before = dbias;
  for (const auto& [what, s] : bad) {
    INFO(what << ": " << describe(s));
    CHECK_THROWS_AS(forward(s), std::invalid_argument);
    CHECK_THROWS_AS(backward(s), std::invalid_argument);
    CHECK_THROWS_AS(backward_params(s), std::invalid_argument);
  }
  // Refused before any work: the gradients the accepted calls left are still there.
  CHECK(dw == dw_before);
  CHECK(dbias == dbias_before);
}

// detail::pinnable_cache, the policy of cuda_backend's cuDNN convolution cache: the least
// recently used unpinned shape goes past the capacity; pinned shapes (a captured CUDA graph
// holds their workspaces) never go, however many unpinned ones come and go, and do not count
// against the capacity.
namespace {

/// Counts live objects, so that the test sees what the cache destroyed.
struct tracked {
  explicit tracked(int id, int* live) : id(id), live(live) { ++*live; }
  tracked(const tracked&) = delete;
  tracked& operator=(const tracked&) = delete;
  ~tracked() { --*live; }
  int id;
  int* live;
};

}  // namespace

TEST_CASE("pinnable_cache drops the least recently used unpinned entry, never a pinned one",
          "[backend_conv][pinnable_cache]") {
  int live = 0, made = 0;
  seedrl::detail::pinnable_cache<conv2d_shape, tracked> cache(2);
  const auto shape = [](int batch) { return make_shape(batch, 1, 4, 4, 1, 3, 3, 1, 1, 0, 0); };
  const auto get = [&](int batch, bool pin) -> tracked& {
    return cache.get(shape(batch), pin, [&] {
      ++made;
      return std::make_unique<tracked>(batch, &live);
    });
  };
  tracked& p8 = get(8, true);  // pinned, as a graph's warm-up makes it
  get(1, false);
  get(2, false);
  CHECK(cache.size() == 3);
  CHECK(cache.pinned_count() == 1);
  CHECK(live == 3);
  get(1, false);  // found: 1 is now more recent than 2
  CHECK(made == 3);
  get(3, false);  // two unpinned held: 2, the least recently used, goes
  CHECK(cache.contains(shape(1)));
  CHECK_FALSE(cache.contains(shape(2)));
  CHECK(cache.contains(shape(3)));
  CHECK(live == 3);
  // Many more shapes come and go; the pinned one stays, at the same address.
  for (int b = 10; b < 60; ++b)
    get(b, false);
  CHECK(cache.size() == 3);
  CHECK(live == 3);
  CHECK(cache.pinned(shape(8)));
  CHECK(&get(8, false) == &p8);
  CHECK(p8.id == 8);
  // Pinning a held unpinned entry keeps it; pinned entries may outnumber the capacity.
  get(59, true);
  get(16, true);
  get(17, true);
  CHECK(cache.pinned_count() == 4);
  get(70, false);
  get(71, false);
  get(72, false);  // only unpinned ones go: 70
  CHECK(cache.pinned_count() == 4);
  CHECK(cache.size() == 6);
  CHECK(live == 6);
  CHECK_FALSE(cache.contains(shape(70)));
  for (const int b : {8, 59, 16, 17})
    CHECK(cache.pinned(shape(b)));
  CHECK_FALSE(cache.pinned(shape(71)));
  CHECK_THROWS_AS((seedrl::detail::pinnable_cache<int, int>(0)), std::invalid_argument);
}
