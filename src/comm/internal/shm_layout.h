#pragma once
// ShmLayout: how ShmCommunicator's pipelined collectives cut a buffer into pieces that fit the
// per-rank staging slots of the shared segment. Pure arithmetic; thread-safe.
//
// The buffer of `count` elements is split into `size` contiguous slices (rank j owns slice j,
// [SliceBegin(count, size, j), SliceBegin(count, size, j + 1)), the split ReduceScatter
// promises). Each slice is walked in pieces of at most `piece_elems` elements; round k handles
// piece k of every slice at once, so one round moves at most size * piece_elems elements through
// the segment. Rounds() covers the longest slice; in later rounds short slices have empty
// pieces.
//
// Example (count 10, size 3, piece 2): slices [0,3) [3,6) [6,10); round 0 pieces [0,2) [3,5)
// [6,8); round 1 pieces [2,3) [5,6) [8,10).

#include <cstddef>

namespace cohort::comm::internal {

// count * slice / size without overflow for any count that fits in memory.
size_t ShmSliceBegin(size_t count, int size, int slice);

class ShmLayout {
 public:
  // piece_elems >= 1, size >= 1.
  ShmLayout(size_t count, int size, size_t piece_elems);

  size_t rounds() const { return rounds_; }
  size_t piece_elems() const { return piece_elems_; }

  struct Piece {
    size_t begin;  // element offset in the buffer
    size_t count;  // may be 0
  };
  // Rank `slice`'s piece in `round` (round < rounds()).
  Piece At(size_t round, int slice) const;

 private:
  size_t count_;
  int size_;
  size_t piece_elems_;
  size_t rounds_ = 0;
};

// Elements per piece for a slot of `slot_bytes` shared by `size` ranks: a multiple of 64 bytes
// (whole cache lines, so ranks writing neighbouring pieces never share a line) when the slot
// allows, and at least 1.
size_t ShmPieceElems(size_t slot_bytes, int size, size_t elem_size);

}  // namespace cohort::comm::internal
