#pragma once
// The Atari network of the training benchmarks (bench_train.cpp, bench_allreduce.cpp): 84x84
// grayscale frames stacked 4 deep on the learner, the Nature CNN + LSTM 256, 6 actions; and the
// shape of its training batches (single frames: the stacks are built from them).

#include <cstddef>

#include "random_training_batch.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"

namespace seedrl_bench {

using atari_network = seedrl::frame_stacked<seedrl::nature_cnn_lstm_agent<float>>;

inline atari_network make_atari_network() {
  seedrl::nature_cnn_lstm_agent_config agent;
  agent.num_actions = 6;
  return atari_network(seedrl::frame_stack_config{}, agent);
}

inline batch_shape atari_batch_shape(const atari_network& net) {
  batch_shape s;
  s.observation_size = 84 * 84;
  s.num_actions = 6;
  s.state_width = static_cast<std::size_t>(net.state_size());
  return s;
}

}  // namespace seedrl_bench
