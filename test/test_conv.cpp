// conv2d and max_pool2d: PyTorch fixtures (tools/gen_conv_fixture.py) in float and double,
// central-difference gradient checks in float64, a direct-loop oracle across chunk boundaries
// and strided batch views, and the errors for bad sizes.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "gradcheck.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/conv2d.hpp"
#include "seedrl/net/max_pool2d.hpp"

namespace {

using seedrl::cview;
using seedrl::view;
using seedrl_test::gradcheck;

using seedrl_test::dot;
using seedrl_test::random_vector;
using seedrl_test::require_close;

/// All fixture files of one kind ("conv2d" or "max_pool2d").
std::vector<std::pair<std::string, nlohmann::json>> load_fixtures(const std::string& kind) {
  std::vector<std::pair<std::string, nlohmann::json>> out;
  for (const auto& entry : std::filesystem::directory_iterator(SEEDRL_TEST_FIXTURES "/conv")) {
    if (entry.path().extension() != ".json")
      continue;
    std::ifstream in(entry.path());
    auto j = nlohmann::json::parse(in);
    if (j.at("kind") == kind)
      out.emplace_back(entry.path().filename().string(), std::move(j));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

/// A fixture's integer array divided by its scale (exact in float and double).
template <class S>
std::vector<S> scaled(const nlohmann::json& j, const char* key) {
  const double scale = j.at("scale").get<double>();
  std::vector<S> v;
  for (const auto& k : j.at(key))
    v.push_back(static_cast<S>(k.get<double>() / scale));
  return v;
}

/// Checks |got - want| <= tol (1 + |want|) element by element and reports the worst.
template <class S>
void compare(const char* what, std::span<const S> got, const std::vector<double>& want,
             double tol) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0;
  double worst = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(static_cast<double>(got[i]) - want[i]);
    worst = std::max(worst, err);
    if (!(err <= tol * (1.0 + std::abs(want[i]))))
      ++bad;
  }
  INFO("worst absolute error " << worst);
  CHECK(bad == 0);
}

template <class S>
double tolerance(const nlohmann::json& j) {
  const char* key = std::is_same_v<S, double> ? "double" : "float";
  return j.at("tolerance").at(key).get<double>();
}

seedrl::conv2d_config conv_config_of(const nlohmann::json& j) {
  seedrl::conv2d_config c;
  c.in_channels = j.at("in_channels");
  c.input_height = j.at("input_height");
  c.input_width = j.at("input_width");
  c.out_channels = j.at("out_channels");
  c.kernel_h = j.at("kernel").at(0);
  c.kernel_w = j.at("kernel").at(1);
  c.stride_h = j.at("stride").at(0);
  c.stride_w = j.at("stride").at(1);
  c.padding_h = j.at("padding").at(0);
  c.padding_w = j.at("padding").at(1);
  return c;
}

template <class S>
void run_conv_fixture(const nlohmann::json& j) {
  seedrl::conv2d<S> conv(conv_config_of(j));
  REQUIRE(conv.output_height() == j.at("output_height").get<std::ptrdiff_t>());
  REQUIRE(conv.output_width() == j.at("output_width").get<std::ptrdiff_t>());
  const std::ptrdiff_t N = j.at("batch");
  // PyTorch's weight then bias, flattened, is the flat parameter layout.
  std::vector<S> params = scaled<S>(j, "weight");
  const auto bias = scaled<S>(j, "bias");
  params.insert(params.end(), bias.begin(), bias.end());
  REQUIRE(params.size() == conv.num_parameters());
  std::vector<S> grads(params.size(), S(0));
  conv.bind(params.data(), grads.data());
  const auto x = scaled<S>(j, "x");
  const auto g = scaled<S>(j, "G");
  std::vector<S> y(static_cast<std::size_t>(N * conv.output_size()));
  std::vector<S> dx(x.size());
  std::vector<S> ws(conv.workspace_size(N));
  const double tol = tolerance<S>(j);
  conv.forward(cview(x.data(), N, conv.input_size()), view(y.data(), N, conv.output_size()), ws);
  compare<S>("y", y, j.at("y").get<std::vector<double>>(), tol);
  conv.backward(cview(x.data(), N, conv.input_size()), cview(g.data(), N, conv.output_size()),
                view(dx.data(), N, conv.input_size()), ws);
  const auto& gr = j.at("grads");
  compare<S>("d x", dx, gr.at("x").get<std::vector<double>>(), tol);
  const std::size_t nw = conv.num_parameters() - static_cast<std::size_t>(conv.bias().size());
  compare<S>("d weight", std::span<const S>(grads.data(), nw),
             gr.at("weight").get<std::vector<double>>(), tol);
  compare<S>("d bias", std::span<const S>(grads.data() + nw, grads.size() - nw),
             gr.at("bias").get<std::vector<double>>(), tol);
}

seedrl::max_pool2d_config pool_config_of(const nlohmann::json& j) {
  seedrl::max_pool2d_config c;
  c.channels = j.at("channels");
  c.input_height = j.at("input_height");
  c.input_width = j.at("input_width");
  c.kernel_h = j.at("kernel").at(0);
  c.kernel_w = j.at("kernel").at(1);
  c.stride_h = j.at("stride").at(0);
  c.stride_w = j.at("stride").at(1);
  c.padding_h = j.at("padding").at(0);
  c.padding_w = j.at("padding").at(1);
  return c;
}

template <class S>
void run_pool_fixture(const nlohmann::json& j) {
  const seedrl::max_pool2d<S> pool(pool_config_of(j));
  REQUIRE(pool.output_height() == j.at("output_height").get<std::ptrdiff_t>());
  REQUIRE(pool.output_width() == j.at("output_width").get<std::ptrdiff_t>());
  const std::ptrdiff_t N = j.at("batch");
  const auto x = scaled<S>(j, "x");
  const auto g = scaled<S>(j, "G");
  const auto out_n = static_cast<std::size_t>(N * pool.output_size());
  std::vector<S> y(out_n), y_inference(out_n), dx(x.size());
  std::vector<std::int32_t> argmax(out_n);
  const auto xv = cview(x.data(), N, pool.input_size());
  pool.forward(xv, view(y.data(), N, pool.output_size()), argmax);
  const double tol = tolerance<S>(j);
  compare<S>("y", y, j.at("y").get<std::vector<double>>(), tol);
  // Exact index equality: where gradients go, including how ties are broken.
  CHECK(argmax == j.at("indices").get<std::vector<std::int32_t>>());
  pool.forward(xv, view(y_inference.data(), N, pool.output_size()));
  CHECK(y_inference == y);
  pool.backward(cview(g.data(), N, pool.output_size()), argmax,
                view(dx.data(), N, pool.input_size()));
  compare<S>("d x", dx, j.at("grads").at("x").get<std::vector<double>>(), tol);
}

/// Direct float64 convolution: the oracle for the im2col path.
std::vector<double> conv_direct(const seedrl::conv2d_config& c, std::ptrdiff_t N,
                                const std::vector<double>& x, const std::vector<double>& params,
                                std::ptrdiff_t OH, std::ptrdiff_t OW) {
  const std::ptrdiff_t H = c.input_height, W = c.input_width, K = c.kernel_h * c.kernel_w;
  const double* bias = params.data() + c.out_channels * c.in_channels * K;
  std::vector<double> y(static_cast<std::size_t>(N * c.out_channels * OH * OW));
  for (std::ptrdiff_t n = 0; n < N; ++n)
    for (std::ptrdiff_t o = 0; o < c.out_channels; ++o)
      for (std::ptrdiff_t i = 0; i < OH; ++i)
        for (std::ptrdiff_t jx = 0; jx < OW; ++jx) {
          double s = bias[o];
          for (std::ptrdiff_t ch = 0; ch < c.in_channels; ++ch)
            for (std::ptrdiff_t kh = 0; kh < c.kernel_h; ++kh)
              for (std::ptrdiff_t kw = 0; kw < c.kernel_w; ++kw) {
                const std::ptrdiff_t ih = i * c.stride_h - c.padding_h + kh;
                const std::ptrdiff_t iw = jx * c.stride_w - c.padding_w + kw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                  continue;
                s += params[static_cast<std::size_t>(
                         ((o * c.in_channels + ch) * c.kernel_h + kh) * c.kernel_w + kw)] *
                     x[static_cast<std::size_t>(((n * c.in_channels + ch) * H + ih) * W + iw)];
              }
          y[static_cast<std::size_t>(((n * c.out_channels + o) * OH + i) * OW + jx)] = s;
        }
  return y;
}

}  // namespace

