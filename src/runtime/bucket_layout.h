#pragma once
// AssignBuckets: how gradients are grouped into fusion buckets (docs/architecture.md §5). Pure
// arithmetic on sizes, no LibTorch, so the policy is unit-tested on its own.
// Thread-safe (a pure function).
//
// Tensors are visited in `order` (the order their gradients are expected to become ready:
// reverse parameter order at first, then the order observed in a real backward pass). Each
// dtype has one open bucket; a tensor joins the open bucket of its dtype, and the bucket closes
// once it holds at least its limit: `first_bucket_bytes` for a dtype's first bucket (small, so
// communication starts early), `bucket_bytes` afterwards. A tensor larger than the limit gets a
// bucket of its own (tensors are never split). Buckets come out in the order their first
// tensor appears in `order`, which is the order every rank reduces them in.
//
// Example:
//   // three fp32 tensors of 3, 2 and 1 MiB, ready in reverse order, 1 MiB first bucket, 4 MiB:
//   AssignBuckets({3 << 20, 2 << 20, 1 << 20}, {0, 0, 0}, {2, 1, 0}, 1 << 20, 4 << 20)
//     == {{2}, {1, 0}}

#include <cstddef>
#include <vector>

namespace cohort::runtime {

// bytes[i] and dtype_keys[i] describe tensor i; `order` is a permutation of 0..n-1.
// A limit of 0 puts every tensor in a bucket of its own.
std::vector<std::vector<int>> AssignBuckets(const std::vector<size_t>& bytes,
                                            const std::vector<int>& dtype_keys,
                                            const std::vector<int>& order,
                                            size_t first_bucket_bytes, size_t bucket_bytes);

}  // namespace cohort::runtime
