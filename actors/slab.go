package actors

import "math"

// A parked account is a resident account without an actor: its actor,
// idle for Config.ParkAfter with its state durably stored, handed that
// state to its registry shard's slab and stopped (see
// accountActor.tryPark). The next message for the account spawns an actor
// that takes the state back instead of loading it (registry.send).
//
// Everything a slab holds is free of pointers: fixed-size slots of
// integers, a map from the account's hash to a slot, the accounts' names
// (and fencing tokens) in one byte arena, and the window rings in pools
// of uint32 offsets. The collector does not walk such memory, so a parked
// account costs a collection close to nothing, however many there are.
// A slab is guarded by its shard's lock.
type slab struct {
	index map[uint64]uint32 // account hash → first slot of that hash, plus 1
	slots []parkSlot
	free  []uint32 // indexes of unused slots
	n     int      // slots in use
	// arena holds each slot's account name followed by its fence; the
	// bytes of freed slots are garbage until the arena is compacted.
	arena   []byte
	garbage int
	rings   [ringClasses]ringPool
}

// parkSlot is one parked account. It must hold no pointer.
type parkSlot struct {
	hash     uint64
	next     uint32 // next slot with the same hash, plus 1; 0: none
	nameOff  uint32 // in the arena; the fence follows the name
	nameLen  uint16
	fenceLen uint16
	live     bool
	hasFence bool // the actor carried a fence (possibly empty)
	hasDone  bool // done jobs are stored, not loaded (accountActor.doneStored)
	ruleTag  uint8
	class    uint8  // ring storage: 0 inline, else the pool class plus 1
	ringN    uint32 // entries of the window's ring
	ringAt   uint32 // start of the ring's chunk in its pool (class > 0)
	winLimit uint32
	inline   [smallRing]uint32

	winBase     int64
	nextID      uint64
	hold        int64
	rebuilt     int64
	durableHold int64
	seq         uint64
	snapSeq     uint64
	sinceSnap   int64
	served      int64
	lastUsed    int64
	nextJob     uint64
	retryAt     int64
}

// parked is a parked account's state on its way between an actor and a
// slab: made when the actor stops or the next one starts, never kept.
type parked struct {
	slot  parkSlot // its fixed part (hash, next, name and ring fields unused)
	ring  []uint32 // the window's offsets from slot.winBase, oldest first
	fence []byte
}

// Which ruleSet a parked ledger enforced: the engine's, or its current
// rule alone (see ruleSet.at). A ledger enforcing another subset does
// not park.
const (
	ruleTagAll uint8 = iota
	ruleTagSole
)

// ringClasses are the chunk sizes of the ring pools: 8, 16, 32, ... up to
// 8<<(ringClasses-1) entries, which holds any ring (Config.Limit is at
// most 65536). Rings of up to smallRing entries are held in the slot.
const ringClasses = 15

func ringClassSize(c int) int { return 8 << c }

// ringPool is the chunks of one size class, side by side.
type ringPool struct {
	buf  []uint32
	free []uint32 // starts of unused chunks
}

// ringClassFor returns the pool class of a ring of n entries, or -1 when
// it fits inline.
func ringClassFor(n int) int {
	if n <= smallRing {
		return -1
	}
	c := 0
	for ringClassSize(c) < n {
		c++
	}
	return c
}

// maxParkName is the longest account name plus fence a slot holds.
const maxParkName = math.MaxUint16

func (s *slab) init() { s.index = make(map[uint64]uint32) }

// find returns the slot of account, whose hash is h, or -1.
func (s *slab) find(account string, h uint64) int {
	for i := s.index[h]; i != 0; i = s.slots[i-1].next {
		sl := &s.slots[i-1]
		if int(sl.nameLen) == len(account) && string(s.arena[sl.nameOff:sl.nameOff+uint32(sl.nameLen)]) == account {
			return int(i - 1)
		}
	}
	return -1
}

// name returns the account of slot i, as a string of its own.
func (s *slab) name(i int) string {
	sl := &s.slots[i]
	return string(s.arena[sl.nameOff : sl.nameOff+uint32(sl.nameLen)])
}