TEST_CASE("conv2d matches PyTorch Conv2d fixtures in float and double", "[conv][fixture]") {
  const auto fixtures = load_fixtures("conv2d");
  REQUIRE(fixtures.size() >= 6);
  for (const auto& [name, j] : fixtures) {
    INFO(name);
    run_conv_fixture<double>(j);
    run_conv_fixture<float>(j);
  }
}

TEST_CASE("max_pool2d matches PyTorch MaxPool2d fixtures including tie breaking",
          "[conv][pool][fixture]") {
  const auto fixtures = load_fixtures("max_pool2d");
  REQUIRE(fixtures.size() >= 4);
  bool saw_ties = false;
  for (const auto& [name, j] : fixtures) {
    INFO(name);
    saw_ties = saw_ties || j.contains("tied_windows");
    run_pool_fixture<double>(j);
    run_pool_fixture<float>(j);
  }
  CHECK(saw_ties);
}

TEST_CASE("conv2d gradients match central differences", "[conv][gradcheck]") {
  // Non-square kernel, stride and padding; then the IMPALA 3x3 padding-1 shape.
  const std::vector<seedrl::conv2d_config> configs = {
      {.in_channels = 2,
       .input_height = 7,
       .input_width = 6,
       .out_channels = 3,
       .kernel_h = 3,
       .kernel_w = 2,
       .stride_h = 2,
       .stride_w = 1,
       .padding_h = 1,
       .padding_w = 2},
      {.in_channels = 3,
       .input_height = 5,
       .input_width = 5,
       .out_channels = 2,
       .kernel_h = 3,
       .kernel_w = 3,
       .padding_h = 1,
       .padding_w = 1},
  };
  seedrl::random_generator rng(7);
  for (const auto& config : configs) {
    const std::ptrdiff_t N = 2;
    seedrl::conv2d<double> conv(config);
    std::vector<double> params(conv.num_parameters()), grads(conv.num_parameters(), 0.0);
    conv.bind(params.data(), grads.data());
    conv.init(rng);
    auto x = random_vector(static_cast<std::size_t>(N * conv.input_size()), rng);
    const auto g = random_vector(static_cast<std::size_t>(N * conv.output_size()), rng);
    std::vector<double> y(g.size()), dx(x.size()), ws(conv.workspace_size(N));
    auto loss = [&] {
      conv.forward(cview(x.data(), N, conv.input_size()), view(y.data(), N, conv.output_size()),
                   ws);
      return dot(y, g);
    };
    loss();
    conv.backward(cview(x.data(), N, conv.input_size()), cview(g.data(), N, conv.output_size()),
                  view(dx.data(), N, conv.input_size()), ws);
    INFO("kernel " << config.kernel_h << "x" << config.kernel_w);
    require_close(gradcheck(params, grads, loss));
    require_close(gradcheck(x, dx, loss));
  }
}

