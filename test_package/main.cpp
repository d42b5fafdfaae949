#include <array>
#include <cstdio>
#include <seedrl/env/cartpole.hpp>
#include <seedrl/version.hpp>

int main() {
  seedrl::cartpole env(3);
  std::array<float, 4> obs{};
  env.reset(obs);
  const auto r = env.step(1, obs);
  std::printf("conan consumer ok: seedrl %d.%d.%d, reward %.1f\n", SEEDRL_VERSION_MAJOR,
              SEEDRL_VERSION_MINOR, SEEDRL_VERSION_PATCH, r.reward);
  return r.reward == 1.0 ? 0 : 1;
}
