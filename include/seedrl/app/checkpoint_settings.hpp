#pragma once
/// \file
/// The run settings a checkpoint keeps beside its weights, because the network was trained
/// through them: observation normalization and reward scaling (their statistics are in the
/// checkpoint, and the network sees both as inputs) and, for continuous actions, how the
/// Gaussian's samples meet the bounds (meta "action_bounds": squash or clip, a different policy
/// each). A resumed run and eval adopt them; a flag given on the command line that contradicts
/// one is refused with a message, never silently followed.
#include <cstdio>
#include <optional>
#include <string>

#include "seedrl/app/run_options.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/io/checkpoint.hpp"
#include "seedrl/runtime/action_sampler.hpp"
#include "seedrl/runtime/input_normalizer.hpp"
#include "seedrl/runtime/learner_config.hpp"

namespace seedrl::app {

/// Checkpoint meta key of --action-bounds ("squash" or "clip"), for continuous actions.
inline constexpr const char* action_bounds_meta = "action_bounds";

inline const char* to_string(bounds_handling b) noexcept {
  return b == bounds_handling::clip ? "clip" : "squash";
}

/// Records in `lc.checkpoint_meta` what checkpoint_settings adopts and the statistics do not
/// say by themselves: the action bounds' handling, for continuous `actions`.
inline void record_checkpoint_settings(const run_options& o, const action_spec& actions,
                                       learner_config& lc) {
  if (!actions.is_discrete())
    lc.checkpoint_meta[action_bounds_meta] = to_string(o.action_bounds);
}

/// Makes `o` train or play as the run that saved `c` did (see the file comment); `purpose` is
/// "resume" or "eval", for messages. Returns false, having said why on stderr, when a flag given
/// on the command line contradicts `c`; prints one line per setting it adopts.
inline bool adopt_checkpoint_settings(run_options& o, const checkpoint& c,
                                      const action_spec& actions, const char* purpose) {
  using names = input_normalizer<float>;  // the names do not depend on the scalar
  const std::string source = c.source.string();
  bool ok = true;
  const auto refuse = [&](const std::string& saved, const std::string& asked) {
    std::fprintf(stderr,
                 "%s was trained with %s; this %s asks for %s, under which its network would "
                 "see other inputs or play another policy than it learned: drop the flag to "
                 "adopt the checkpoint's setting%s\n",
                 source.c_str(), saved.c_str(), purpose, asked.c_str(),
                 std::string(purpose) == "resume"
                     ? ", or start a new run from it with --init-checkpoint"
                     : "");
    ok = false;
  };
  const auto adopt_flag = [&](bool& value, bool given, bool saved, const std::string& flag) {
    if (value == saved)
      return;
    if (given) {
      refuse(saved ? flag : flag + "=false", saved ? flag + "=false" : flag);
      return;
    }
    value = saved;
    std::printf("%s from %s: %s%s\n", saved ? "adopting" : "turning off as in", source.c_str(),
                flag.c_str(), saved ? " (its statistics are restored)" : "");
  };
  adopt_flag(o.normalize_observations, o.given.normalize_observations,
             c.tensors.contains(names::obs_mean_name), "--normalize-observations");
  adopt_flag(o.scale_rewards, o.given.scale_rewards, c.counters.contains(names::return_var_name),
             "--scale-rewards");
  if (!actions.is_discrete()) {
    if (const std::optional<std::string> saved = c.meta_value(action_bounds_meta)) {
      if (*saved != "squash" && *saved != "clip") {
        std::fprintf(stderr, "%s: unknown action bounds \"%s\" (a newer seedrl?)\n", source.c_str(),
                     saved->c_str());
        return false;
      }
      const bounds_handling b = *saved == "clip" ? bounds_handling::clip : bounds_handling::squash;
      if (b != o.action_bounds) {
        if (o.given.action_bounds) {
          refuse("--action-bounds " + *saved,
                 std::string("--action-bounds ") + to_string(o.action_bounds));
        } else {
          o.action_bounds = b;
          std::printf("adopting from %s: --action-bounds %s\n", source.c_str(), saved->c_str());
        }
      }
    }
  }
  return ok;
}

}  // namespace seedrl::app
