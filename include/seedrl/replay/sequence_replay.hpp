#pragma once
/// \file
/// `sequence_replay`: R2D2's prioritized replay of fixed-length sequences (issue 31).
///
/// What it stores per sequence: T+1 steps of observations in their native type `Obs` (uint8
/// for pixels: a quarter of float's bytes), rewards, done and truncated flags, previous and taken
/// actions, and the recurrent state the sequence starts from. A state row may begin with frames
/// (a learner-side frame stack keeps the last frames in the state, seedrl/net/frame_stack.hpp):
/// `state_frame_values` of them are stored as `Obs` too. Narrowing checks every value: one that
/// `Obs` cannot hold exactly (a frame that was not uint8) refuses the insert, never rounds.
///
/// Capacity: at most `max_sequences`, and at most `max_bytes` of stored data; as every
/// sequence has the same size, the byte bound is a sequence bound computed at construction.
/// FIFO: the oldest sequence makes room. Memory is reserved, not touched, at construction; a
/// replay bigger than the machine's available memory is refused there with the figure it needs.
///
/// Priorities (seedrl/replay/priorities.hpp): a sequence is drawn with probability
/// p^alpha / sum p^alpha from a sum tree (seedrl/replay/sum_tree.hpp), with replacement; it
/// arrives with the largest priority seen so far (so that it is trained on soon), and training
/// replaces that by its own (`update_priorities`, by sequence id: an id whose sequence was
/// evicted meanwhile is skipped). Priorities below `min_priority` are raised to it, so that no
/// sequence becomes impossible to draw. A NaN or negative priority is refused naming the
/// sequence, before any is changed.
///
/// Rates: a `rate_limiter` (seedrl/replay/rate_limiter.hpp) bounds samples per insert both
/// ways; `insert` and `sample` wait on a condition variable (never spin) and return
/// false / nullopt once `close()` is called.
///
/// Threads: any number of inserting and sampling threads. Data is copied outside the lock: an
/// insert takes its slot out of the tree while it writes, and a sample pins the slots it copies
/// so that no insert overwrites them meanwhile.
///
/// Persistence: `save` writes the stored sequences with their ids and priorities (and the rate
/// limiter's counters) to a stream, checksummed; `load` restores them into a replay of the same
/// shape and capacity (seedrl/replay/replay_file.hpp keeps them beside checkpoints).

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <concepts>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <istream>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "seedrl/core/config.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/detail/crc32c.hpp"
#include "seedrl/replay/priorities.hpp"
#include "seedrl/replay/rate_limiter.hpp"
#include "seedrl/replay/replay_config.hpp"
#include "seedrl/replay/sum_tree.hpp"
#include "seedrl/runtime/training_batch.hpp"

namespace seedrl::replay {

/// The size of every sequence a replay holds.
struct sequence_shape {
  std::size_t steps = 0;               ///< T + 1
  std::size_t observation_size = 0;    ///< values per step's observation
  std::size_t state_width = 0;         ///< values of the start state
  std::size_t state_frame_values = 0;  ///< the state's first values that are frames (as Obs)
};

/// One sequence to insert, as views (e.g. of a completed unroll): observations [steps,
/// observation_size] as S (widened frames are narrowed back to Obs), the others [steps], the
/// start state [state_width].
template <class S>
struct sequence_view {
  std::span<const S> observations;
  std::span<const S> rewards;
  std::span<const std::uint8_t> dones;
  std::span<const std::uint8_t> truncated;
  std::span<const std::int32_t> prev_actions;
  std::span<const std::int32_t> actions;
  std::span<const S> start_state;
};

/// A sampled batch, time-major [(T+1)][B] as training_batch wants it, with what training needs
/// to weight it and give the priorities back. Keep one and reuse it: its arrays grow once.
template <class S>
struct sampled_sequences {
  std::size_t T = 0, B = 0;
  std::vector<S> observations, rewards, behaviour_log_probs, start_state;
  std::vector<std::uint8_t> dones, truncated;
  std::vector<std::int32_t> prev_actions, actions;
  std::vector<std::uint64_t> ids;     ///< [B] for update_priorities
  std::vector<double> probabilities;  ///< [B] P(i) when drawn
  std::vector<S> importance_weights;  ///< [B] (N P(i))^-beta / max, in (0, 1]

