#pragma once
/// \file
/// Small metaprogramming helpers for diagnostics.

namespace seedrl::detail {

/// Always false, but only once `T` is known: lets a primary template `static_assert` with a
/// message that names the fix, instead of failing at the point of definition.
template <class...>
inline constexpr bool dependent_false = false;

}  // namespace seedrl::detail
