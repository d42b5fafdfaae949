// A user's program: one CartPole episode with a fixed policy, through the installed package.
#include <array>
#include <cstdio>
#include <seedrl/env/cartpole.hpp>
#include <seedrl/version.hpp>
#ifdef CONSUMER_USES_ASIO
#include <boost/asio/io_context.hpp>
#endif

int main() {
  seedrl::cartpole env(1);
  std::array<float, 4> obs{};
  env.reset(obs);
  int steps = 0;
  for (bool done = false; !done; ++steps) {
    done = env.step(obs[2] > 0.0f ? 1 : 0, obs).done();
  }
  const char* asio = "";
#ifdef CONSUMER_USES_ASIO
  boost::asio::io_context io;
  io.run();
  asio = ", asio linked";
#endif
  std::printf("consumer ok: seedrl %d.%d.%d, cartpole episode of %d steps%s\n",
              SEEDRL_VERSION_MAJOR, SEEDRL_VERSION_MINOR, SEEDRL_VERSION_PATCH, steps, asio);
  return steps > 0 ? 0 : 1;
}