TEST_CASE("max_pool2d input gradients match central differences", "[conv][pool][gradcheck]") {
  const seedrl::max_pool2d<double> pool({.channels = 2,
                                         .input_height = 7,
                                         .input_width = 6,
                                         .kernel_h = 3,
                                         .kernel_w = 3,
                                         .stride_h = 2,
                                         .stride_w = 2,
                                         .padding_h = 1,
                                         .padding_w = 1});
  const std::ptrdiff_t N = 2;
  // Distinct values 0.01 apart, shuffled: no window has a tie, and a 1e-6 step cannot make one.
  std::vector<double> x(static_cast<std::size_t>(N * pool.input_size()));
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = 0.01 * static_cast<double>(i) - 1.0;
  seedrl::random_generator rng(8);
  for (std::size_t i = x.size() - 1; i > 0; --i)
    std::swap(x[i], x[rng.below(i + 1)]);
  const auto g = random_vector(static_cast<std::size_t>(N * pool.output_size()), rng);
  std::vector<double> y(g.size()), dx(x.size());
  std::vector<std::int32_t> argmax(g.size());
  auto loss = [&] {
    pool.forward(cview(x.data(), N, pool.input_size()), view(y.data(), N, pool.output_size()));
    return dot(y, g);
  };
  pool.forward(cview(x.data(), N, pool.input_size()), view(y.data(), N, pool.output_size()),
               argmax);
  pool.backward(cview(g.data(), N, pool.output_size()), argmax,
                view(dx.data(), N, pool.input_size()));
  require_close(gradcheck(x, dx, loss));
}