  /// The batch as training_batch views (behaviour_log_probs are zeros: R2D2 reads none).
  training_batch<S> view(std::size_t num_actions) const {
    return {T,          B,         num_actions,  observations, rewards,
            dones,      truncated, prev_actions, actions,      behaviour_log_probs,
            start_state};
  }
};

/// Counters for the progress line and the metrics.
struct replay_stats {
  std::size_t size = 0;        ///< sequences stored
  std::size_t capacity = 0;    ///< sequences it can hold
  std::uint64_t inserted = 0;  ///< sequences inserted since the start
  std::uint64_t sampled = 0;   ///< sequences sampled since the start
  double mean_priority = 0.0;  ///< over the stored sequences (before the exponent)
  std::size_t bytes_per_sequence = 0;
  std::size_t bytes_stored = 0;
};

/// The memory the machine has available now, in bytes (Linux's MemAvailable; the physical
/// memory where that cannot be read).
inline std::size_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::size_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:")
      return kb * 1024;
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page)
                               : std::numeric_limits<std::size_t>::max();
}

/// See the file comment. `Obs` is the observations' stored type, `S` the training scalar.
template <class Obs, std::floating_point S>
requires std::is_arithmetic_v<Obs>
class sequence_replay {
 public:
  /// Throws std::invalid_argument for a shape with no steps or observations, frames beyond the
  /// state, bad exponents, a capacity below one batch (`batch`: the sequences each sample
  /// draws) or below the minimum size, or a replay that does not fit in memory (naming the
  /// bytes it needs).
  sequence_replay(const sequence_replay_config& config, const sequence_shape& shape,
                  std::size_t batch)
      : config_(config), shape_(shape), batch_(batch), limiter_(config.ratio, batch), tree_(1) {
    const auto fail = [](const std::string& what) {
      throw std::invalid_argument("seedrl::replay::sequence_replay: " + what);
    };
    if (shape_.steps < 2 || shape_.observation_size == 0)
      fail("sequences need at least 2 steps and a non-empty observation");
    if (shape_.state_frame_values > shape_.state_width)
      fail("state_frame_values (" + std::to_string(shape_.state_frame_values) +
           ") exceeds the state width (" + std::to_string(shape_.state_width) + ")");
    if (!(config_.priority_exponent >= 0.0) || !std::isfinite(config_.priority_exponent) ||
        !(config_.importance_exponent >= 0.0) || !std::isfinite(config_.importance_exponent))
      fail("the priority and importance exponents must be finite and >= 0");
    if (!(config_.min_priority > 0.0) || !std::isfinite(config_.min_priority))
      fail("min_priority must be positive and finite");
    capacity_ = config_.max_sequences;
    if (config_.max_bytes > 0)
      capacity_ = std::min(capacity_, config_.max_bytes / bytes_per_sequence());
    if (capacity_ < batch_ || capacity_ < config_.ratio.min_size)
      fail("room for " + std::to_string(capacity_) + " sequences of " +
           std::to_string(bytes_per_sequence()) + " bytes (max_sequences " +
           std::to_string(config_.max_sequences) + ", max_bytes " +
           std::to_string(config_.max_bytes) + ") can never serve a batch of " +
           std::to_string(batch_) + " after a minimum of " +
           std::to_string(config_.ratio.min_size));
    const double need = static_cast<double>(capacity_) *
                        (static_cast<double>(bytes_per_sequence()) + 40.0);  // + bookkeeping
    const std::size_t limit =
        config_.memory_limit_bytes > 0 ? config_.memory_limit_bytes : available_memory_bytes();
    if (need > static_cast<double>(limit))
      fail("a replay of " + std::to_string(capacity_) + " sequences needs " + gib(need) + " GiB (" +
           std::to_string(bytes_per_sequence()) + " bytes each), more than the " +
           gib(static_cast<double>(limit)) +
           " GiB available; lower max_sequences or set max_bytes");
    tree_ = sum_tree(capacity_);
    const std::size_t T1 = shape_.steps, F = shape_.state_frame_values;
    observations_ = std::make_unique_for_overwrite<Obs[]>(capacity_ * T1 * shape_.observation_size);
    state_frames_ = std::make_unique_for_overwrite<Obs[]>(capacity_ * F);
    state_rest_ = std::make_unique_for_overwrite<S[]>(capacity_ * (shape_.state_width - F));
    rewards_ = std::make_unique_for_overwrite<S[]>(capacity_ * T1);
    flags_ = std::make_unique_for_overwrite<std::uint8_t[]>(capacity_ * T1);
    prev_actions_ = std::make_unique_for_overwrite<std::int32_t[]>(capacity_ * T1);
    actions_ = std::make_unique_for_overwrite<std::int32_t[]>(capacity_ * T1);
    slots_.resize(capacity_);
  }

