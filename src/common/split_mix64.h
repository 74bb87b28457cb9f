#pragma once
// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", 2014): the
// small seeded generator behind Cohort's reproducible choices (hyperparameter samples, trial
// seeds, data order, per-batch seeds). Its output is fixed by the seed on every platform, unlike
// the standard library's distributions. Thread-compatible (one generator per thread).
//
// Example:
//   SplitMix64 rng(seed);
//   uint64_t pick = rng.Below(n);  // uniform in [0, n)

#include <cstdint>

namespace cohort {

// SplitMix64's finalizer: a bijective 64-bit mix (Mix64(1) == 0x5692161d100b05e5).
inline uint64_t Mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class SplitMix64 {
 public:
  static constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ull;

  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t Next() { return Mix64(state_ += kGamma); }

  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // Uniform in [0, bound), unbiased (Lemire, "Fast random integer generation in an interval").
  uint64_t Below(uint64_t bound) {
    unsigned __int128 m = static_cast<unsigned __int128>(Next()) * bound;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < bound) {
      const uint64_t threshold = -bound % bound;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(Next()) * bound;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

 private:
  uint64_t state_;
};

}  // namespace cohort
