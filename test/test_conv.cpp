// The convolution and max pooling every conv stack runs (host_backend's conv2d primitives,
// oneDNN in float where built with it, else backend/detail/conv2d_gemm.hpp; the max pooling
// kernels of backend/detail/max_pool2d_kernels.hpp on host_backend): PyTorch fixtures
// (tools/gen_conv_fixture.py) in float and double, and central-difference gradient checks in
// float64. test_backend_conv.cpp checks the same primitives against direct loops, across chunks
// and against one kernel call per element, and their refusals.
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
#include "seedrl/backend/detail/max_pool2d_kernels.hpp"
#include "seedrl/backend/host_backend.hpp"
#include "seedrl/core/random.hpp"

namespace {

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
void compare_conv(const char* what, std::span<const S> got, const std::vector<double>& want,
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
double conv_tolerance(const nlohmann::json& j) {
  const char* key = std::is_same_v<S, double> ? "double" : "float";
  return j.at("tolerance").at(key).get<double>();
}

/// The fixture's convolution for `batch` images.
seedrl::conv2d_shape conv_shape_of(const nlohmann::json& j, int batch) {
  seedrl::conv2d_shape c;
  c.batch = batch;
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

std::size_t conv_input_size(const seedrl::conv2d_shape& s) {
  return static_cast<std::size_t>(s.in_channels * s.input_height * s.input_width);
}
std::size_t conv_output_size(const seedrl::conv2d_shape& s) {
  return static_cast<std::size_t>(s.out_channels * s.output_height() * s.output_width());
}

template <class S>
void run_conv_fixture(const nlohmann::json& j) {
  const int N = j.at("batch");
  const auto shape = conv_shape_of(j, N);
  REQUIRE(shape.output_height() == j.at("output_height").get<int>());
  REQUIRE(shape.output_width() == j.at("output_width").get<int>());
  // PyTorch's weight [O, C, KH, KW] and bias, as the conv stacks lay out their parameters.
  const auto w = scaled<S>(j, "weight");
  const auto bias = scaled<S>(j, "bias");
  const auto x = scaled<S>(j, "x");
  const auto g = scaled<S>(j, "G");
  std::vector<S> y(static_cast<std::size_t>(N) * conv_output_size(shape)), dx(x.size());
  std::vector<S> dw(w.size(), S(0)), dbias(bias.size(), S(0));
  const double tol = conv_tolerance<S>(j);
  const seedrl::host_backend be;
  be.conv2d_forward(shape, x.data(), w.data(), bias.data(), y.data());
  compare_conv<S>("y", y, j.at("y").get<std::vector<double>>(), tol);
  be.conv2d_backward(shape, x.data(), w.data(), g.data(), dx.data(), dw.data(), dbias.data());
  const auto& gr = j.at("grads");
  compare_conv<S>("d x", dx, gr.at("x").get<std::vector<double>>(), tol);
  compare_conv<S>("d weight", dw, gr.at("weight").get<std::vector<double>>(), tol);
  compare_conv<S>("d bias", dbias, gr.at("bias").get<std::vector<double>>(), tol);
}

seedrl::detail::max_pool2d_geometry pool_geometry_of(const nlohmann::json& j) {
  const auto z = [&](const nlohmann::json& v) { return v.get<std::size_t>(); };
  return {z(j.at("channels")),      z(j.at("input_height")), z(j.at("input_width")),
          z(j.at("output_height")), z(j.at("output_width")), z(j.at("kernel").at(0)),
          z(j.at("kernel").at(1)),  z(j.at("stride").at(0)), z(j.at("stride").at(1)),
          z(j.at("padding").at(0)), z(j.at("padding").at(1))};
}

/// y = the window maxima of x ([n, in_size()]), and the argmaxes when given.
template <class S>
void pool_forward(const seedrl::detail::max_pool2d_geometry& g, std::size_t n, const S* x, S* y,
                  std::int32_t* argmax) {
  seedrl::host_backend{}.for_each(
      n * g.out_size(),
      seedrl::detail::max_pool_forward_kernel<S>{x, g.in_size(), y, g.out_size(), argmax, g});
}

/// dx = each dy sent to its argmax, zero elsewhere.
template <class S>
void pool_backward(const seedrl::detail::max_pool2d_geometry& g, std::size_t n, const S* dy,
                   const std::int32_t* argmax, S* dx) {
  seedrl::host_backend{}.for_each(
      n * g.in_size(),
      seedrl::detail::max_pool_backward_kernel<S>{dy, g.out_size(), argmax, dx, g.in_size(), g});
}

template <class S>
void run_pool_fixture(const nlohmann::json& j) {
  const auto g = pool_geometry_of(j);
  const std::size_t N = j.at("batch");
  const auto x = scaled<S>(j, "x");
  const auto dy = scaled<S>(j, "G");
  REQUIRE(x.size() == N * g.in_size());
  std::vector<S> y(N * g.out_size()), y_inference(y.size()), dx(x.size());
  std::vector<std::int32_t> argmax(y.size());
  pool_forward(g, N, x.data(), y.data(), argmax.data());
  const double tol = conv_tolerance<S>(j);
  compare_conv<S>("y", y, j.at("y").get<std::vector<double>>(), tol);
  // Exact index equality: where gradients go, including how ties are broken.
  CHECK(argmax == j.at("indices").get<std::vector<std::int32_t>>());
  pool_forward<S>(g, N, x.data(), y_inference.data(), nullptr);
  CHECK(y_inference == y);
  pool_backward(g, N, dy.data(), argmax.data(), dx.data());
  compare_conv<S>("d x", dx, j.at("grads").at("x").get<std::vector<double>>(), tol);
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
  std::vector<seedrl::conv2d_shape> shapes(2);
  shapes[0].in_channels = 2, shapes[0].input_height = 7, shapes[0].input_width = 6;
  shapes[0].out_channels = 3, shapes[0].kernel_h = 3, shapes[0].kernel_w = 2;
  shapes[0].stride_h = 2, shapes[0].padding_h = 1, shapes[0].padding_w = 2;
  shapes[1].in_channels = 3, shapes[1].input_height = 5, shapes[1].input_width = 5;
  shapes[1].out_channels = 2, shapes[1].kernel_h = shapes[1].kernel_w = 3;
  shapes[1].padding_h = shapes[1].padding_w = 1;
  seedrl::random_generator rng(7);
  const seedrl::host_backend be;
  for (auto shape : shapes) {
    shape.batch = 2;
    const auto N = static_cast<std::size_t>(shape.batch);
    const auto taps = static_cast<std::size_t>(shape.in_channels * shape.kernel_h * shape.kernel_w);
    // W then b, as the conv stacks lay them out.
    auto params = random_vector(static_cast<std::size_t>(shape.out_channels) * (taps + 1), rng);
    auto x = random_vector(N * conv_input_size(shape), rng);
    const auto g = random_vector(N * conv_output_size(shape), rng);
    std::vector<double> y(g.size()), dx(x.size()), grads(params.size(), 0.0);
    const double* b = params.data() + shape.out_channels * taps;
    auto loss = [&] {
      be.conv2d_forward(shape, x.data(), params.data(), b, y.data());
      return dot(y, g);
    };
    loss();
    be.conv2d_backward(shape, x.data(), params.data(), g.data(), dx.data(), grads.data(),
                       grads.data() + shape.out_channels * taps);
    INFO("kernel " << shape.kernel_h << "x" << shape.kernel_w);
    require_close(gradcheck(params, grads, loss));
    require_close(gradcheck(x, dx, loss));
  }
}

TEST_CASE("max_pool2d input gradients match central differences", "[conv][pool][gradcheck]") {
  // 2 channels of 7x6, 3x3 windows, stride 2, padding 1: 4x3 outputs.
  const seedrl::detail::max_pool2d_geometry g{2, 7, 6, 4, 3, 3, 3, 2, 2, 1, 1};
  const std::size_t N = 2;
  // Distinct values 0.01 apart, shuffled: no window has a tie, and a 1e-6 step cannot make one.
  std::vector<double> x(N * g.in_size());
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = 0.01 * static_cast<double>(i) - 1.0;
  seedrl::random_generator rng(8);
  for (std::size_t i = x.size() - 1; i > 0; --i)
    std::swap(x[i], x[rng.below(i + 1)]);
  const auto dy = random_vector(N * g.out_size(), rng);
  std::vector<double> y(dy.size()), dx(x.size());
  std::vector<std::int32_t> argmax(dy.size());
  auto loss = [&] {
    pool_forward<double>(g, N, x.data(), y.data(), nullptr);
    return dot(y, dy);
  };
  pool_forward(g, N, x.data(), y.data(), argmax.data());
  pool_backward(g, N, dy.data(), argmax.data(), dx.data());
  require_close(gradcheck(x, dx, loss));
}