// put parks p as account, whose hash is h; account must not be parked.
func (s *slab) put(account string, h uint64, p *parked) {
	var i uint32
	if k := len(s.free); k > 0 {
		i = s.free[k-1]
		s.free = s.free[:k-1]
	} else {
		s.slots = append(s.slots, parkSlot{})
		i = uint32(len(s.slots) - 1)
	}
	sl := &s.slots[i]
	*sl = p.slot
	sl.hash = h
	sl.live = true
	sl.nameOff = uint32(len(s.arena))
	sl.nameLen = uint16(len(account))
	sl.fenceLen = uint16(len(p.fence))
	s.arena = append(s.arena, account...)
	s.arena = append(s.arena, p.fence...)
	sl.ringN = uint32(len(p.ring))
	sl.inline = [smallRing]uint32{}
	if c := ringClassFor(len(p.ring)); c < 0 {
		sl.class = 0
		copy(sl.inline[:], p.ring)
	} else {
		sl.class = uint8(c + 1)
		sl.ringAt = s.rings[c].take(ringClassSize(c))
		copy(s.rings[c].buf[sl.ringAt:], p.ring)
	}
	sl.next = s.index[h]
	s.index[h] = i + 1
	s.n++
}

// get returns a copy of slot i's state.
func (s *slab) get(i int) *parked {
	sl := &s.slots[i]
	p := &parked{slot: *sl, ring: make([]uint32, sl.ringN)}
	if sl.class == 0 {
		copy(p.ring, sl.inline[:sl.ringN])
	} else {
		copy(p.ring, s.rings[sl.class-1].buf[sl.ringAt:sl.ringAt+sl.ringN])
	}
	if sl.hasFence {
		at := sl.nameOff + uint32(sl.nameLen)
		p.fence = append([]byte{}, s.arena[at:at+uint32(sl.fenceLen)]...)
	}
	return p
}

// take returns account's parked state, h its hash, and forgets it; nil
// when it is not parked.
func (s *slab) take(account string, h uint64) *parked {
	i := s.find(account, h)
	if i < 0 {
		return nil
	}
	p := s.get(i)
	s.remove(i)
	return p
}

// remove forgets slot i.
func (s *slab) remove(i int) {
	sl := &s.slots[i]
	// Unlink it from its hash's chain.
	h := sl.hash
	if s.index[h] == uint32(i+1) {
		if sl.next == 0 {
			delete(s.index, h)
		} else {
			s.index[h] = sl.next
		}
	} else {
		for j := s.index[h]; j != 0; j = s.slots[j-1].next {
			if s.slots[j-1].next == uint32(i+1) {
				s.slots[j-1].next = sl.next
				break
			}
		}
	}
	if sl.class > 0 {
		c := int(sl.class - 1)
		s.rings[c].free = append(s.rings[c].free, sl.ringAt)
	}
	s.garbage += int(sl.nameLen) + int(sl.fenceLen)
	*sl = parkSlot{}
	s.free = append(s.free, uint32(i))
	s.n--
	if s.n == 0 {
		// Give everything back: an emptied shard keeps nothing.
		*s = slab{index: s.index}
		clear(s.index)
		return
	}
	if s.garbage > 4096 && s.garbage > len(s.arena)/2 {
		s.compact()
	}
}

// compact rewrites the arena with the live slots' bytes only.
func (s *slab) compact() {
	arena := make([]byte, 0, len(s.arena)-s.garbage)
	for i := range s.slots {
		sl := &s.slots[i]
		if !sl.live {
			continue
		}
		k := uint32(sl.nameLen) + uint32(sl.fenceLen)
		off := uint32(len(arena))
		arena = append(arena, s.arena[sl.nameOff:sl.nameOff+k]...)
		sl.nameOff = off
	}
	s.arena, s.garbage = arena, 0
}

// take returns the start of an unused chunk of size entries.
func (rp *ringPool) take(size int) uint32 {
	if k := len(rp.free); k > 0 {
		at := rp.free[k-1]
		rp.free = rp.free[:k-1]
		return at
	}
	at := uint32(len(rp.buf))
	rp.buf = append(rp.buf, make([]uint32, size)...)
	return at
}
