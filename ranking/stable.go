package ranking

import "time"

// Merged says how an apply took a room's stable step (the sink's ApplyMerge).
type Merged struct {
	// Done: the room's state was merged before the apply, and the apply's
	// script stored the update (if any) under the same compare-and-set as
	// StoreStable. Otherwise the caller merges the returned state and
	// stores it with StoreStable, as after Apply.
	Done bool
	// Update is what was stored; nil when the merge changed nothing.
	Update *StableUpdate
}

// StableUpdate is a new stable list to store if the room's seq is still
// PrevSeq, its ranking still at Version and its hysteresis state still
// PrevState (all as read by Apply or Read). Out is the output record to
// publish; it is kept as pending until acknowledged.
type StableUpdate struct {
	Room    string
	PrevSeq int64
	Version int64
	List    []string
	Out     []byte

	PrevState string // hysteresis state as read
	State     string // new hysteresis state; "" for none
	// StateOnly stores State alone: the list is unchanged, so the seq stays
	// and nothing is published (List and Out are ignored).
	StateOnly bool
	// Due, when not 0, is the Unix ms at which the room must be stepped
	// again without events; the room is entered in the environment's due
	// set at that time or earlier (see DueRoom).
	Due int64
}

// StableStep is the processor's stable step: it computes a room's next
// stable list (and hysteresis state) from the room's state right after an
// apply. Step returns the update to store, and false when the list and the
// hysteresis state stay as they are. The sink calls it, for the rooms of
// its state cache, with the state the apply will leave, so that one script
// stores the apply and its stable update together.
type StableStep interface {
	Step(st *RoomState) (StableUpdate, bool, error)
}

// StepFunc adapts a function to a StableStep (for tests and tools).
type StepFunc func(st *RoomState) (StableUpdate, bool, error)

// Step calls f(st).
func (f StepFunc) Step(st *RoomState) (StableUpdate, bool, error) { return f(st) }

// PublishedList is a room's last published stable list, used to restore the
// stable state after Redis lost it, so seq keeps growing and tiles keep
// their slots.
type PublishedList struct {
	Room string
	Seq  int64
	List []string
	// State is the stable state stored with the list: the flags of its
	// members as that output showed them (stability.State text), so that
	// only a later change of them republishes; "" for none.
	State string
}

// DueRoom is a room of the due set with its deadline.
type DueRoom struct {
	Room string
	At   int64 // Unix ms
}

// DuePeek is the due set's earliest deadline as an Apply saw it.
type DuePeek struct {
	At   int64     // earliest deadline, Unix ms; 0: the due set was empty
	Seen time.Time // when the Apply read it
}
