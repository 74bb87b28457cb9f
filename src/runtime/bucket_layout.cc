#include "runtime/bucket_layout.h"

#include <algorithm>
#include <map>
#include <utility>

namespace cohort::runtime {

std::vector<std::vector<int>> AssignBuckets(const std::vector<size_t>& bytes,
                                            const std::vector<int>& dtype_keys,
                                            const std::vector<int>& order,
                                            size_t first_bucket_bytes, size_t bucket_bytes) {
  struct Open {
    std::vector<int> tensors;
    size_t bytes = 0;
    bool closed_one = false;  // a first bucket of this dtype was already closed
  };
  std::map<int, Open> open;
  std::vector<std::vector<int>> buckets;
  // Buckets are emitted when they close; the position of their first tensor in `order` keeps
  // the output in ready order even when dtypes interleave.
  std::vector<std::pair<size_t, std::vector<int>>> closed;
  std::vector<size_t> position(bytes.size());
  for (size_t k = 0; k < order.size(); ++k) position[order[k]] = k;

  auto close = [&](Open& bucket) {
    closed.emplace_back(position[bucket.tensors.front()], std::move(bucket.tensors));
    bucket.tensors.clear();
    bucket.bytes = 0;
    bucket.closed_one = true;
  };
  for (int t : order) {
    Open& bucket = open[dtype_keys[t]];
    bucket.tensors.push_back(t);
    bucket.bytes += bytes[t];
    const size_t limit = bucket.closed_one ? bucket_bytes : first_bucket_bytes;
    if (bucket.bytes >= limit) close(bucket);
  }
  for (auto& [key, bucket] : open) {
    if (!bucket.tensors.empty()) close(bucket);
  }
  std::sort(closed.begin(), closed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  buckets.reserve(closed.size());
  for (auto& [pos, tensors] : closed) buckets.push_back(std::move(tensors));
  return buckets;
}

}  // namespace cohort::runtime