  sequence_replay(const sequence_replay&) = delete;
  sequence_replay& operator=(const sequence_replay&) = delete;

  const sequence_shape& shape() const noexcept { return shape_; }
  const sequence_replay_config& config() const noexcept { return config_; }
  std::size_t capacity() const noexcept { return capacity_; }

  /// Bytes one stored sequence takes (the figure behind max_bytes and the memory check).
  std::size_t bytes_per_sequence() const noexcept {
    const std::size_t T1 = shape_.steps, F = shape_.state_frame_values;
    return T1 * (shape_.observation_size * sizeof(Obs) + sizeof(S) + 1 + 2 * sizeof(std::int32_t)) +
           F * sizeof(Obs) + (shape_.state_width - F) * sizeof(S);
  }

  /// Stores `seq`, first waiting while the rate limiter says actors are ahead; evicts the
  /// oldest sequence when full. Returns its id, or nullopt once closed (nothing stored).
  /// Throws std::invalid_argument for arrays of the wrong size or a frame value Obs cannot hold
  /// exactly (nothing stored then).
  std::optional<std::uint64_t> insert(const sequence_view<S>& seq) {
    check(seq);
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] {
      return closed_ ||
             (limiter_.can_insert() && slots_[next_].readers == 0 && !slots_[next_].writing);
    });
    if (closed_)
      return std::nullopt;
    const std::size_t slot = next_;
    next_ = (next_ + 1) % capacity_;
    slot_state& st = slots_[slot];
    if (st.stored)
      --size_;  // evicted; no longer drawable while it is written
    st.stored = false;
    st.writing = true;
    tree_.set(slot, 0.0);
    const std::uint64_t id = next_id_++;
    limiter_.inserted();
    lock.unlock();
    try {
      write(slot, seq);
    } catch (...) {
      lock.lock();
      st.writing = false;
      changed_.notify_all();
      throw;
    }
    lock.lock();
    st.writing = false;
    st.stored = true;
    st.id = id;
    st.priority = max_priority_;
    tree_.set(slot, std::pow(max_priority_, config_.priority_exponent));
    ++size_;
    changed_.notify_all();
    return id;
  }

  /// Draws `out.B = batch` sequences (the batch given at construction) by priority, waiting
  /// until enough are stored and the rate limiter lets training go on, and copies them into
  /// `out`, time-major and widened to S, with their ids, probabilities and importance weights.
  /// False once closed (out unchanged).
  bool sample(random_generator& rng, sampled_sequences<S>& out) {
    std::vector<std::size_t> drawn;
    std::unique_lock lock(mutex_);
    changed_.wait(lock,
                  [&] { return closed_ || (limiter_.can_sample(size_) && tree_.total() > 0.0); });
    if (closed_)
      return false;
    const std::size_t B = batch_;
    drawn.resize(B);
    out.ids.resize(B);
    out.probabilities.resize(B);
    const double total = tree_.total();
    for (std::size_t b = 0; b < B; ++b) {
      const std::size_t slot = tree_.find(rng.uniform() * total);
      drawn[b] = slot;
      ++slots_[slot].readers;
      out.ids[b] = slots_[slot].id;
      out.probabilities[b] = tree_.get(slot) / total;
    }
    limiter_.sampled();
    const std::size_t stored = size_;
    lock.unlock();
    read(drawn, out);
    const std::vector<double> w =
        importance_weights(out.probabilities, stored, config_.importance_exponent);
    out.importance_weights.assign(w.begin(), w.end());
    lock.lock();
    for (const std::size_t slot : drawn)
      --slots_[slot].readers;
    changed_.notify_all();
    return true;
  }

  /// Gives sampled sequences (`ids` from a sample) their new priorities (before the exponent).
  /// Ids of sequences evicted since are skipped. Throws std::invalid_argument, changing
  /// nothing, for a priority that is NaN, infinite or negative (naming the sequence) or
  /// arrays of different sizes.
  void update_priorities(std::span<const std::uint64_t> ids, std::span<const double> priorities) {
    if (ids.size() != priorities.size())
      throw std::invalid_argument("seedrl::replay::sequence_replay: " + std::to_string(ids.size()) +
                                  " ids and " + std::to_string(priorities.size()) + " priorities");
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (!(priorities[i] >= 0.0) || !std::isfinite(priorities[i]))
        throw std::invalid_argument("seedrl::replay::sequence_replay: sequence " +
                                    std::to_string(ids[i]) + " was given priority " +
                                    std::to_string(priorities[i]) +
                                    "; priorities must be finite and non-negative");
    }
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const std::size_t slot = static_cast<std::size_t>(ids[i] % capacity_);
      slot_state& st = slots_[slot];
      if (!st.stored || st.id != ids[i])
        continue;  // evicted (or being overwritten) since it was drawn
      const double p = std::max(priorities[i], config_.min_priority);
      st.priority = p;
      max_priority_ = std::max(max_priority_, p);
      tree_.set(slot, std::pow(p, config_.priority_exponent));
    }
    changed_.notify_all();
  }

  /// Writes the stored sequences, each with its id and priority, the largest priority seen and
  /// the rate limiter's counters to `out`, for `load`: a header, one record per sequence, an
  /// end marker and a CRC-32C of everything before it (docs/r2d2.md, "Checkpoints"). Inserts
  /// may go on meanwhile: each sequence is pinned while it is copied out, so the stream holds
  /// every sequence stored when the save began that was not evicted before its turn. Returns
  /// the sequences written; throws std::runtime_error when `out` fails.
  std::size_t save(std::ostream& out) {
    std::vector<std::pair<std::size_t, std::uint64_t>> stored;  // slot, id
    file_header h = header();
    {
      std::lock_guard lock(mutex_);
      h.next_id = next_id_;
      h.max_priority = max_priority_;
      h.inserts = limiter_.inserts();
      h.samples = limiter_.samples();
      for (std::size_t slot = 0; slot < capacity_; ++slot)
        if (slots_[slot].stored && !slots_[slot].writing)
          stored.emplace_back(slot, slots_[slot].id);
    }
    std::uint32_t crc = 0;
    const auto put = [&](const void* data, std::size_t bytes) {
      const auto* p = static_cast<const std::byte*>(data);
      crc = detail::crc32c(std::span<const std::byte>(p, bytes), crc);
      out.write(reinterpret_cast<const char*>(p), static_cast<std::streamsize>(bytes));
      if (!out)
        throw std::runtime_error("seedrl::replay::sequence_replay: writing the replay failed");
    };
    put(&h, sizeof h);
    std::size_t written = 0;
    for (const auto& entry : stored) {
      // Not a structured binding: Clang 14 cannot capture one in the lambdas below.
      const std::size_t slot = entry.first;
      const std::uint64_t id = entry.second;
      double priority = 0.0;
      {
        std::lock_guard lock(mutex_);
        slot_state& st = slots_[slot];
        if (!st.stored || st.id != id)
          continue;  // evicted since
        ++st.readers;
        priority = st.priority;
      }
      const auto unpin = [&] {
        std::lock_guard lock(mutex_);
        --slots_[slot].readers;
        changed_.notify_all();
      };
      try {
        put(&id, sizeof id);
        put(&priority, sizeof priority);
        for_each_array(slot, [&](auto* data, std::size_t n) { put(data, n * sizeof *data); });
      } catch (...) {
        unpin();
        throw;
      }
      unpin();
      ++written;
    }
    const std::uint64_t end = end_marker;
    put(&end, sizeof end);
    const std::uint32_t sum = crc;
    put(&sum, sizeof sum);
    out.flush();
    if (!out)
      throw std::runtime_error("seedrl::replay::sequence_replay: writing the replay failed");
    return written;
  }

  /// Restores what `save` wrote into this replay, which must be empty (nothing inserted or
  /// sampled yet: std::logic_error otherwise). The sequences go back with their ids and
  /// priorities; the next insert takes the id after the saved ones; the rate limiter continues
  /// from the saved counters. Throws std::runtime_error, leaving the replay empty, for a stream
  /// of another format, observation or scalar type, shape or capacity (naming both), a
  /// truncated stream or a checksum mismatch. Returns the sequences restored.
  std::size_t load(std::istream& in) {
    const auto fail = [](const std::string& what) {
      throw std::runtime_error("seedrl::replay::sequence_replay: cannot restore the replay: " +
                               what);
    };
    {
      std::lock_guard lock(mutex_);
      if (next_id_ != 0 || limiter_.samples() != 0)
        throw std::logic_error(
            "seedrl::replay::sequence_replay::load: the replay has been used already");
    }
    std::uint32_t crc = 0;
    const auto get = [&](void* data, std::size_t bytes) {
      in.read(static_cast<char*>(data), static_cast<std::streamsize>(bytes));
      if (static_cast<std::size_t>(in.gcount()) != bytes)
        fail("the file ends early (truncated?)");
      crc = detail::crc32c(std::span<const std::byte>(static_cast<const std::byte*>(data), bytes),
                           crc);
    };
    file_header h{};
    get(&h, sizeof h);
    const file_header want = header();
    if (std::memcmp(h.magic, want.magic, sizeof h.magic) != 0 || h.version != want.version ||
        h.byte_order != want.byte_order)
      fail("not a seedrl replay file of format version " + std::to_string(want.version) +
           " written on a machine of this byte order");
    const auto describe = [](const file_header& x) {
      return std::to_string(x.capacity) + " sequences of " + std::to_string(x.steps) +
             " steps, observations of " + std::to_string(x.observation_size) + " values of " +
             std::to_string(x.observation_bytes) +
             (x.observation_integral ? "-byte integers" : "-byte floats") + ", states of " +
             std::to_string(x.state_width) + " values (" + std::to_string(x.state_frame_values) +
             " frames), " + std::to_string(x.scalar_bytes) + "-byte scalars";
    };
    if (h.observation_bytes != want.observation_bytes ||
        h.observation_integral != want.observation_integral ||
        h.scalar_bytes != want.scalar_bytes || h.steps != want.steps ||
        h.observation_size != want.observation_size || h.state_width != want.state_width ||
        h.state_frame_values != want.state_frame_values || h.capacity != want.capacity)
      fail("it holds " + describe(h) + "; this replay holds " + describe(want) +
           " (resume with the replay settings and network it was saved with)");
    if (!(h.max_priority > 0.0) || !std::isfinite(h.max_priority))
      fail("its largest priority is " + std::to_string(h.max_priority));
    std::unique_lock lock(mutex_);
    const auto clear = [&] {
      for (std::size_t slot = 0; slot < capacity_; ++slot) {
        slots_[slot] = slot_state{};
        tree_.set(slot, 0.0);
      }
      size_ = 0;
    };
    std::size_t restored = 0;
    try {
      for (;;) {
        std::uint64_t id = 0;
        get(&id, sizeof id);
        if (id == end_marker)
          break;
        double priority = 0.0;
        get(&priority, sizeof priority);
        if (id >= h.next_id || h.next_id - id > capacity_ || !(priority > 0.0) ||
            !std::isfinite(priority))
          fail("sequence " + std::to_string(id) + " (priority " + std::to_string(priority) +
               ") cannot be one of the ids below " + std::to_string(h.next_id) +
               " that the replay held (corrupt?)");
        const std::size_t slot = static_cast<std::size_t>(id % capacity_);
        if (slots_[slot].stored)
          fail("sequence " + std::to_string(id) + " appears twice (corrupt?)");
        for_each_array(slot, [&](auto* data, std::size_t n) { get(data, n * sizeof *data); });
        for (std::size_t t = 0; t < shape_.steps; ++t)
          if (flags_[slot * shape_.steps + t] > 3)
            fail("sequence " + std::to_string(id) + " has step flags " +
                 std::to_string(flags_[slot * shape_.steps + t]) + " (corrupt?)");
        slot_state& st = slots_[slot];
        st.stored = true;
        st.id = id;
        st.priority = priority;
        tree_.set(slot, std::pow(priority, config_.priority_exponent));
        ++size_;
        ++restored;
      }
      const std::uint32_t sum = crc;
      std::uint32_t saved = 0;
      get(&saved, sizeof saved);
      if (saved != sum)
        fail("its checksum does not match its contents (corrupt)");
    } catch (...) {
      clear();
      throw;
    }
    next_id_ = h.next_id;
    next_ = static_cast<std::size_t>(next_id_ % capacity_);
    max_priority_ = h.max_priority;
    limiter_.restore(h.inserts, h.samples);
    changed_.notify_all();
    return restored;
  }

  /// Wakes every waiting insert and sample; from now on they return at once.
  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    changed_.notify_all();
  }

  replay_stats stats() const {
    std::lock_guard lock(mutex_);
    replay_stats s;
    s.size = size_;
    s.capacity = capacity_;
    s.inserted = limiter_.inserts();
    s.sampled = limiter_.samples();
    s.bytes_per_sequence = bytes_per_sequence();
    s.bytes_stored = size_ * s.bytes_per_sequence;
    double sum = 0.0;
    for (const slot_state& st : slots_)
      if (st.stored)
        sum += st.priority;
    s.mean_priority = size_ > 0 ? sum / static_cast<double>(size_) : 0.0;
    return s;
  }

 private:
  struct slot_state {
    std::uint64_t id = 0;
    double priority = 0.0;  // before the exponent
    std::uint32_t readers = 0;
    bool stored = false;
    bool writing = false;
  };

  /// The fixed part of a saved replay (native byte order; `byte_order` tells another).
  struct file_header {
    char magic[8];
    std::uint32_t version;
    std::uint32_t byte_order;
    std::uint32_t observation_bytes;
    std::uint32_t observation_integral;
    std::uint32_t scalar_bytes;
    std::uint32_t reserved;
    std::uint64_t steps, observation_size, state_width, state_frame_values, capacity;
    std::uint64_t next_id, inserts, samples;
    double max_priority;
  };
  static constexpr std::uint64_t end_marker = std::numeric_limits<std::uint64_t>::max();

  /// This replay's header, without the counters.
  file_header header() const {
    file_header h{};
    std::memcpy(h.magic, "SEEDRLRP", sizeof h.magic);
    h.version = 1;
    h.byte_order = 0x01020304;
    h.observation_bytes = sizeof(Obs);
    h.observation_integral = std::is_integral_v<Obs> ? 1 : 0;
    h.scalar_bytes = sizeof(S);
    h.steps = shape_.steps;
    h.observation_size = shape_.observation_size;
    h.state_width = shape_.state_width;
    h.state_frame_values = shape_.state_frame_values;
    h.capacity = capacity_;
    return h;
  }

  /// Calls f(pointer, count) on each of a slot's stored arrays, in the saved order.
  template <class F>
  void for_each_array(std::size_t slot, F&& f) {
    const std::size_t T1 = shape_.steps, O = shape_.observation_size,
                      F_ = shape_.state_frame_values, W = shape_.state_width;
    f(observations_.get() + slot * T1 * O, T1 * O);
    f(state_frames_.get() + slot * F_, F_);
    f(state_rest_.get() + slot * (W - F_), W - F_);
    f(rewards_.get() + slot * T1, T1);
    f(flags_.get() + slot * T1, T1);
    f(prev_actions_.get() + slot * T1, T1);
    f(actions_.get() + slot * T1, T1);
  }

  static std::string gib(double bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", bytes / 1073741824.0);
    return text;
  }

  void check(const sequence_view<S>& seq) const {
    const std::size_t T1 = shape_.steps;
    const auto size = [&](std::size_t got, std::size_t want, const char* name) {
      if (got != want)
        throw std::invalid_argument("seedrl::replay::sequence_replay: " + std::string(name) +
                                    " holds " + std::to_string(got) + " values, expected " +
                                    std::to_string(want));
    };
    size(seq.observations.size(), T1 * shape_.observation_size, "observations");
    size(seq.rewards.size(), T1, "rewards");
    size(seq.dones.size(), T1, "dones");
    size(seq.truncated.size(), T1, "truncated");
    size(seq.prev_actions.size(), T1, "prev_actions");
    size(seq.actions.size(), T1, "actions");
    size(seq.start_state.size(), shape_.state_width, "start_state");
  }

  /// `from` as Obs into `to`, or throws (naming the first value) when Obs cannot hold one
  /// exactly. Branch-free per value (a clamp into Obs's range, so that an out-of-range or NaN
  /// value converts without undefined behaviour, through int32, then a compare), so that it
  /// vectorises. Obs is an integer type of at most 16 bits here (uint8 frames).
  SEEDRL_VECTORIZE_SELECTS static void narrow(std::span<const S> from, Obs* to, const char* what) {
    if constexpr (std::is_same_v<Obs, S>) {
      std::copy(from.begin(), from.end(), to);
    } else {
      static_assert(std::is_integral_v<Obs> && sizeof(Obs) <= 2,
                    "seedrl::replay::sequence_replay: stored observations are S or small integers");
      constexpr S lo = static_cast<S>(std::numeric_limits<Obs>::lowest());
      constexpr S hi = static_cast<S>(std::numeric_limits<Obs>::max());
      const S* x = from.data();
      const std::size_t n = from.size();
      unsigned inexact = 0;
      for (std::size_t i = 0; i < n; ++i) {
        S c = x[i] > lo ? x[i] : lo;  // NaN: lo, then reported below
        c = c < hi ? c : hi;
        const auto k = static_cast<std::int32_t>(c);
        inexact |= static_cast<unsigned>(static_cast<S>(k) != x[i]);
        to[i] = static_cast<Obs>(k);
      }
      if (inexact != 0) {
        for (std::size_t i = 0; i < n; ++i) {
          S c = x[i] > lo ? x[i] : lo;
          c = c < hi ? c : hi;
          if (static_cast<S>(static_cast<std::int32_t>(c)) != x[i])
            throw std::invalid_argument(
                std::string("seedrl::replay::sequence_replay: ") + what + " value " +
                std::to_string(i) + " is " + std::to_string(x[i]) +
                ", which the replay's observation type cannot hold exactly");
        }
      }
    }
  }

  void write(std::size_t slot, const sequence_view<S>& seq) {
    const std::size_t T1 = shape_.steps, O = shape_.observation_size, F = shape_.state_frame_values,
                      W = shape_.state_width;
    narrow(seq.observations, observations_.get() + slot * T1 * O, "observation");
    narrow(seq.start_state.first(F), state_frames_.get() + slot * F, "state frame");
    std::copy_n(seq.start_state.begin() + static_cast<std::ptrdiff_t>(F), W - F,
                state_rest_.get() + slot * (W - F));
    std::copy_n(seq.rewards.begin(), T1, rewards_.get() + slot * T1);
    for (std::size_t t = 0; t < T1; ++t)
      flags_[slot * T1 + t] =
          static_cast<std::uint8_t>((seq.dones[t] != 0 ? 1 : 0) | (seq.truncated[t] != 0 ? 2 : 0));
    std::copy_n(seq.prev_actions.begin(), T1, prev_actions_.get() + slot * T1);
    std::copy_n(seq.actions.begin(), T1, actions_.get() + slot * T1);
  }

  void read(std::span<const std::size_t> drawn, sampled_sequences<S>& out) const {
    const std::size_t T1 = shape_.steps, O = shape_.observation_size, F = shape_.state_frame_values,
                      W = shape_.state_width, B = drawn.size();
    out.T = T1 - 1;
    out.B = B;
    out.observations.resize(T1 * B * O);
    out.rewards.resize(T1 * B);
    out.behaviour_log_probs.assign(T1 * B, S(0));
    out.start_state.resize(B * W);
    out.dones.resize(T1 * B);
    out.truncated.resize(T1 * B);
    out.prev_actions.resize(T1 * B);
    out.actions.resize(T1 * B);
    for (std::size_t b = 0; b < B; ++b) {
      const std::size_t slot = drawn[b];
      std::transform(state_frames_.get() + slot * F, state_frames_.get() + (slot + 1) * F,
                     out.start_state.begin() + static_cast<std::ptrdiff_t>(b * W),
                     [](Obs x) { return static_cast<S>(x); });
      std::copy_n(state_rest_.get() + slot * (W - F), W - F,
                  out.start_state.begin() + static_cast<std::ptrdiff_t>(b * W + F));
      for (std::size_t t = 0; t < T1; ++t) {
        const std::size_t from = slot * T1 + t, to = t * B + b;
        const Obs* o = observations_.get() + from * O;
        std::transform(o, o + O, out.observations.begin() + static_cast<std::ptrdiff_t>(to * O),
                       [](Obs x) { return static_cast<S>(x); });
        out.rewards[to] = rewards_[from];
        out.dones[to] = flags_[from] & 1;
        out.truncated[to] = (flags_[from] >> 1) & 1;
        out.prev_actions[to] = prev_actions_[from];
        out.actions[to] = actions_[from];
      }
    }
  }

  sequence_replay_config config_;
  sequence_shape shape_;
  std::size_t batch_;
  std::size_t capacity_ = 0;
  rate_limiter limiter_;
  sum_tree tree_;
  std::unique_ptr<Obs[]> observations_, state_frames_;
  std::unique_ptr<S[]> state_rest_, rewards_;
  std::unique_ptr<std::uint8_t[]> flags_;  // bit 0 done, bit 1 truncated
  std::unique_ptr<std::int32_t[]> prev_actions_, actions_;
  std::vector<slot_state> slots_;
  std::size_t next_ = 0;  // the slot the next insert writes
  std::size_t size_ = 0;  // slots stored (not being written)
  std::uint64_t next_id_ = 0;
  double max_priority_ = 1.0;
  bool closed_ = false;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
};

}  // namespace seedrl::replay
