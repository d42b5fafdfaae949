#pragma once
/// \file
/// Which learner rank an actor talks to when a run has several (`--learner A,B,...`): actor i
/// belongs to rank i mod K, so every actor process of a launch can work it out alone from its
/// index, and the ranks get their actors in equal shares (the first K' = N mod K ranks one
/// more). When its rank goes away, the actor tries the following ranks in turn (i+1, i+2, ...
/// mod K), each rank its own spread of the lost rank's actors, and a rank it reaches sees it as
/// a new run id (its unrolls start over there).

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace seedrl::distributed {

/// The rank actor `actor_index` belongs to among `learners` ranks; throws std::invalid_argument
/// on 0 learners.
inline std::size_t home_learner(std::size_t actor_index, std::size_t learners) {
  if (learners == 0)
    throw std::invalid_argument("seedrl: an actor needs at least one learner address");
  return actor_index % learners;
}

/// The ranks actor `actor_index` tries, in order: its home rank, then the others cyclically
/// after it (each once).
inline std::vector<std::size_t> learner_order(std::size_t actor_index, std::size_t learners) {
  const std::size_t home = home_learner(actor_index, learners);
  std::vector<std::size_t> order(learners);
  for (std::size_t k = 0; k < learners; ++k)
    order[k] = (home + k) % learners;
  return order;
}

/// The actors of `actors` (indices 0 .. actors-1) whose home is `rank` of `learners`.
inline std::size_t actors_of_learner(std::size_t rank, std::size_t learners, std::size_t actors) {
  if (learners == 0 || rank >= learners)
    throw std::invalid_argument("seedrl: learner rank " + std::to_string(rank) +
                                " is not below the learner count " + std::to_string(learners));
  return actors / learners + (rank < actors % learners ? 1 : 0);
}

/// Splits `A,B,...` (the `--learner` list) into its addresses; throws std::invalid_argument on
/// an empty item or an address given twice (two ranks cannot share one).
inline std::vector<std::string> split_learner_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = text.find(',', begin);
    std::string item =
        text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    if (item.empty())
      throw std::invalid_argument("seedrl: --learner '" + text +
                                  "' has an empty address; give HOST:PORT[,HOST:PORT...]");
    for (const auto& seen : out) {
      if (seen == item)
        throw std::invalid_argument("seedrl: --learner '" + text + "' names " + item +
                                    " twice; each learner rank listens at an address of its own");
    }
    out.push_back(std::move(item));
    if (comma == std::string::npos)
      return out;
    begin = comma + 1;
  }
}

}  // namespace seedrl::distributed
