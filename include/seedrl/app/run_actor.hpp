#pragma once
/// \file
/// Actor mode: one process that steps `--envs-per-actor` environments and talks to the learner
/// at `--learner` over TCP, reconnecting with backoff, until SIGINT/SIGTERM (exit 0) or the
/// learner refuses it (exit 1, e.g. a wrong secret). The link loop works on environments of
/// any type (seedrl/env/any_env_batch.hpp), so the compiled seedrl::app holds it
/// (app/compiled.hpp); `run_actor<Env>` only wraps the environment factory.

#include <cstddef>
#include <functional>
#include <string>
#include <utility>

#include "seedrl/app/auth.hpp"
#include "seedrl/app/compiled.hpp"
#include "seedrl/app/run_options.hpp"
#include "seedrl/env/any_env_batch.hpp"

namespace seedrl::app {

/// Runs the actor on batches from `make_batch`. `name` prefixes the actor's name in the
/// learner's log (the pid is appended).
SEEDRL_APP_API int run_actor(const run_options& o, secret_ptr secret, env_batch_factory make_batch,
                             const std::string& name);

/// Runs the actor; `make_env(i)` builds environment `i` of this process.
template <class Env>
int run_actor(const run_options& o, secret_ptr secret, std::function<Env(std::size_t)> make_env,
              const std::string& name) {
  return run_actor(o, std::move(secret), make_env_batch_factory<Env>(std::move(make_env)), name);
}

}  // namespace seedrl::app

#if !SEEDRL_APP_COMPILED
#include "seedrl/app/detail/run_actor-inl.hpp"
#endif
