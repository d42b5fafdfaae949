#pragma once
/// \file
/// The shape of an `mlp_lstm_agent` (seedrl/net/mlp_lstm_agent.hpp) and its one-line
/// description, apart from the network so that code which only needs the shape (a GPU trainer
/// compiled by nvcc, a checkpoint reader) does not pull in Eigen.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "seedrl/net/detail/description_fields.hpp"

namespace seedrl {

/// Shape of an `mlp_lstm_agent`.
struct mlp_lstm_agent_config {
  std::ptrdiff_t observation_size = 4;
  std::int32_t num_actions = 2;
  std::vector<std::ptrdiff_t> hidden_sizes{64, 64};  ///< MLP torso, ReLU after each layer
  std::ptrdiff_t lstm_size = 64;                     ///< 0: no LSTM, heads read the torso
  std::ptrdiff_t lstm_layers = 1;
  double forget_bias = 1.0;
  bool reward_and_action_inputs = true;  ///< feed reward and one-hot previous action to the core
  std::optional<double> max_abs_input_reward;  ///< clip the reward fed to the core
  std::uint64_t seed = 0;                      ///< initialisation
  /// D > 0: continuous actions of D elements. `num_actions` is then the policy's outputs per
  /// row (2D for gaussian_sampler: D means then D log-stds) and the previous action enters the
  /// core as its D values instead of a one-hot. 0: discrete.
  std::int32_t continuous_action_size = 0;
  /// Continuous actions: set, the log-stds are one state-independent vector of D parameters
  /// starting at this value (as Stable-Baselines3's and CleanRL's PPO for MuJoCo); unset, the
  /// policy layer outputs them (state-dependent). Its kind is part of `describe`, its value is
  /// initialisation and is not.
  std::optional<double> log_std_init;
  /// Orthogonal initialisation (seedrl/net/init_scheme.hpp) with the usual gains: sqrt(2) for
  /// the torso's layers, 0.01 for the policy head, 1 for the value head. The LSTM keeps its
  /// own. Off: PyTorch's default, as always. Like the seed, not part of `describe`.
  bool orthogonal_init = false;
  /// Separate policy and value networks: two MLPs of `hidden_sizes` side by side, the policy
  /// head on one and the value head on the other (Stable-Baselines3's and CleanRL's layout for
  /// continuous control), instead of one MLP both heads share (SEED's). Needs lstm_size 0; the
  /// reward and previous action, when fed, go to the policy head. Part of `describe`
  /// (" value_network=separate").
  bool separate_value_network = false;
};

/// The architecture as one line, e.g. "mlp_lstm_agent obs=4 actions=2 hidden=64,64 lstm=64
/// layers=1 reward_action_inputs=1 max_abs_input_reward=none": stored in checkpoints so that an
/// evaluation program can rebuild the network. Initialisation (seed, forget bias) is left out:
/// a restored network gets its parameters from the checkpoint. A continuous-action network adds
/// " continuous_actions=D", and " log_std=independent" when its log-std is one vector (discrete
/// ones keep the line they always had), and " value_network=separate" for separate policy and
/// value networks.
inline std::string describe(const mlp_lstm_agent_config& c) {
  std::string hidden;
  for (std::size_t i = 0; i < c.hidden_sizes.size(); ++i) {
    // Appended piecewise: GCC 12 at -O3 warns (-Wrestrict, a false positive) about
    // `"," + std::to_string(...)`.
    if (i > 0)
      hidden += ',';
    hidden += std::to_string(c.hidden_sizes[i]);
  }
  return "mlp_lstm_agent obs=" + std::to_string(c.observation_size) +
         " actions=" + std::to_string(c.num_actions) + " hidden=" + hidden +
         " lstm=" + std::to_string(c.lstm_size) + " layers=" + std::to_string(c.lstm_layers) +
         " reward_action_inputs=" + (c.reward_and_action_inputs ? "1" : "0") +
         " max_abs_input_reward=" +
         (c.max_abs_input_reward ? std::to_string(*c.max_abs_input_reward) : "none") +
         (c.continuous_action_size > 0
              ? " continuous_actions=" + std::to_string(c.continuous_action_size)
              : std::string()) +
         (c.continuous_action_size > 0 && c.log_std_init ? " log_std=independent" : "") +
         (c.separate_value_network ? " value_network=separate" : "");
}

/// Reads what `describe` wrote; throws std::invalid_argument naming the bad field.
inline mlp_lstm_agent_config parse_mlp_lstm_agent_description(std::string_view text) {
  const auto fail = [&](const std::string& why) -> std::invalid_argument {
    return std::invalid_argument("seedrl: bad mlp_lstm_agent description \"" + std::string(text) +
                                 "\": " + why);
  };
  const auto integer = [&](std::string_view v, std::string_view key) {
    std::int64_t x = 0;
    if (!detail::parse_non_negative(v, x))
      throw fail(std::string(key) + " is not a non-negative integer");
    return x;
  };
  mlp_lstm_agent_config c;
  c.hidden_sizes.clear();
  bool continuous = false, independent = false, separate = false;  // the optional fields
  const std::size_t fields = detail::for_each_description_field(
      text, "mlp_lstm_agent", fail, [&](std::string_view key, std::string_view value) {
        if (key == "obs") {
          c.observation_size = static_cast<std::ptrdiff_t>(integer(value, key));
        } else if (key == "actions") {
          c.num_actions = static_cast<std::int32_t>(integer(value, key));
        } else if (key == "hidden") {
          if (!detail::parse_int_list(value, c.hidden_sizes))
            throw fail("hidden is not a list of non-negative integers");
        } else if (key == "lstm") {
          c.lstm_size = static_cast<std::ptrdiff_t>(integer(value, key));
        } else if (key == "layers") {
          c.lstm_layers = static_cast<std::ptrdiff_t>(integer(value, key));
        } else if (key == "reward_action_inputs") {
          c.reward_and_action_inputs = integer(value, key) != 0;
        } else if (key == "max_abs_input_reward") {
          if (!detail::parse_optional_double(value, c.max_abs_input_reward))
            throw fail("max_abs_input_reward is not a number");
        } else if (key == "continuous_actions") {
          c.continuous_action_size = static_cast<std::int32_t>(integer(value, key));
          if (c.continuous_action_size <= 0)
            throw fail("continuous_actions must be positive");
          continuous = true;
        } else if (key == "log_std") {
          if (value != "independent")
            throw fail("log_std is not \"independent\"");
          c.log_std_init = 0.0;  // the kind; the value is in the parameters
          independent = true;
        } else if (key == "value_network") {
          if (value != "separate")
            throw fail("value_network is not \"separate\"");
          c.separate_value_network = true;
          separate = true;
        } else {
          throw fail("unknown field \"" + std::string(key) + "\"");
        }
      });
  const std::size_t seen = fields - continuous - independent - separate;
  if (seen != 7)
    throw fail("expected 7 fields, got " + std::to_string(seen));
  if (independent && !continuous)
    throw fail("log_std=independent without continuous_actions");
  return c;
}

}  // namespace seedrl