TEST_CASE("conv2d matches a direct loop across chunks and on strided batch views", "[conv]") {
  seedrl::random_generator rng(9);
  // The second has one image per chunk (large output); the first many, with a partial last chunk.
  const std::vector<seedrl::conv2d_config> configs = {
      {.in_channels = 3,
       .input_height = 6,
       .input_width = 5,
       .out_channels = 4,
       .kernel_h = 2,
       .kernel_w = 3,
       .stride_w = 2,
       .padding_w = 1},
      {.in_channels = 2,
       .input_height = 30,
       .input_width = 40,
       .out_channels = 3,
       .kernel_h = 3,
       .kernel_w = 3,
       .padding_h = 1,
       .padding_w = 1},
  };
  for (const auto& config : configs) {
    seedrl::conv2d<double> conv(config);
    const std::ptrdiff_t N = 2 * conv.images_per_chunk() + 1;
    INFO("images per chunk " << conv.images_per_chunk());
    std::vector<double> params(conv.num_parameters()), grads(conv.num_parameters(), 0.0);
    conv.bind(params.data(), grads.data());
    conv.init(rng);
    const std::ptrdiff_t in = conv.input_size(), out = conv.output_size();
    // Batch rows sit in wider buffers (stride in + 3, out + 5): views, not packed copies.
    auto xs = random_vector(static_cast<std::size_t>(N * (in + 3)), rng);
    std::vector<double> ys(static_cast<std::size_t>(N * (out + 5)), 7.0);
    std::vector<double> ws(conv.workspace_size(N));
    conv.forward(cview(xs.data(), N, in, in + 3), view(ys.data(), N, out, out + 5), ws);
    std::vector<double> x(static_cast<std::size_t>(N * in)), y(static_cast<std::size_t>(N * out));
    for (std::ptrdiff_t n = 0; n < N; ++n) {
      std::copy_n(xs.begin() + n * (in + 3), in, x.begin() + n * in);
      std::copy_n(ys.begin() + n * (out + 5), out, y.begin() + n * out);
      CHECK(ys[static_cast<std::size_t>(n * (out + 5) + out)] == 7.0);  // padding untouched
    }
    compare<double>("y", y,
                    conv_direct(config, N, x, params, conv.output_height(), conv.output_width()),
                    1e-12);

    // backward accumulates into the parameter gradients: two calls give twice one call.
    const auto g = random_vector(static_cast<std::size_t>(N * out), rng);
    std::vector<double> dx(x.size(), 3.0);
    conv.backward_params(cview(x.data(), N, in), cview(g.data(), N, out), ws);
    const auto once = grads;
    conv.backward(cview(x.data(), N, in), cview(g.data(), N, out), view(dx.data(), N, in), ws);
    for (std::size_t i = 0; i < grads.size(); ++i)
      CHECK(grads[i] == Approx(2.0 * once[i]).margin(1e-12));
    // d loss / d x is linear in g with the weights fixed: <dx, x> = <g, y - bias>.
    double dot_y = 0.0;
    const double* b = params.data() + conv.num_parameters() - config.out_channels;
    const std::ptrdiff_t P = conv.output_height() * conv.output_width();
    for (std::size_t i = 0; i < y.size(); ++i)
      dot_y += g[i] * (y[i] - b[(static_cast<std::ptrdiff_t>(i) / P) % config.out_channels]);
    CHECK(dot(dx, x) == Approx(dot_y).epsilon(1e-10));
  }
}

TEST_CASE("conv2d init follows PyTorch's kaiming uniform bound", "[conv]") {
  seedrl::conv2d<float> conv({.in_channels = 4,
                              .input_height = 84,
                              .input_width = 84,
                              .out_channels = 32,
                              .kernel_h = 8,
                              .kernel_w = 8,
                              .stride_h = 4,
                              .stride_w = 4});
  CHECK(conv.output_height() == 20);
  CHECK(conv.output_width() == 20);
  std::vector<float> params(conv.num_parameters()), grads(conv.num_parameters());
  conv.bind(params.data(), grads.data());
  seedrl::random_generator rng(10);
  conv.init(rng);
  const float bound = 1.0f / std::sqrt(256.0f);
  float largest = 0.0f;
  for (float p : params) {
    CHECK(std::abs(p) <= bound);
    largest = std::max(largest, std::abs(p));
  }
  CHECK(largest > 0.95f * bound);
}

