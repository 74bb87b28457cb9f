#include "comm/internal/shm_layout.h"

#include <algorithm>

namespace cohort::comm::internal {

size_t ShmSliceBegin(size_t count, int size, int slice) {
  // count * slice may overflow 64 bits only for absurd counts; split to stay exact anyway.
  const size_t n = static_cast<size_t>(size), s = static_cast<size_t>(slice);
  return (count / n) * s + (count % n) * s / n;
}

ShmLayout::ShmLayout(size_t count, int size, size_t piece_elems)
    : count_(count), size_(size), piece_elems_(std::max<size_t>(piece_elems, 1)) {
  size_t longest = 0;
  for (int j = 0; j < size_; ++j) {
    longest = std::max(longest, ShmSliceBegin(count_, size_, j + 1) - ShmSliceBegin(count_, size_, j));
  }
  rounds_ = (longest + piece_elems_ - 1) / piece_elems_;
}

ShmLayout::Piece ShmLayout::At(size_t round, int slice) const {
  const size_t begin = ShmSliceBegin(count_, size_, slice);
  const size_t end = ShmSliceBegin(count_, size_, slice + 1);
  const size_t offset = std::min(end - begin, round * piece_elems_);
  return {begin + offset, std::min(piece_elems_, end - begin - offset)};
}

size_t ShmPieceElems(size_t slot_bytes, int size, size_t elem_size) {
  size_t piece_bytes = slot_bytes / static_cast<size_t>(size);
  if (piece_bytes >= 64) piece_bytes -= piece_bytes % 64;
  return std::max<size_t>(piece_bytes / elem_size, 1);
}

}  // namespace cohort::comm::internal
