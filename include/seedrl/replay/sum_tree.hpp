#pragma once
/// \file
/// `sum_tree`: the priorities of a prioritized replay (R2D2, issue 31), so that drawing an item
/// with probability proportional to its priority, and changing one priority, each cost
/// O(log n) instead of a scan. A complete binary tree over a power-of-two number of leaves in
/// one array: node k holds the sum of its children 2k and 2k+1, the leaves sit at
/// [leaves, 2 leaves). A change recomputes the sums on the leaf's path from the children (not
/// by adding a difference), so rounding never accumulates however often priorities change.
///
/// A priority must be finite and non-negative: a NaN would turn every sum above it into NaN and
/// make sampling meaningless, so it is refused with an error naming the item.

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace seedrl::replay {

/// See the file comment.
class sum_tree {
 public:
  /// Room for `capacity` items (at least one), all at priority 0.
  explicit sum_tree(std::size_t capacity) : capacity_(capacity) {
    if (capacity == 0)
      throw std::invalid_argument("seedrl::replay::sum_tree: capacity must be at least 1");
    while (leaves_ < capacity)
      leaves_ *= 2;
    nodes_.assign(2 * leaves_, 0.0);
  }

  /// Items it holds.
  std::size_t capacity() const noexcept { return capacity_; }

  /// Sets item `i`'s priority. Throws std::out_of_range for i >= capacity() and
  /// std::invalid_argument, naming the item, for a priority that is NaN, infinite or negative;
  /// the tree is unchanged then.
  void set(std::size_t i, double priority) {
    if (i >= capacity_)
      throw std::out_of_range("seedrl::replay::sum_tree: item " + std::to_string(i) +
                              " of a tree of " + std::to_string(capacity_));
    if (!std::isfinite(priority) || priority < 0.0)
      throw std::invalid_argument("seedrl::replay::sum_tree: item " + std::to_string(i) +
                                  " was given priority " + std::to_string(priority) +
                                  "; priorities must be finite and non-negative");
    std::size_t k = leaves_ + i;
    nodes_[k] = priority;
    for (k /= 2; k >= 1; k /= 2)
      nodes_[k] = nodes_[2 * k] + nodes_[2 * k + 1];
  }

  /// Item `i`'s priority.
  double get(std::size_t i) const { return nodes_.at(leaves_ + i); }

  /// The sum of all priorities.
  double total() const noexcept { return nodes_[1]; }

  /// The item whose cumulative range [sum of priorities before it, that + its priority)
  /// contains `u`: with u uniform in [0, total()), item i comes with probability
  /// priority(i) / total(). A u at or past the total (rounding) gives the last item of
  /// non-zero priority; an item of priority 0 is never returned while another is not 0.
  /// Throws std::logic_error when every priority is 0 (nothing can be drawn).
  std::size_t find(double u) const {
    if (!(total() > 0.0))
      throw std::logic_error("seedrl::replay::sum_tree: nothing to draw, every priority is 0");
    std::size_t k = 1;
    while (k < leaves_) {
      const double left = nodes_[2 * k];
      // Go right when u is past the left subtree, or when the left one is empty (u may sit on
      // a boundary after rounding).
      if (u >= left && nodes_[2 * k + 1] > 0.0) {
        u -= left;
        k = 2 * k + 1;
      } else if (left > 0.0) {
        k = 2 * k;
      } else {
        k = 2 * k + 1;
      }
    }
    return k - leaves_;
  }

 private:
  std::size_t capacity_;
  std::size_t leaves_ = 1;
  std::vector<double> nodes_;  // [0] unused
};

}  // namespace seedrl::replay