TEST_CASE("conv2d and max_pool2d reject bad sizes with clear errors", "[conv][errors]") {
  using Catch::Matchers::Contains;
  // Zero channels, non-positive stride, negative padding, kernel larger than the padded input.
  CHECK_THROWS_AS(seedrl::conv2d<float>({0, 8, 8, 4, 3, 3}), std::invalid_argument);
  CHECK_THROWS_AS(seedrl::conv2d<float>({1, 8, 8, 4, 3, 3, 0, 1}), std::invalid_argument);
  CHECK_THROWS_AS(seedrl::conv2d<float>({1, 8, 8, 4, 3, 3, 1, 1, -1, 0}), std::invalid_argument);
  CHECK_THROWS_WITH(seedrl::conv2d<float>({1, 4, 4, 2, 7, 3}),
                    Contains("larger than the padded input"));
  CHECK_NOTHROW(seedrl::conv2d<float>({1, 4, 4, 2, 6, 3, 1, 1, 1, 0}));

  seedrl::conv2d<double> conv({2, 6, 6, 3, 3, 3});
  std::vector<double> params(conv.num_parameters()), grads(conv.num_parameters());
  conv.bind(params.data(), grads.data());
  const std::ptrdiff_t N = 2, in = conv.input_size(), out = conv.output_size();
  std::vector<double> x(static_cast<std::size_t>(N * in)), y(static_cast<std::size_t>(N * out)),
      dx(x.size()), ws(conv.workspace_size(N));
  CHECK_THROWS_WITH(conv.forward(cview(x.data(), N, in - 1), view(y.data(), N, out), ws),
                    Contains("x has 71 columns per image, expected 72"));
  CHECK_THROWS_WITH(conv.forward(cview(x.data(), N, in), view(y.data(), N, out + 1), ws),
                    Contains("y has"));
  CHECK_THROWS_WITH(conv.forward(cview(x.data(), N, in), view(y.data(), N - 1, out), ws),
                    Contains("rows"));
  CHECK_THROWS_WITH(conv.forward(cview(x.data(), N, in), view(y.data(), N, out),
                                 std::span<double>(ws).first(ws.size() - 1)),
                    Contains("workspace_size"));
  CHECK_THROWS_WITH(conv.backward(cview(x.data(), N, in), cview(y.data(), N, out),
                                  view(dx.data(), N - 1, in), ws),
                    Contains("dx has"));
  CHECK_THROWS_WITH(conv.backward_params(cview(x.data(), N, in), cview(y.data(), N, out - 1), ws),
                    Contains("dy has"));
  CHECK_NOTHROW(conv.forward(cview(x.data(), N, in), view(y.data(), N, out), ws));

  // Padding over half the kernel (PyTorch refuses it too), zero sizes, kernel too large.
  CHECK_THROWS_WITH(seedrl::max_pool2d<float>({1, 8, 8, 3, 3, 2, 2, 2, 2}),
                    Contains("half the kernel"));
  CHECK_THROWS_AS(seedrl::max_pool2d<float>({0, 8, 8, 3, 3}), std::invalid_argument);
  CHECK_THROWS_AS(seedrl::max_pool2d<float>({1, 2, 2, 3, 3}), std::invalid_argument);
  const seedrl::max_pool2d<float> pool({2, 6, 6, 2, 2});  // stride 0 means the kernel
  CHECK(pool.config().stride_h == 2);
  CHECK(pool.output_height() == 3);
  std::vector<float> px(static_cast<std::size_t>(N * pool.input_size())),
      py(static_cast<std::size_t>(N * pool.output_size()));
  std::vector<std::int32_t> argmax(py.size());
  CHECK_THROWS_WITH(pool.forward(cview(px.data(), N, pool.input_size() + 1),
                                 view(py.data(), N, pool.output_size())),
                    Contains("expected C*H*W = 72"));
  CHECK_THROWS_WITH(
      pool.forward(cview(px.data(), N, pool.input_size()), view(py.data(), N, pool.output_size()),
                   std::span<std::int32_t>(argmax).first(argmax.size() - 1)),
      Contains("argmax has"));
  CHECK_THROWS_WITH(pool.backward(cview(py.data(), N - 1, pool.output_size()), argmax,
                                  view(px.data(), N, pool.input_size())),
                    Contains("rows"));
}
